"""``load_resources``: skills and prompt templates in one AgentHarnessResources."""

from __future__ import annotations

import os
from collections.abc import Iterable

from harnessc.runtime.resources.skills import load_skills
from harnessc.runtime.resources.templates import load_prompt_templates
from harnessc.runtime.resources.types import AgentHarnessResources

__all__ = ["load_resources"]

PathLike = str | os.PathLike[str]


def _paths(value: Iterable[PathLike] | PathLike | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str | os.PathLike):
        return [os.path.abspath(os.fspath(value))]
    return [os.path.abspath(os.fspath(v)) for v in value]


def load_resources(
    skills: Iterable[PathLike] | PathLike | None = None,
    prompt_templates: Iterable[PathLike] | PathLike | None = None,
) -> AgentHarnessResources:
    """Load both kinds; diagnostics of both are merged. Never raises."""
    skill_dirs = _paths(skills)
    template_dirs = _paths(prompt_templates)
    skill_items, skill_diags = load_skills(skill_dirs)
    templates, template_diags = load_prompt_templates(template_dirs)
    return AgentHarnessResources(
        prompt_templates=templates,
        skills=skill_items,
        diagnostics=skill_diags + template_diags,
        skill_dirs=skill_dirs,
        template_dirs=template_dirs,
    )

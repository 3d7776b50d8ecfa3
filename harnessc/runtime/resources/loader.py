"""``load_resources``: skills, prompt templates and context files in one AgentHarnessResources."""

from __future__ import annotations

import os
from collections.abc import Iterable

from harnessc.runtime.resources.context_files import load_context_files
from harnessc.runtime.resources.types import (
    AgentHarnessResources,
    ContextFileSettings,
    PromptTemplate,
    ResourceDiagnostic,
    Skill,
)

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
    *,
    context_files: ContextFileSettings | None = None,
    cwd: PathLike | None = None,
) -> AgentHarnessResources:
    """Load every kind; diagnostics are merged. Never raises.

    ``context_files``: read the project's context files for ``cwd`` (default: the
    process's working directory); None reads none.
    """
    skill_dirs = _paths(skills)
    template_dirs = _paths(prompt_templates)
    # imported only when asked for: an agent with context files only stays light
    skill_items: list[Skill] = []
    skill_diags: list[ResourceDiagnostic] = []
    templates: list[PromptTemplate] = []
    template_diags: list[ResourceDiagnostic] = []
    if skill_dirs:
        from harnessc.runtime.resources.skills import load_skills

        skill_items, skill_diags = load_skills(skill_dirs)
    if template_dirs:
        from harnessc.runtime.resources.templates import load_prompt_templates

        templates, template_diags = load_prompt_templates(template_dirs)
    folder = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
    files, context_diags = (
        load_context_files(context_files, folder) if context_files is not None else ([], [])
    )
    return AgentHarnessResources(
        prompt_templates=templates,
        skills=skill_items,
        diagnostics=skill_diags + template_diags + context_diags,
        skill_dirs=skill_dirs,
        template_dirs=template_dirs,
        context_files=files,
        context_settings=context_files,
        cwd=folder if context_files is not None else None,
    )

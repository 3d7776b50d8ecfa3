"""The skills, prompt templates and context files a durable run started with, as a step's JSON output.

The workflow records them in a step before its first model call; an execution that
recovers the run gets them back from that record, so a skill or template edited on disk
in between changes neither the system prompt nor a ``/template`` expansion of the run.
"""

from __future__ import annotations

from typing import Any

import msgspec

from harnessc.runtime.resources.types import (
    AgentHarnessResources,
    ContextFile,
    ContextFileSettings,
    PromptTemplate,
    ResourceDiagnostic,
    Skill,
)

__all__ = ["dump_resources", "load_resources"]


def dump_resources(resources: AgentHarnessResources | None) -> dict[str, Any] | None:
    """``resources`` as plain JSON (None stays None)."""
    if resources is None:
        return None
    return msgspec.to_builtins(resources)


def load_resources(data: dict[str, Any] | None) -> AgentHarnessResources | None:
    """The resources ``dump_resources`` recorded."""
    if data is None:
        return None
    return AgentHarnessResources(
        prompt_templates=[PromptTemplate(**t) for t in data.get("prompt_templates", [])],
        skills=[Skill(**s) for s in data.get("skills", [])],
        diagnostics=[ResourceDiagnostic(**d) for d in data.get("diagnostics", [])],
        skill_dirs=list(data.get("skill_dirs", [])),
        template_dirs=list(data.get("template_dirs", [])),
        context_files=[ContextFile(**f) for f in data.get("context_files", [])],
        context_settings=_context_settings(data.get("context_settings")),
        cwd=data.get("cwd"),
    )


def _context_settings(data: dict[str, Any] | None) -> ContextFileSettings | None:
    if data is None:
        return None
    return ContextFileSettings(
        names=tuple(data.get("names", ())), user=data.get("user"), max_bytes=data["max_bytes"]
    )

"""Skills and prompt templates (seed 000 ``Skill``, ``PromptTemplate``, ``AgentHarnessResources``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["AgentHarnessResources", "PromptTemplate", "ResourceDiagnostic", "Skill"]


@dataclass(slots=True)
class Skill:
    name: str
    description: str
    content: str
    file_path: str
    disable_model_invocation: bool = False


@dataclass(slots=True)
class PromptTemplate:
    name: str
    description: str | None
    content: str
    file_path: str = ""
    argument_hint: str | None = None


@dataclass(slots=True)
class ResourceDiagnostic:
    severity: Literal["error", "warning"]
    message: str
    path: str


@dataclass(slots=True)
class AgentHarnessResources:
    prompt_templates: list[PromptTemplate] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    diagnostics: list[ResourceDiagnostic] = field(default_factory=list)
    # Where the skills and templates came from (load_resources fills these in), so a
    # watcher can reload them without being told again.
    skill_dirs: list[str] = field(default_factory=list)
    template_dirs: list[str] = field(default_factory=list)

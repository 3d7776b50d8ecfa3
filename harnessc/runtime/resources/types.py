"""Skills and prompt templates: ``Skill``, ``PromptTemplate``, ``AgentHarnessResources``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "DEFAULT_CONTEXT_NAMES",
    "DEFAULT_USER_CONTEXT_FILE",
    "AgentHarnessResources",
    "ContextFile",
    "ContextFileSettings",
    "PromptTemplate",
    "ResourceDiagnostic",
    "Skill",
]

DEFAULT_CONTEXT_NAMES = ("AGENTS.md", "CLAUDE.md")
DEFAULT_USER_CONTEXT_FILE = "~/.config/harnessc/AGENTS.md"


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


@dataclass(slots=True, frozen=True)
class ContextFileSettings:
    """Which context files to read (AGENTS.md, ...); ``user=None``: no user-level file."""

    names: tuple[str, ...] = DEFAULT_CONTEXT_NAMES
    user: str | None = DEFAULT_USER_CONTEXT_FILE
    max_bytes: int = 65536


@dataclass(slots=True)
class ContextFile:
    """A context file as read: ``content`` is cut at the limit when ``truncated``."""

    path: str
    content: str
    truncated: bool = False
    size: int = 0


@dataclass(slots=True)
class AgentHarnessResources:
    prompt_templates: list[PromptTemplate] = field(default_factory=list)
    skills: list[Skill] = field(default_factory=list)
    diagnostics: list[ResourceDiagnostic] = field(default_factory=list)
    # Where the skills and templates came from (load_resources fills these in), so a
    # watcher can reload them without being told again.
    skill_dirs: list[str] = field(default_factory=list)
    template_dirs: list[str] = field(default_factory=list)
    # The project's context files, and how to find them again (None: not read).
    context_files: list[ContextFile] = field(default_factory=list)
    context_settings: ContextFileSettings | None = None
    cwd: str | None = None

"""Skills and prompt templates: ``Skill``, ``PromptTemplate``, ``AgentHarnessResources``."""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

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


class Skill(Struct):
    name: str
    description: str
    content: str
    file_path: str
    disable_model_invocation: bool = False


class PromptTemplate(Struct):
    name: str
    description: str | None
    content: str
    file_path: str = ""
    argument_hint: str | None = None


class ResourceDiagnostic(Struct):
    severity: Literal["error", "warning"]
    message: str
    path: str


class ContextFileSettings(Struct, frozen=True):
    """Which context files to read (AGENTS.md, ...); ``user=None``: no user-level file."""

    names: tuple[str, ...] = DEFAULT_CONTEXT_NAMES
    user: str | None = DEFAULT_USER_CONTEXT_FILE
    max_bytes: int = 65536


class ContextFile(Struct):
    """A context file as read: ``content`` is cut at the limit when ``truncated``."""

    path: str
    content: str
    truncated: bool = False
    size: int = 0


class AgentHarnessResources(Struct):
    prompt_templates: list[PromptTemplate] = []
    skills: list[Skill] = []
    diagnostics: list[ResourceDiagnostic] = []
    # Where the skills and templates came from (load_resources fills these in), so a
    # watcher can reload them without being told again.
    skill_dirs: list[str] = []
    template_dirs: list[str] = []
    # The project's context files, and how to find them again (None: not read).
    context_files: list[ContextFile] = []
    context_settings: ContextFileSettings | None = None
    cwd: str | None = None

    def expand_skill_command(self, text: str) -> str | None:
        """``/skill:name args`` -> the skill's prompt; None when it names no skill here."""
        from harnessc.runtime.resources.skills import expand_skill_command

        return expand_skill_command(text, self.skills)

    def expand_prompt_template(self, text: str) -> str | None:
        """``/name args`` -> the template's prompt; None when it names no template here."""
        from harnessc.runtime.resources.templates import expand_prompt_template

        return expand_prompt_template(text, self.prompt_templates)

"""Skills and prompt templates: ``Skill``, ``PromptTemplate``, ``AgentHarnessResources``."""

from __future__ import annotations

from typing import Literal

from harnessc.runtime.support.records import NEW_LIST, Record

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


class Skill(Record):
    __slots__ = ("name", "description", "content", "file_path", "disable_model_invocation")
    name: str
    description: str
    content: str
    file_path: str
    disable_model_invocation: bool

    def __init__(
        self,
        name: str,
        description: str,
        content: str,
        file_path: str,
        disable_model_invocation: bool = False,
    ) -> None:
        self.name = name
        self.description = description
        self.content = content
        self.file_path = file_path
        self.disable_model_invocation = disable_model_invocation


class PromptTemplate(Record):
    __slots__ = ("name", "description", "content", "file_path", "argument_hint")
    name: str
    description: str | None
    content: str
    file_path: str
    argument_hint: str | None

    def __init__(
        self,
        name: str,
        description: str | None,
        content: str,
        file_path: str = "",
        argument_hint: str | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.content = content
        self.file_path = file_path
        self.argument_hint = argument_hint


class ResourceDiagnostic(Record):
    __slots__ = ("severity", "message", "path")
    severity: Literal["error", "warning"]
    message: str
    path: str

    def __init__(self, severity: Literal["error", "warning"], message: str, path: str) -> None:
        self.severity = severity
        self.message = message
        self.path = path


class ContextFileSettings(Record, frozen=True):
    """Which context files to read (AGENTS.md, ...); ``user=None``: no user-level file."""

    __slots__ = ("names", "user", "max_bytes")
    names: tuple[str, ...]
    user: str | None
    max_bytes: int

    def __init__(
        self,
        names: tuple[str, ...] = DEFAULT_CONTEXT_NAMES,
        user: str | None = DEFAULT_USER_CONTEXT_FILE,
        max_bytes: int = 65536,
    ) -> None:
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "user", user)
        object.__setattr__(self, "max_bytes", max_bytes)


class ContextFile(Record):
    """A context file as read: ``content`` is cut at the limit when ``truncated``."""

    __slots__ = ("path", "content", "truncated", "size")
    path: str
    content: str
    truncated: bool
    size: int

    def __init__(self, path: str, content: str, truncated: bool = False, size: int = 0) -> None:
        self.path = path
        self.content = content
        self.truncated = truncated
        self.size = size


class AgentHarnessResources(Record):
    __slots__ = (
        "prompt_templates",
        "skills",
        "diagnostics",
        "skill_dirs",
        "template_dirs",
        "context_files",
        "context_settings",
        "cwd",
    )
    prompt_templates: list[PromptTemplate]
    skills: list[Skill]
    diagnostics: list[ResourceDiagnostic]
    # Where the skills and templates came from (load_resources fills these in), so a
    # watcher can reload them without being told again.
    skill_dirs: list[str]
    template_dirs: list[str]
    # The project's context files, and how to find them again (None: not read).
    context_files: list[ContextFile]
    context_settings: ContextFileSettings | None
    cwd: str | None

    def __init__(
        self,
        prompt_templates: list[PromptTemplate] = NEW_LIST,
        skills: list[Skill] = NEW_LIST,
        diagnostics: list[ResourceDiagnostic] = NEW_LIST,
        skill_dirs: list[str] = NEW_LIST,
        template_dirs: list[str] = NEW_LIST,
        context_files: list[ContextFile] = NEW_LIST,
        context_settings: ContextFileSettings | None = None,
        cwd: str | None = None,
    ) -> None:
        self.prompt_templates = [] if prompt_templates is NEW_LIST else prompt_templates
        self.skills = [] if skills is NEW_LIST else skills
        self.diagnostics = [] if diagnostics is NEW_LIST else diagnostics
        self.skill_dirs = [] if skill_dirs is NEW_LIST else skill_dirs
        self.template_dirs = [] if template_dirs is NEW_LIST else template_dirs
        self.context_files = [] if context_files is NEW_LIST else context_files
        self.context_settings = context_settings
        self.cwd = cwd

    def expand_skill_command(self, text: str) -> str | None:
        """``/skill:name args`` -> the skill's prompt; None when it names no skill here."""
        from harnessc.runtime.resources.skills import expand_skill_command

        return expand_skill_command(text, self.skills)

    def expand_prompt_template(self, text: str) -> str | None:
        """``/name args`` -> the template's prompt; None when it names no template here."""
        from harnessc.runtime.resources.templates import expand_prompt_template

        return expand_prompt_template(text, self.prompt_templates)

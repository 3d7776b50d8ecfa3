"""What an agent's resources are: ``AgentHarnessResources`` (its skills, prompt
templates and context files), and the records they hold (from ``records``)."""

from __future__ import annotations

from msgspec import Struct

from harnessc.runtime.resources.records import (
    DEFAULT_CONTEXT_NAMES,
    DEFAULT_USER_CONTEXT_FILE,
    ContextFile,
    ContextFileSettings,
    PromptTemplate,
    ResourceDiagnostic,
    Skill,
)

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

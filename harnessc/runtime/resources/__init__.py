"""Skills, prompt templates and context files: loading, prompt formatting, ``/`` commands,
hot reload."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessc.runtime.resources.context_files import (
        context_prompt_block,
        load_context_files,
    )
    from harnessc.runtime.resources.frontmatter import Frontmatter, parse_frontmatter
    from harnessc.runtime.resources.loader import load_resources
    from harnessc.runtime.resources.skills import (
        expand_skill_command,
        format_skills_for_prompt,
        load_skills,
        skills_prompt_block,
        validate_skill_name,
    )
    from harnessc.runtime.resources.templates import (
        expand_prompt_template,
        load_prompt_templates,
        parse_command_args,
        substitute_args,
    )
    from harnessc.runtime.resources.types import (
        AgentHarnessResources,
        ContextFile,
        ContextFileSettings,
        PromptTemplate,
        ResourceDiagnostic,
        Skill,
    )
    from harnessc.runtime.resources.watch import ResourceWatcher

# Public name -> the module defining it; imported on first use so that importing
# this package stays cheap for a one-shot agent run.
_EXPORTS: dict[str, str] = {
    "context_prompt_block": "harnessc.runtime.resources.context_files",
    "load_context_files": "harnessc.runtime.resources.context_files",
    "ContextFile": "harnessc.runtime.resources.types",
    "ContextFileSettings": "harnessc.runtime.resources.types",
    "Frontmatter": "harnessc.runtime.resources.frontmatter",
    "parse_frontmatter": "harnessc.runtime.resources.frontmatter",
    "load_resources": "harnessc.runtime.resources.loader",
    "expand_skill_command": "harnessc.runtime.resources.skills",
    "format_skills_for_prompt": "harnessc.runtime.resources.skills",
    "skills_prompt_block": "harnessc.runtime.resources.skills",
    "load_skills": "harnessc.runtime.resources.skills",
    "validate_skill_name": "harnessc.runtime.resources.skills",
    "expand_prompt_template": "harnessc.runtime.resources.templates",
    "load_prompt_templates": "harnessc.runtime.resources.templates",
    "parse_command_args": "harnessc.runtime.resources.templates",
    "substitute_args": "harnessc.runtime.resources.templates",
    "AgentHarnessResources": "harnessc.runtime.resources.types",
    "PromptTemplate": "harnessc.runtime.resources.types",
    "ResourceDiagnostic": "harnessc.runtime.resources.types",
    "Skill": "harnessc.runtime.resources.types",
    "ResourceWatcher": "harnessc.runtime.resources.watch",
}

__all__ = [
    "AgentHarnessResources",
    "ContextFile",
    "ContextFileSettings",
    "Frontmatter",
    "PromptTemplate",
    "ResourceDiagnostic",
    "ResourceWatcher",
    "Skill",
    "context_prompt_block",
    "expand_prompt_template",
    "expand_skill_command",
    "format_skills_for_prompt",
    "skills_prompt_block",
    "load_context_files",
    "load_prompt_templates",
    "load_resources",
    "load_skills",
    "parse_command_args",
    "parse_frontmatter",
    "substitute_args",
    "validate_skill_name",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)

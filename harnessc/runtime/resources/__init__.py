"""Skills and prompt templates: loading, prompt formatting, ``/`` commands, hot reload."""

from harnessc.runtime.resources.frontmatter import Frontmatter, parse_frontmatter
from harnessc.runtime.resources.loader import load_resources
from harnessc.runtime.resources.skills import (
    expand_skill_command,
    format_skills_for_prompt,
    load_skills,
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
    PromptTemplate,
    ResourceDiagnostic,
    Skill,
)
from harnessc.runtime.resources.watch import ResourceWatcher

__all__ = [
    "AgentHarnessResources",
    "Frontmatter",
    "PromptTemplate",
    "ResourceDiagnostic",
    "ResourceWatcher",
    "Skill",
    "expand_prompt_template",
    "expand_skill_command",
    "format_skills_for_prompt",
    "load_prompt_templates",
    "load_resources",
    "load_skills",
    "parse_command_args",
    "parse_frontmatter",
    "substitute_args",
    "validate_skill_name",
]

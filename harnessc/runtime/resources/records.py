"""The records skills and templates are loaded into: ``Skill``, ``PromptTemplate``,
``ResourceDiagnostic``, and the project's context files (``ContextFile``)."""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

__all__ = [
    "DEFAULT_CONTEXT_NAMES",
    "DEFAULT_USER_CONTEXT_FILE",
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

"""``${VAR}`` and ``${VAR:-default}`` references inside spec strings.

They are resolved when the agent runs (the generated code calls ``env()``), never at
build time. ``$${`` writes a literal ``${``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ENV_FIELDS", "EnvRef", "malformed_env_ref", "split_env_refs"]

# Where references are expanded ("*": any key, "**": any depth). Elsewhere strings are
# verbatim: system prompts, descriptions and commands may talk about ${HOME} freely.
ENV_FIELDS: tuple[tuple[str, ...], ...] = (
    ("models", "*", "id"),
    ("models", "*", "base_url"),
    ("models", "*", "headers", "*"),
    ("stream", "headers", "*"),
    ("session", "dir"),
    ("session", "url"),
    ("durable", "database_url"),
    ("tool_context", "**"),
    ("mcp", "*", "command"),
    ("mcp", "*", "args", "**"),
    ("mcp", "*", "env", "*"),
    ("mcp", "*", "cwd"),
    ("mcp", "*", "url"),
    ("mcp", "*", "headers", "*"),
)

_TOKEN = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(slots=True, frozen=True)
class EnvRef:
    name: str
    default: str | None = None


def split_env_refs(text: str) -> list[str | EnvRef]:
    """Literal pieces and references in order; adjacent literals are merged."""
    parts: list[str | EnvRef] = []
    pos = 0

    def literal(piece: str) -> None:
        if not piece:
            return
        if parts and isinstance(parts[-1], str):
            parts[-1] += piece
        else:
            parts.append(piece)

    for match in _TOKEN.finditer(text):
        literal(text[pos : match.start()])
        if match.group(0) == "$${":
            literal("${")
        else:
            parts.append(EnvRef(match.group(1), match.group(2)))
        pos = match.end()
    literal(text[pos:])
    return parts


def malformed_env_ref(text: str) -> str | None:
    """The first ``${...`` that is not a valid reference, if any."""
    rest = _TOKEN.sub("", text)
    start = rest.find("${")
    if start < 0:
        return None
    end = rest.find("}", start)
    return rest[start : end + 1] if end >= 0 else rest[start:]

"""``${VAR}`` and ``${VAR:-default}`` references inside strings; ``$${`` writes a
literal ``${``.

The one reader of them: the compiler splits spec strings with it (the generated code
resolves each reference with ``env()`` when the agent runs), and the runtime expands
the strings of an ``.mcp.json`` file with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["EnvRef", "expand_env", "malformed_env_ref", "split_env_refs", "unresolved_names"]

_TOKEN = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class EnvRef(NamedTuple):
    """A ``${name}`` or ``${name:-default}`` reference (a tuple: no dataclass built at start-up)."""

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


def unresolved_names(text: str) -> list[str]:
    """The variables of the references still written in ``text`` (a value kept as
    written because its variable was unset when the agent started)."""
    return [part.name for part in split_env_refs(text) if isinstance(part, EnvRef)]


def malformed_env_ref(text: str) -> str | None:
    """The first ``${...`` that is not a valid reference, if any."""
    rest = _TOKEN.sub("", text)
    start = rest.find("${")
    if start < 0:
        return None
    end = rest.find("}", start)
    return rest[start : end + 1] if end >= 0 else rest[start:]


def expand_env(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with each reference replaced by the variable's value; an unset or empty
    variable gives the default, or ``""`` when there is none (as Claude Code reads an
    ``.mcp.json``)."""
    env = os.environ if environ is None else environ
    return "".join(
        part if isinstance(part, str) else (env.get(part.name) or part.default or "")
        for part in split_env_refs(text)
    )

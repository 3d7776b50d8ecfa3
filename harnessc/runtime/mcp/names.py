"""The names MCP tools get in the agent: valid for every provider, stable, unique.

OpenAI and Anthropic accept tool names matching ``^[A-Za-z0-9_-]{1,64}$`` only; one
tool named otherwise makes every request of the agent fail. A server's tool becomes
``<prefix><tool>`` when that is valid; otherwise its letters are folded to ASCII, every
other character becomes ``_``, and ``_`` plus eight hex digits of the SHA-256 of the
original name end it, within 64 characters (``mcp__h__héllo`` ->
``mcp__h__hello_788c844e``). The same original name maps to the same name on every
start; hooks, permission rules and ``active_tools`` see the mapped name.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["MAX_NAME", "agent_tool_name", "is_valid_tool_name"]

MAX_NAME = 64
_VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OTHER = re.compile(r"[^A-Za-z0-9_-]")
_SUFFIX = 9  # "_" and eight hex digits


def is_valid_tool_name(name: str) -> bool:
    return _VALID.fullmatch(name) is not None


def agent_tool_name(full: str) -> str:
    """``full`` when providers accept it, else its valid, stable mapping."""
    if is_valid_tool_name(full):
        return full
    folded = unicodedata.normalize("NFKD", full).encode("ascii", "ignore").decode("ascii")
    cleaned = _OTHER.sub("_", folded)[: MAX_NAME - _SUFFIX]
    digest = hashlib.sha256(full.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned}_{digest}"

"""Tool-call arguments from the JSON text a model streamed, with a careful repair."""

from __future__ import annotations

import json
import re
from typing import Any

from harnessc.runtime.providers.text import clean_value, has_surrogates

__all__ = ["MAX_ARGUMENT_DEPTH", "parse_tool_arguments"]

# Arguments nested deeper than this are refused with an error the model reads (deep
# nesting breaks recursive code downstream; no tool schema nests near this deep).
MAX_ARGUMENT_DEPTH = 100
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _too_deep(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """True when containers in ``value`` nest deeper than ``limit`` (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return False


_STRAY_TAIL = set("}]) \t\r\n`")


def _object_or_error(value: Any, raw: str = "") -> tuple[dict[str, Any], str | None]:
    if not isinstance(value, dict):
        return {}, f"tool arguments must be a JSON object, got {type(value).__name__}"
    if ("[" in raw or raw.count("{") > 1) and _too_deep(value):
        return {}, _depth_error()
    if has_surrogates(raw) or _SURROGATE_ESCAPE.search(raw) is not None:
        value = clean_value(value)
    return value, None


def _depth_error() -> str:
    return f"tool arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels; send flatter arguments"


def _strip_fence(text: str) -> str:
    """``text`` without a surrounding markdown code fence (```json ... ```)."""
    if not text.startswith("```"):
        return text
    body = text[3:]
    newline = body.find("\n")
    if newline < 0:
        return text
    body = body[newline + 1 :]
    end = body.rfind("```")
    return body[:end] if end >= 0 else body


def _missing_closers(text: str) -> str | None:
    """The brackets that would close ``text`` when it stops between two values.

    None when the text is cut inside a string, after a ``:`` or ``,``, or has an
    unbalanced closer: then completing it would mean guessing.
    """
    stack: list[str] = []
    in_string = False
    escaped = False
    last = ""
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                last = '"'
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
        if not ch.isspace():
            last = ch
    if in_string or not stack:
        return None
    # Only after a value that cannot grow: a string, a closed container or a literal
    # (a number such as ``12`` might have been ``123``).
    if last not in ('"', "}", "]") and not text.rstrip().endswith(("true", "false", "null")):
        return None
    return "".join(reversed(stack))


def _repair(text: str) -> Any | None:
    """A value when ``text`` has exactly one sensible reading, else None."""
    decoder = json.JSONDecoder()
    # 1. A complete value followed by stray closers or a fence: keep the value.
    try:
        value, end = decoder.raw_decode(text)
    except ValueError:
        value, end = None, -1
    if end > 0:
        rest = text[end:]
        if rest and all(ch in _STRAY_TAIL for ch in rest):
            return value
        return None
    # 2. A value cut off between two members: close the open brackets.
    closers = _missing_closers(text)
    if closers:
        try:
            return json.loads(text + closers)
        except ValueError:
            return None
    return None


def parse_tool_arguments(raw: str, tool_name: str = "") -> tuple[dict[str, Any], str | None]:
    """``(arguments, parse_error)`` for the argument text of one tool call.

    Empty text means no arguments. Invalid JSON is repaired only when the repair is
    unambiguous (stray trailing brackets, a code fence, missing closing brackets);
    otherwise the arguments are ``{}`` and ``parse_error`` explains what was wrong.
    """
    text = raw.strip()
    if not text:
        return {}, None
    try:
        return _object_or_error(json.loads(text), text)
    except RecursionError:
        return {}, _depth_error()
    except ValueError as exc:
        first_error = exc
    try:
        repaired = _repair(_strip_fence(text))
    except RecursionError:
        return {}, _depth_error()
    if repaired is not None:
        return _object_or_error(repaired, text)
    label = f" for tool {tool_name!r}" if tool_name else ""
    shown = raw if len(raw) <= 200 else raw[:200] + "..."
    detail = getattr(first_error, "msg", str(first_error))
    pos = getattr(first_error, "pos", None)
    where = f" at character {pos}" if pos is not None else ""
    return {}, f"invalid JSON in arguments{label}: {detail}{where}; received {shown!r}"

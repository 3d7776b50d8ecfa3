"""The ``ls`` tool: one folder's entries, sorted, folders marked with ``/``."""

from __future__ import annotations

import os
from typing import Any

from harnessc.runtime.tools.base import Tool, ToolResult, error_result, text_result
from harnessc.runtime.tools.bounded import DEFAULT_TIMEOUT_S, bounded
from harnessc.runtime.tools.paths import PathError, display_path, path_filter, resolve_path
from harnessc.runtime.tools.truncate import cap_text

__all__ = ["DEFAULT_LS_LIMIT", "create_ls_tool"]

DEFAULT_LS_LIMIT = 500

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Folder to list (default: the workspace)."},
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": f"Most entries to return (default {DEFAULT_LS_LIMIT}).",
        },
    },
    "additionalProperties": False,
}


def _ls(params: dict[str, Any], context: Any) -> ToolResult:
    limit = params.get("limit") or DEFAULT_LS_LIMIT
    if not isinstance(limit, int) or limit < 1:
        return error_result(f"limit must be a positive integer (got {limit!r})")
    try:
        path = resolve_path(params.get("path"), context)
    except PathError as exc:
        return error_result(str(exc))
    shown = display_path(path, context)
    if not path.exists():
        return error_result(f"Folder not found: {shown}")
    if not path.is_dir():
        return error_result(f"{shown} is a file, not a folder; use read to see it")
    try:
        with os.scandir(path) as it:
            found = [(e.name, e.path, e.is_dir()) for e in it]
    except OSError as exc:
        return error_result(f"Cannot list {shown}: {exc.strerror or exc}")
    rules = path_filter(context)
    entries = [(name, is_dir) for name, _, is_dir in found]
    if rules is not None:  # what the permission rules keep from ls is not listed
        visible = rules.for_walk("ls", path)
        entries = [(n, d) for n, p, d in found if visible(p, _real(p))]
    hidden = len(found) - len(entries)
    entries.sort(key=lambda item: (item[0].lower(), item[0]))
    total = len(entries)
    lines = [name + ("/" if is_dir else "") for name, is_dir in entries[:limit]]
    body = "\n".join(lines) if lines else "(empty folder)"
    if total > limit:
        body += (
            f"\n\n[{limit} entries limit reached ({total} in all). "
            f"Use limit={min(total, limit * 2)} to see more.]"
        )
    if hidden:
        what = "1 entry" if hidden == 1 else f"{hidden} entries"
        body += f"\n\n[{what} not listed: permission rules keep them from ls.]"
    return text_result(
        cap_text(body, "Use a smaller limit or list a subfolder."),
        {
            "path": str(path),
            "entries": min(total, limit),
            "total": total,
            "skipped_by_rules": hidden,
        },
    )


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except OSError:  # the entry changed while it was read
        return path


def create_ls_tool(timeout_s: float | None = DEFAULT_TIMEOUT_S) -> Tool:
    """The ``ls`` built-in."""

    return Tool(
        name="ls",
        label="List",
        description=(
            "List a folder's entries (including dotfiles), sorted by name; folders end "
            f"with '/'. At most limit entries (default {DEFAULT_LS_LIMIT})."
        ),
        parameters=_PARAMETERS,
        run=bounded("ls", lambda params, context, stop: _ls(params, context), timeout_s),
    )

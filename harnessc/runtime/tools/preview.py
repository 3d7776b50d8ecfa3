"""What a ``write`` or ``edit`` call would change, as a unified diff, before it runs: the
interactive mode shows it beside the permission question. Reads the file only (inside
the workspace, as the tool would), never writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessc.runtime.tools.edit import apply_edits, file_diff, parse_edits
from harnessc.runtime.tools.paths import PathError, display_path, resolve_path

__all__ = ["MAX_PREVIEW_BYTES", "preview_change"]

MAX_PREVIEW_BYTES = 1024 * 1024  # a larger file is not read to preview a change


def preview_change(tool: str, args: Mapping[str, Any], context: Any) -> str | None:
    """The diff a ``write`` or ``edit`` call would make, or None (another tool, a path the
    tool would refuse, a file too large or unreadable, an edit that does not apply: the
    tool itself reports those when it runs)."""
    if tool not in ("write", "edit"):
        return None
    try:
        path = resolve_path(args.get("path"), context)
    except (PathError, TypeError):
        return None
    shown = display_path(path, context)
    try:
        if path.stat().st_size > MAX_PREVIEW_BYTES:
            return None
        before = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = ""
    except (OSError, UnicodeDecodeError):
        return None
    if tool == "write":
        content = args.get("content")
        if not isinstance(content, str):
            return None
        after = content
    else:
        edits = parse_edits(dict(args))
        if isinstance(edits, str):
            return None
        after, problems = apply_edits(before, edits, shown)
        if problems:
            return None
    diff, _ = file_diff(before, after, shown)
    return diff or None

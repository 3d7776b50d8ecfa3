"""The ``write`` tool: create or overwrite a file atomically, making parent folders."""

from __future__ import annotations

from typing import Any

from harnessc.runtime.tools.base import Tool, ToolResult, error_result, text_result, threaded
from harnessc.runtime.tools.fileio import atomic_write_bytes, path_lock
from harnessc.runtime.tools.paths import PathError, display_path, resolve_path

__all__ = ["create_write_tool"]

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to write (relative to the workspace)."},
        "content": {"type": "string", "description": "The complete new content."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}


def _write(params: dict[str, Any], context: Any) -> ToolResult:
    path_arg = params.get("path")
    content = params.get("content")
    if not path_arg:
        return error_result("write needs a path")
    if not isinstance(content, str):
        return error_result("write needs content as a string")
    try:
        path = resolve_path(path_arg, context)
    except PathError as exc:
        return error_result(str(exc))
    shown = display_path(path, context)
    if path.is_dir():
        return error_result(f"{shown} is a directory; give a file path")
    existed = path.exists()
    data = content.encode("utf-8")
    try:
        with path_lock(path):
            atomic_write_bytes(path, data)
    except OSError as exc:
        return error_result(f"Cannot write {shown}: {exc.strerror or exc}")
    verb = "Overwrote" if existed else "Created"
    return text_result(
        f"{verb} {shown} ({len(data)} bytes).",
        {"path": str(path), "bytes": len(data), "created": not existed},
    )


def create_write_tool() -> Tool:
    """The ``write`` built-in."""

    return Tool(
        name="write",
        label="Write",
        description=(
            "Write a file (creating it and any missing parent folders, or replacing it "
            "entirely). Prefer edit for changes to an existing file."
        ),
        parameters=_PARAMETERS,
        run=threaded(_write),
    )

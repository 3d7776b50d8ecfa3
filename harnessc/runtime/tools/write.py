"""The ``write`` tool: create or overwrite a file atomically, making parent folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessc.runtime.tools.base import Tool, ToolResult, error_result, text_result
from harnessc.runtime.tools.bounded import DEFAULT_TIMEOUT_S, bounded
from harnessc.runtime.tools.fileio import UnsafePathError, atomic_write_at, open_parent, path_lock
from harnessc.runtime.tools.paths import (
    PathError,
    display_path,
    is_inside,
    resolve_path,
    tool_env,
)

__all__ = ["create_write_tool", "write_root"]

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to write (relative to the workspace)."},
        "content": {"type": "string", "description": "The complete new content."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}


def write_root(path: Path, context: Any) -> Path:
    """The folder the no-follow walk to ``path`` starts at: the workspace, else ``/``."""
    env = tool_env(context)
    if env.workspace is not None and is_inside(path, env.workspace):
        return env.workspace
    if env.confined:
        raise PathError(f"path {str(path)!r} is outside the workspace {env.workspace}")
    return Path(path.anchor)


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
    data = content.encode("utf-8", "replace")  # a lone surrogate becomes "?"
    try:
        with (
            path_lock(path),
            open_parent(path, write_root(path, context), create=True) as (
                folder,
                name,
            ),
        ):
            existed = atomic_write_at(folder, name, data)
    except IsADirectoryError:
        return error_result(f"{shown} is a directory; give a file path")
    except UnsafePathError as exc:
        return error_result(
            f"Cannot write {shown}: {exc.strerror}; a folder of the path changed or is a "
            "symlink, and writes never follow symlinks."
        )
    except OSError as exc:
        return error_result(f"Cannot write {shown}: {exc.strerror or exc}")
    verb = "Overwrote" if existed else "Created"
    return text_result(
        f"{verb} {shown} ({len(data)} bytes).",
        {"path": str(path), "bytes": len(data), "created": not existed},
    )


def create_write_tool(timeout_s: float | None = DEFAULT_TIMEOUT_S) -> Tool:
    """The ``write`` built-in."""

    return Tool(
        name="write",
        label="Write",
        description=(
            "Write a file (creating it and any missing parent folders, or replacing it "
            "entirely). Prefer edit for changes to an existing file."
        ),
        parameters=_PARAMETERS,
        run=bounded("write", lambda params, context, stop: _write(params, context), timeout_s),
    )

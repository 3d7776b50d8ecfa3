"""The ``read`` tool: text files with line numbers and paging, images as image content."""

from __future__ import annotations

import base64
import io
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from harnessc.runtime.core.messages import ImageContent, TextContent
from harnessc.runtime.tools.base import Tool, ToolResult, error_result, text_result
from harnessc.runtime.tools.bounded import DEFAULT_TIMEOUT_S, Stop, bounded
from harnessc.runtime.tools.fileio import NotRegularFileError, file_kind, open_regular
from harnessc.runtime.tools.paths import PathError, display_path, resolve_path
from harnessc.runtime.tools.truncate import MAX_BYTES, MAX_LINES, bounded_lines, format_size

__all__ = ["IMAGE_TYPES", "MAX_IMAGE_BYTES", "create_read_tool", "is_binary_file"]

IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
MAX_IMAGE_BYTES = 20 * 1024 * 1024
_SNIFF = 8192

_DESCRIPTION = (
    "Read a file. Text comes back with line numbers; images (png, jpg, gif, webp) come back "
    f"as images. Output is capped at {MAX_LINES} lines or {MAX_BYTES // 1024} KB; use offset "
    "(1-based first line) and limit (number of lines) to page through large files."
)

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to read (relative to the workspace)."},
        "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read."},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def is_binary_file(path: Path) -> bool:
    """True when the first bytes contain a NUL (the usual text/binary test)."""
    with open_regular(path) as fh:
        return b"\x00" in fh.read(_SNIFF)


def _read_image(fh: BinaryIO, size: int, path: Path, mime: str, shown: str) -> ToolResult:
    if size > MAX_IMAGE_BYTES:
        return error_result(
            f"Image {shown} is {format_size(size)}, over the {format_size(MAX_IMAGE_BYTES)} limit."
        )
    data = base64.b64encode(fh.read(MAX_IMAGE_BYTES + 1)).decode("ascii")
    return ToolResult(
        content=[TextContent(f"Read image file {shown} [{mime}]"), ImageContent(data, mime)],
        details={"path": str(path), "mime_type": mime, "bytes": size},
    )


def _read_text(
    raw: BinaryIO,
    path: Path,
    shown: str,
    offset: int,
    limit: int | None,
    stop: Callable[[], bool] | None = None,
) -> ToolResult:
    """Stream the file: keep only the requested window, count the rest."""
    kept: list[str] = []
    used = 0
    total = 0
    stop_reason: str | None = None  # "limit" | "lines" | "bytes" | "long_line"
    last_kept = offset - 1
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline=None) as fh:
        # a line longer than the byte cap is cut (it is shown as "too long" anyway)
        lines = bounded_lines(fh, MAX_BYTES + 1, stop)
        for total, (text, _) in enumerate(lines, start=1):  # noqa: B007 - read after the loop
            if total < offset or stop_reason is not None:
                continue
            if limit is not None and len(kept) >= limit:
                stop_reason = "limit"
                continue
            if len(kept) >= MAX_LINES:
                stop_reason = "lines"
                continue
            rendered = f"{total:>6}\t{text}"
            cost = len(rendered.encode("utf-8", "replace")) + 1
            if used + cost > MAX_BYTES:
                stop_reason = "long_line" if not kept else "bytes"
                continue
            kept.append(rendered)
            used += cost
            last_kept = total
    if total == 0:
        return text_result(f"(file {shown} is empty)", {"path": str(path), "total_lines": 0})
    if offset > total:
        return error_result(
            f"offset={offset} is beyond the end of {shown} ({total} lines). "
            f"Use an offset between 1 and {total}."
        )
    body = "\n".join(kept)
    details: dict[str, Any] = {
        "path": str(path),
        "total_lines": total,
        "first_line": offset,
        "last_line": last_kept,
        "truncated": stop_reason is not None,
    }
    if stop_reason == "long_line":
        body = (
            f"[Line {offset} of {shown} alone is over {format_size(MAX_BYTES)}. "
            f"Use bash to see part of it, e.g. sed -n '{offset}p' {shown} | head -c {MAX_BYTES}]"
        )
    elif stop_reason == "limit":
        remaining = total - last_kept
        body += (
            f"\n\n[{remaining} more lines in file (total {total}). "
            f"Use offset={last_kept + 1} to continue.]"
        )
    elif stop_reason in ("lines", "bytes"):
        cap = f"{MAX_LINES} lines" if stop_reason == "lines" else format_size(MAX_BYTES)
        body += (
            f"\n\n[Showing lines {offset}-{last_kept} of {total} ({cap} limit). "
            f"Use offset={last_kept + 1} to continue.]"
        )
    return text_result(body, details)


def _read(
    path_arg: Any,
    offset_arg: Any,
    limit_arg: Any,
    context: Any,
    stop: Callable[[], bool] | None = None,
) -> ToolResult:
    if not path_arg:
        return error_result("read needs a path")
    try:
        path = resolve_path(path_arg, context, read_only=True)
    except PathError as exc:
        return error_result(str(exc))
    shown = display_path(path, context)
    try:
        offset = int(offset_arg) if offset_arg is not None else 1
        limit = int(limit_arg) if limit_arg is not None else None
    except (TypeError, ValueError):
        return error_result("offset and limit must be integers")
    if offset < 1:
        return error_result(f"offset must be 1 or more (got {offset})")
    if limit is not None and limit < 1:
        return error_result(f"limit must be 1 or more (got {limit})")
    try:
        info = path.stat()
    except FileNotFoundError:
        return error_result(f"File not found: {shown}")
    except OSError as exc:
        return error_result(f"Cannot read {shown}: {exc.strerror or exc}")
    if stat.S_ISDIR(info.st_mode):
        return error_result(f"{shown} is a directory; use the ls tool to list it")
    if not stat.S_ISREG(info.st_mode):
        return error_result(
            f"{shown} is {file_kind(info.st_mode)}; read only opens regular files "
            "(reading it could block forever)"
        )
    try:
        with open_regular(path) as fh:
            mime = IMAGE_TYPES.get(path.suffix.lower())
            if mime is not None:
                return _read_image(fh, os.fstat(fh.fileno()).st_size, path, mime, shown)
            if b"\x00" in fh.read(_SNIFF):
                return error_result(
                    f"{shown} is a binary file ({format_size(info.st_size)}); read can only "
                    "show text and png/jpg/gif/webp images. Use bash (e.g. xxd | head) to "
                    "inspect it."
                )
            fh.seek(0)
            return _read_text(fh, path, shown, offset, limit, stop)
    except NotRegularFileError:
        return error_result(f"{shown} is not a regular file; read only opens regular files")
    except OSError as exc:
        return error_result(f"Cannot read {shown}: {exc.strerror or exc}")


def create_read_tool(timeout_s: float | None = DEFAULT_TIMEOUT_S) -> Tool:
    """The ``read`` built-in; a call running over ``timeout_s`` is stopped."""

    def work(params: dict[str, Any], context: Any, stop: Stop) -> ToolResult:
        return _read(params.get("path"), params.get("offset"), params.get("limit"), context, stop)

    return Tool(
        name="read",
        label="Read",
        description=_DESCRIPTION,
        parameters=_PARAMETERS,
        run=bounded("read", work, timeout_s),
    )

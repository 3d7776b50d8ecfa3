"""The ``edit`` tool: several exact, unique, non-overlapping replacements in one file."""

from __future__ import annotations

import difflib
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessc.runtime.tools.base import Tool, ToolResult, error_result, text_result
from harnessc.runtime.tools.bounded import DEFAULT_TIMEOUT_S, bounded
from harnessc.runtime.tools.fileio import (
    FileChangedError,
    UnsafePathError,
    atomic_write_at,
    open_parent,
    path_lock,
    read_at,
    stat_at,
)
from harnessc.runtime.tools.paths import PathError, display_path, resolve_path
from harnessc.runtime.tools.truncate import cap_text, format_size
from harnessc.runtime.tools.write import write_root

__all__ = ["Replacement", "apply_edits", "create_edit_tool", "file_diff", "parse_edits"]

_DESCRIPTION = (
    "Edit a file by exact text replacement. Give one or more edits; each old_text must "
    "appear exactly once in the current file (include enough surrounding lines to make it "
    "unique), edits must not overlap, and whitespace must match exactly. All edits apply "
    "together or none does."
)

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to edit (relative to the workspace)."},
        "edits": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "old_text": {"type": "string", "description": "Exact text to replace."},
                    "new_text": {"type": "string", "description": "Replacement text."},
                },
                "required": ["old_text", "new_text"],
            },
        },
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
}

_SNIPPET = 300
MAX_EDIT_BYTES = 64 * 1024 * 1024  # larger files are not loaded into memory to be edited
_ATTEMPTS = 3  # reapply when another process changes the file while it is being edited


@dataclass(slots=True)
class Replacement:
    old_text: str
    new_text: str


def _snippet(text: str) -> str:
    shown = text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."
    return "\n".join("    " + line for line in shown.split("\n"))


def _occurrences(content: str, needle: str, most: int = 5) -> list[int]:
    found: list[int] = []
    start = content.find(needle)
    while start >= 0 and len(found) < most:
        found.append(start)
        start = content.find(needle, start + 1)
    return found


def apply_edits(content: str, edits: list[Replacement], shown: str) -> tuple[str, list[str]]:
    """The new content, or the problems (each naming the edit and its text)."""
    problems: list[str] = []
    spans: list[tuple[int, int, int]] = []
    for number, edit in enumerate(edits, start=1):
        if edit.old_text == "":
            problems.append(f"edit {number}: old_text is empty")
            continue
        hits = _occurrences(content, edit.old_text)
        if not hits:
            problems.append(
                f"edit {number}: old_text was not found in {shown}:\n{_snippet(edit.old_text)}"
            )
        elif len(hits) > 1:
            lines = ", ".join(str(content.count("\n", 0, h) + 1) for h in hits)
            more = "+" if len(hits) == 5 else ""
            problems.append(
                f"edit {number}: old_text is not unique in {shown} ({len(hits)}{more} matches, "
                f"at lines {lines}); add surrounding lines to make it unique:\n"
                f"{_snippet(edit.old_text)}"
            )
        else:
            spans.append((hits[0], hits[0] + len(edit.old_text), number))
    spans.sort()
    for (_, end_a, num_a), (start_b, _, num_b) in zip(spans, spans[1:], strict=False):
        if start_b < end_a:
            problems.append(f"edits {num_a} and {num_b} overlap; merge them into one edit")
    if problems:
        return content, problems
    out: list[str] = []
    pos = 0
    for start, end, number in spans:
        out.append(content[pos:start])
        out.append(edits[number - 1].new_text)
        pos = end
    out.append(content[pos:])
    return "".join(out), []


def parse_edits(params: dict[str, Any]) -> list[Replacement] | str:
    raw = params.get("edits")
    if raw is None and "old_text" in params:
        raw = [{"old_text": params.get("old_text"), "new_text": params.get("new_text", "")}]
    if not isinstance(raw, list) or not raw:
        return "edits must be a non-empty list of {old_text, new_text}"
    edits: list[Replacement] = []
    for number, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            return f"edit {number} must be an object with old_text and new_text"
        old = item.get("old_text", item.get("oldText"))
        new = item.get("new_text", item.get("newText"))
        if not isinstance(old, str) or not isinstance(new, str):
            return f"edit {number} needs string old_text and new_text"
        edits.append(Replacement(old, new))
    return edits


def file_diff(before: str, after: str, shown: str) -> tuple[str, int | None]:
    """A unified diff of a file's change (2 lines of context) and its first changed line."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{shown}",
            tofile=f"b/{shown}",
            n=2,
        )
    )
    first: int | None = None
    for line in lines:
        if line.startswith("@@"):
            try:
                first = int(line.split("+")[1].split(",")[0].split(" ")[0])
            except (IndexError, ValueError):
                first = None
            break
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines), first


def _edit(params: dict[str, Any], context: Any) -> ToolResult:
    path_arg = params.get("path")
    if not path_arg:
        return error_result("edit needs a path")
    try:
        path: Path = resolve_path(path_arg, context)
    except PathError as exc:
        return error_result(str(exc))
    shown = display_path(path, context)
    edits = parse_edits(params)
    if isinstance(edits, str):
        return error_result(edits)
    try:
        root = write_root(path, context)
    except PathError as exc:
        return error_result(str(exc))
    try:
        with open_parent(path, root) as (folder, name):
            for _ in range(_ATTEMPTS):
                result = _edit_once(folder, name, path, shown, edits)
                if result is not None:
                    return result
    except FileNotFoundError:
        return error_result(f"File not found: {shown}")
    except UnsafePathError as exc:
        return error_result(
            f"Cannot edit {shown}: {exc.strerror}; a folder of the path changed or is a "
            "symlink, and edits never follow symlinks."
        )
    except OSError as exc:
        return error_result(f"Cannot edit {shown}: {exc.strerror or exc}")
    return error_result(
        f"No changes made to {shown}: another process kept changing it while the edit was "
        "being applied. Read the file again, then retry."
    )


def _edit_once(
    folder: int, name: str, path: Path, shown: str, edits: list[Replacement]
) -> ToolResult | None:
    """One read-change-write; None when the file changed underneath (try again)."""
    info = stat_at(folder, name)
    if info is None:
        return error_result(f"File not found: {shown}")
    if stat.S_ISDIR(info.st_mode):
        return error_result(f"{shown} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        return error_result(f"{shown} is not a regular file; edit works on text files only")
    if info.st_size > MAX_EDIT_BYTES:
        return error_result(
            f"{shown} is {format_size(info.st_size)}; edit works on files up to "
            f"{format_size(MAX_EDIT_BYTES)}. Use bash (e.g. sed -i) to change it."
        )
    try:
        raw = read_at(folder, name, MAX_EDIT_BYTES + 1)  # the current file, never a cache
    except FileNotFoundError:
        return error_result(f"File not found: {shown}")
    except OSError as exc:
        return error_result(f"Cannot read {shown}: {exc.strerror or exc}")
    if b"\x00" in raw[:8192]:
        return error_result(f"{shown} is a binary file; edit works on text files only")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return error_result(f"{shown} is not UTF-8 text; edit cannot change it safely")
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
    if crlf:
        text = text.replace("\r\n", "\n")
        edits = [
            Replacement(e.old_text.replace("\r\n", "\n"), e.new_text.replace("\r\n", "\n"))
            for e in edits
        ]
    new_text, problems = apply_edits(text, edits, shown)
    if problems:
        return error_result(
            f"No changes made to {shown}:\n- "
            + "\n- ".join(problems)
            + "\nRead the file again to see its current content."
        )
    if new_text == text:
        return error_result(f"No changes made to {shown}: every new_text equals its old_text")
    diff, first_line = file_diff(text, new_text, shown)
    out = new_text.replace("\n", "\r\n") if crlf else new_text
    if bom:
        out = "\ufeff" + out

    def unchanged() -> bool:
        try:
            return read_at(folder, name, MAX_EDIT_BYTES + 1) == raw
        except OSError:
            return False

    try:
        atomic_write_at(folder, name, out.encode("utf-8", "replace"), unchanged=unchanged)
    except FileChangedError:
        return None
    except OSError as exc:
        return error_result(f"Cannot write {shown}: {exc.strerror or exc}")
    noun = "edit" if len(edits) == 1 else "edits"
    return text_result(
        cap_text(f"Applied {len(edits)} {noun} to {shown}.\n\n{diff}".rstrip()),
        {"path": str(path), "edits": len(edits), "diff": diff, "first_changed_line": first_line},
    )


def _edit_locked(params: dict[str, Any], context: Any) -> ToolResult:
    try:
        path = resolve_path(params.get("path") or ".", context)
    except PathError:
        return _edit(params, context)
    with path_lock(path):
        return _edit(params, context)


def create_edit_tool(timeout_s: float | None = DEFAULT_TIMEOUT_S) -> Tool:
    """The ``edit`` built-in."""

    return Tool(
        name="edit",
        label="Edit",
        description=_DESCRIPTION,
        parameters=_PARAMETERS,
        run=bounded("edit", lambda params, context, stop: _edit_locked(params, context), timeout_s),
    )

"""The ``grep`` and ``find`` tools, in pure Python (no ripgrep or fd needed)."""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from harnessc.runtime.tools.base import Tool, ToolResult, error_result, text_result
from harnessc.runtime.tools.bounded import DEFAULT_TIMEOUT_S, Stop, bounded
from harnessc.runtime.tools.fileio import open_regular
from harnessc.runtime.tools.paths import (
    PathError,
    display_path,
    path_filter,
    resolve_path,
    tool_env,
)
from harnessc.runtime.tools.truncate import bounded_lines
from harnessc.runtime.tools.walk import Entry, Ignores, WalkStats, compile_glob, glob_matches, walk

__all__ = [
    "DEFAULT_FIND_LIMIT",
    "DEFAULT_GREP_LIMIT",
    "MAX_GREP_LINE",
    "MAX_SEARCH_S",
    "PatternTimeoutError",
    "compile_pattern",
    "create_find_tool",
    "create_grep_tool",
]

DEFAULT_GREP_LIMIT = 100
DEFAULT_FIND_LIMIT = 1000
MAX_GREP_LINE = 500
_SNIFF = 8192

_NO_IGNORE: dict[str, Any] = {
    "type": "boolean",
    "description": "Also search what .gitignore / .ignore files, node_modules and "
    "session transcripts would skip (.git is always skipped).",
}

_GREP_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Regular expression (or text if literal)."},
        "path": {"type": "string", "description": "File or folder to search (default: workspace)."},
        "glob": {"type": "string", "description": "Only files matching this glob, e.g. '*.py'."},
        "ignore_case": {"type": "boolean", "description": "Case-insensitive search."},
        "literal": {"type": "boolean", "description": "Treat pattern as plain text."},
        "context": {"type": "integer", "minimum": 0, "description": "Lines around each match."},
        "no_ignore": _NO_IGNORE,
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": f"Most matches to return (default {DEFAULT_GREP_LIMIT}).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

_FIND_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Glob, e.g. '*.py' (any depth) or 'src/**/*.ts' (from path).",
        },
        "path": {"type": "string", "description": "Folder to search (default: workspace)."},
        "no_ignore": _NO_IGNORE,
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": f"Most results (default {DEFAULT_FIND_LIMIT}).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

# One search of one line may take this long; a longer one means a pattern with
# catastrophic backtracking (``(a+)+$``, ``(a|aa)+$``): grep stops and says so.
MAX_SEARCH_S = 1.0


class _Searcher(Protocol):
    def search(self, line: str) -> bool: ...


class PatternTimeoutError(Exception):
    """One line took longer than MAX_SEARCH_S to search."""


class _BoundedRegex:
    """A pattern of the ``regex`` package: releases the GIL, each search time-limited."""

    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled

    def search(self, line: str) -> bool:
        try:
            return self._compiled.search(line, timeout=MAX_SEARCH_S) is not None
        except TimeoutError:
            raise PatternTimeoutError from None


class _Literal:
    """A literal pattern needs no regex engine (and cannot backtrack)."""

    def __init__(self, needle: str, ignore_case: bool) -> None:
        self._fold = ignore_case
        self._needle = needle.casefold() if ignore_case else needle

    def search(self, line: str) -> bool:
        return self._needle in (line.casefold() if self._fold else line)


def compile_pattern(pattern: str, *, literal: bool, ignore_case: bool) -> _Searcher:
    """A searcher for grep; ValueError with a readable message for a bad pattern.

    Regular expressions use the ``regex`` package (imported here, on first use): its
    matching releases the GIL, so an abort still reaches the tool, and each search has
    a timeout, so a catastrophic pattern is stopped instead of freezing the agent.
    """
    if literal:
        return _Literal(pattern, ignore_case)
    try:
        import regex
    except ImportError:  # pragma: no cover - a dependency of harnessc
        raise ValueError(
            "grep needs the 'regex' package for regular expressions (pip install regex); "
            "literal=true searches without it"
        ) from None
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE if ignore_case else 0)
    except (regex.error, OverflowError, RecursionError) as exc:
        raise ValueError(
            f"Invalid regular expression {pattern!r}: {exc}. "
            "Set literal=true to search for the text as written."
        ) from None
    return _BoundedRegex(compiled)


_MAX_OUTPUT_BYTES = 50 * 1024
_MAX_LINE_CHARS = 64 * 1024  # longer lines are searched in their first 64 K characters only
_MAX_OUTPUT_LINES = 2000


def _clip(line: str) -> str:
    return line if len(line) <= MAX_GREP_LINE else line[:MAX_GREP_LINE] + "... [line truncated]"


class _Output:
    """Lines of output until a cap (lines or bytes) is hit."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.full = False

    def add(self, line: str) -> bool:
        cost = len(line.encode("utf-8", "replace")) + 1
        if len(self.lines) >= _MAX_OUTPUT_LINES or self.size + cost > _MAX_OUTPUT_BYTES:
            self.full = True
            return False
        self.lines.append(line)
        self.size += cost
        return True


def _grep_file(
    entry: Entry,
    searcher: _Searcher,
    context: int,
    remaining: int,
    out: _Output,
    first_group: list[bool],
    stop: Callable[[], bool] | None = None,
) -> int:
    """Search one file (skipped when binary or not a regular file); returns the matches."""
    matches = 0
    before: deque[tuple[int, str]] = deque(maxlen=context or 1)
    after_left = 0
    last_printed = 0
    try:
        raw = open_regular(entry.path)  # a FIFO or device is refused, never blocks
    except OSError:
        return 0
    with raw:
        try:
            if b"\x00" in raw.read(_SNIFF):
                return 0
            raw.seek(0)
        except OSError:
            return 0
        fh = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
        # lines are cut at a bound (a 2 GB line costs no memory); matches show clipped
        for number, (text, _) in enumerate(bounded_lines(fh, _MAX_LINE_CHARS, stop), start=1):
            line = text.rstrip("\r")
            if searcher.search(line):
                if matches >= remaining:
                    break
                pending = (
                    [(no, text) for no, text in before if no > last_printed] if context else []
                )
                start = pending[0][0] if pending else number
                gap = last_printed == 0 or start > last_printed + 1
                if context and gap and not first_group[0]:
                    out.add("--")
                for before_no, before_line in pending:
                    out.add(f"{entry.rel}-{before_no}- {_clip(before_line)}")
                if not out.add(f"{entry.rel}:{number}: {_clip(line)}"):
                    break
                first_group[0] = False
                matches += 1
                last_printed = number
                after_left = context
                before.clear()
            elif after_left:
                out.add(f"{entry.rel}-{number}- {_clip(line)}")
                last_printed = number
                after_left -= 1
            elif context:
                before.append((number, line))
            if out.full:
                break
    return matches


def _grep(params: dict[str, Any], context: Any, stop: Stop) -> ToolResult:
    pattern = params.get("pattern")
    if not isinstance(pattern, str) or pattern == "":
        return error_result("grep needs a non-empty pattern")
    limit = params.get("limit") or DEFAULT_GREP_LIMIT
    around = params.get("context") or 0
    if not isinstance(limit, int) or limit < 1:
        return error_result(f"limit must be a positive integer (got {limit!r})")
    if not isinstance(around, int) or around < 0:
        return error_result(f"context must be 0 or more (got {around!r})")
    try:
        searcher = compile_pattern(
            pattern,
            literal=bool(params.get("literal")),
            ignore_case=bool(params.get("ignore_case")),
        )
    except ValueError as exc:
        return error_result(str(exc))
    try:
        root = resolve_path(params.get("path"), context, read_only=True)
    except PathError as exc:
        return error_result(str(exc))
    shown = display_path(root, context)
    if not root.exists():
        return error_result(f"Path not found: {shown}")
    glob = params.get("glob")
    if glob:
        try:
            compile_glob(str(glob))
        except ValueError as exc:
            return error_result(str(exc))
    stats = WalkStats()
    entries: Any
    if root.is_file():
        entries = [Entry(shown, str(root), False)]
    elif not root.is_dir():
        return error_result(f"{shown} is not a regular file or a folder; grep cannot search it")
    else:
        entries = (
            e
            for e in _walk("grep", root, params, context, stop, stats, dirs=False)
            if not glob or glob_matches(str(glob), e.rel)
        )
    out = _Output()
    total = 0
    files = 0
    first_group = [True]
    try:
        for entry in entries:
            if stop():
                return error_result("grep aborted")
            if total >= limit or out.full:
                break
            found = _grep_file(entry, searcher, around, limit - total, out, first_group, stop)
            if found:
                files += 1
                total += found
    except PatternTimeoutError:
        return error_result(
            f"grep stopped: searching one line with {pattern!r} took over {MAX_SEARCH_S:g} s. "
            "The pattern backtracks catastrophically (nested repetition such as (a+)+ or "
            "(a|aa)+); rewrite it without nested quantifiers, or set literal=true."
        )
    if total == 0:
        where = f" in {shown}" + (f" (glob {glob})" if glob else "")
        text = f"No matches found for {pattern!r}{where}." + _skipped(stats, empty=True)
        return text_result(text, {"matches": 0, **_counts(stats)})
    body = "\n".join(out.lines)
    notices: list[str] = []
    if total >= limit:
        notices.append(
            f"[{limit} matches limit reached. Use limit={limit * 2} for more, "
            "or refine the pattern, path or glob.]"
        )
    if out.full:
        notices.append(
            "[Output truncated at 50 KB / 2000 lines. Refine the pattern, path or glob.]"
        )
    truncated = bool(notices)
    if stats.hidden:
        notices.append(_skipped(stats).strip())
    if notices:
        body += "\n\n" + "\n".join(notices)
    return text_result(
        body,
        {
            "matches": total,
            "files": files,
            "truncated": truncated,
            "limit_reached": total >= limit,
            **_counts(stats),
        },
    )


def _walk(
    tool: str,
    root: Path,
    params: dict[str, Any],
    context: Any,
    stop: Stop,
    stats: WalkStats,
    *,
    dirs: bool,
) -> Iterator[Entry]:
    """The walk of ``root`` for ``tool``: ignore files unless ``no_ignore``, and the
    permission rules' PathFilter from the tool context."""
    env = tool_env(context)
    rules = path_filter(context)
    ignores = None if params.get("no_ignore") else Ignores.above(root, env.workspace)
    return walk(
        root,
        confine=env.workspace if env.confined else None,
        dirs=dirs,
        stop=stop,
        ignores=ignores,
        visible=rules.for_walk(tool, root) if rules is not None else None,
        stats=stats,
    )


def _skipped(stats: WalkStats, *, empty: bool = False) -> str:
    """The notice of what a walk left out: the permission rules' skips always, ignored
    files when nothing was found."""
    parts: list[str] = []
    if stats.hidden:
        parts.append(f"[{_entries(stats.hidden)} skipped by permission rules.]")
    if empty and stats.ignored:
        parts.append(
            f"[{_entries(stats.ignored)} ignored (.gitignore, node_modules, session "
            "transcripts) not searched; no_ignore=true searches them.]"
        )
    return ("\n\n" + "\n".join(parts)) if parts else ""


def _entries(count: int) -> str:
    return f"{count} file or folder" if count == 1 else f"{count} files or folders"


def _counts(stats: WalkStats) -> dict[str, int]:
    return {"skipped_by_rules": stats.hidden, "ignored": stats.ignored}


def _find(params: dict[str, Any], context: Any, stop: Stop) -> ToolResult:
    pattern = params.get("pattern")
    if not isinstance(pattern, str) or not pattern.strip():
        return error_result("find needs a glob pattern, e.g. '*.py'")
    limit = params.get("limit") or DEFAULT_FIND_LIMIT
    if not isinstance(limit, int) or limit < 1:
        return error_result(f"limit must be a positive integer (got {limit!r})")
    try:
        root = resolve_path(params.get("path"), context, read_only=True)
    except PathError as exc:
        return error_result(str(exc))
    shown = display_path(root, context)
    if not root.is_dir():
        return error_result(
            f"Folder not found: {shown}" if not root.exists() else f"{shown} is not a folder"
        )
    try:
        compile_glob(pattern)
    except ValueError as exc:
        return error_result(str(exc))
    found: list[str] = []
    more = False
    stats = WalkStats()
    for entry in _walk("find", root, params, context, stop, stats, dirs=True):
        if stop():
            return error_result("find aborted")
        if glob_matches(pattern, entry.rel, entry.is_dir):
            if len(found) >= limit:
                more = True
                break
            found.append(entry.rel + ("/" if entry.is_dir else ""))
    if not found:
        text = f"No files found matching {pattern!r} in {shown}." + _skipped(stats, empty=True)
        return text_result(text, {"count": 0, **_counts(stats)})
    found.sort()
    out = _Output()
    for item in found:
        if not out.add(item):
            break
    body = "\n".join(out.lines)
    if more:
        body += (
            f"\n\n[{limit} results limit reached. Use limit={limit * 2} for more, "
            "or refine the pattern.]"
        )
    if out.full:
        body += f"\n\n[Output truncated at 50 KB / 2000 lines: showing {len(out.lines)} of {len(found)} results. Refine the pattern or path.]"
    body += _skipped(stats)
    return text_result(body, {"count": len(found), "limit_reached": more, **_counts(stats)})


def create_grep_tool(timeout_s: float | None = DEFAULT_TIMEOUT_S) -> Tool:
    """The ``grep`` built-in (regex or literal; skips .git, ignored and binary files)."""
    return Tool(
        name="grep",
        label="Grep",
        description="Search file contents for a regular expression (or literal text). Output lines are "
        "'path:line: text' (context lines 'path-line- text'). Skips .git, binary files and "
        "what .gitignore files name (no_ignore=true searches those). "
        f"At most limit matches (default {DEFAULT_GREP_LIMIT}).",
        parameters=_GREP_PARAMETERS,
        run=bounded("grep", _grep, timeout_s),
    )


def create_find_tool(timeout_s: float | None = DEFAULT_TIMEOUT_S) -> Tool:
    """The ``find`` built-in (glob over paths; skips .git and ignored files)."""
    return Tool(
        name="find",
        label="Find",
        description="Find files and folders by glob pattern ('*.py' matches names at any depth, "
        "'src/**/*.py' matches paths). Skips .git and what .gitignore files name "
        "(no_ignore=true finds those). "
        f"At most limit results (default {DEFAULT_FIND_LIMIT}).",
        parameters=_FIND_PARAMETERS,
        run=bounded("find", _find, timeout_s),
    )

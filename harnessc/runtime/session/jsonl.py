"""Reading pi session files (one compact JSON object per line), as pi reads them.

Reading is forgiving: a file holding nothing, or only the start of a session header
(a process killed while creating it), is EmptySessionFileError, which an open takes
for a new session; a torn last line (a crash mid-write leaves bytes without a
newline) or a corrupt line anywhere is skipped with a diagnostic naming its line
number; every other parseable line is kept, including those after a corrupt one. An
entry whose parent was lost in such a line is attached to the entry before it in the
file (in memory only, with a diagnostic), so the branch stays whole; a parent that is
simply not in the file is kept, as pi keeps it (the branch starts at that entry).

Bytes that are not UTF-8 and lone surrogates (``\\udXXX`` escapes) are read as
U+FFFD, so such a session opens, builds a context any provider can encode, and can be
written again.

Version-1 and version-2 files migrate on reading as pi migrates them
(``migrateV1ToV2``, ``migrateV2ToV3``): v1 entries get ids and parents (each entry's
parent is the one before it), a v1 compaction's ``firstKeptEntryIndex`` (an index into
the file's parsed lines, the header being 0) becomes ``firstKeptEntryId``, and v2's
``hookMessage`` role becomes ``custom``. The ids pi gives are random; ours are derived
from the session id and the line, so every read of the same file gives the same ids.
Writing (see ``storage``) rewrites a migrated file once, as pi does on open.
"""

from __future__ import annotations

import json
import re
from typing import Any

from msgspec import Struct

from harnessc.runtime.session.encode import encode_line, js_number, without_surrogates
from harnessc.runtime.session.entries import (
    SESSION_VERSION,
    SessionEntry,
    SessionError,
    SessionHeader,
    no_gc,
)

__all__ = [
    "EmptySessionFileError",
    "LoadedSession",
    "SessionFileError",
    "encode_line",
    "js_number",
    "parse_session",
    "read_header",
    "read_session_file",
    "stable_id",
]


class SessionFileError(SessionError):
    """A file that is not a session file (no valid header line)."""


class EmptySessionFileError(SessionFileError):
    """A file holding nothing (or only blank lines), or only the start of a header
    without its newline (a process killed while creating it): it opens as a new
    session, as pi opens an empty file."""


class LoadedSession(Struct):
    header: SessionHeader
    entries: list[SessionEntry]
    diagnostics: list[str] = []
    size: int = 0
    valid_end: int = 0  # bytes to keep: everything but a torn (unparseable) last line
    missing_newline: bool = False  # the last kept line has no newline yet
    migrated_from: int | None = None  # the file's version, when it was migrated on reading


_loads = json.loads
# a \uD800-\uDFFF escape: the line may hold a lone surrogate once parsed
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_HEADER_START = b'{"type":"session",'  # how every header this package writes begins


def parse_session(data: bytes, path: str = "<memory>") -> LoadedSession:
    """Parse a whole session file's bytes; raises SessionFileError without a header
    (EmptySessionFileError for a file with no lines)."""
    with no_gc():
        return _parse_session(data, path)


def _parse_session(data: bytes, path: str) -> LoadedSession:
    if not data.strip():
        raise EmptySessionFileError(f"{path}: empty file")
    lines = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    if ends_with_newline:
        lines.pop()
    # fast path: a well-formed file parses as one JSON array (one C call instead of one
    # per line); anything unusual falls back to reading line by line
    parsed = _parse_all(data, len(lines)) if ends_with_newline else None
    surrogates = _SURROGATE_ESCAPE.search(data) is not None
    try:
        first = parsed[0] if parsed else _load_line(lines[0])
        if surrogates:
            first = without_surrogates(first)
        header = SessionHeader.from_dict(first)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep JSON
        if len(lines) == 1 and not ends_with_newline and data.startswith(_HEADER_START):
            # the only line, cut short: a process killed while creating the file
            raise EmptySessionFileError(
                f"{path}: holds only a torn session header ({len(data)} bytes)"
            ) from None
        raise SessionFileError(f"{path}: line 1 is not a session header ({exc})") from None

    diagnostics: list[str] = []
    entries: list[SessionEntry] = []
    known: set[str] = set()
    last_id: str | None = None  # previous tree entry in file order
    lost_any = False  # a corrupt line came before
    orphans: list[tuple[SessionEntry, int, str | None]] = []  # (entry, line, previous id)
    version = header.version
    migrating = version < SESSION_VERSION
    ids_by_index: list[str | None] = [None]  # v1: id of each parsed line, header at 0
    from_json = SessionEntry.from_json
    n = len(lines)
    pos = len(lines[0]) + 1
    valid_end = min(pos, len(data))
    missing_newline = not ends_with_newline and n == 1
    for index in range(1, n):
        raw = lines[index]
        start = pos
        pos += len(raw) + 1
        last = index == n - 1
        torn = last and not ends_with_newline
        if not raw or raw.isspace():
            if not torn:
                valid_end = pos
            continue
        try:
            obj = parsed[index] if parsed is not None else _load_line(raw)
            if surrogates and _SURROGATE_ESCAPE.search(raw):
                obj = without_surrogates(obj)
            if migrating and type(obj) is dict:
                _migrate(obj, version, header.id, ids_by_index, known)
            entry = from_json(obj)
        except (ValueError, RecursionError) as exc:
            lineno = index + 1
            if torn:
                diagnostics.append(
                    f"{path}:{lineno}: torn last line ({len(raw)} bytes without a newline, "
                    f"{_reason(exc)}) skipped; the next append removes it"
                )
                valid_end = start
            else:
                where = "last line" if last else "line in the middle"
                diagnostics.append(
                    f"{path}:{lineno}: corrupt {where} ({_reason(exc)}) skipped; "
                    "the lines after it are kept"
                )
                valid_end = pos
                lost_any = True
            continue
        lineno = index + 1
        valid_end = min(pos, len(data))
        missing_newline = torn
        if entry.id in known:
            diagnostics.append(f"{path}:{lineno}: duplicate entry id {entry.id!r} skipped")
            continue
        if entry.type == "session":
            diagnostics.append(f"{path}:{lineno}: second session header skipped")
            continue
        parent = entry.parent_id
        if parent is not None and parent not in known:
            if parent == entry.id:
                diagnostics.append(f"{path}:{lineno}: entry {entry.id} is its own parent; a root")
                entry.parent_id = None
            elif lost_any:
                diagnostics.append(
                    f"{path}:{lineno}: entry {entry.id} names parent {parent!r}, which is not "
                    f"in the file (lost in a corrupt line); attached to the previous entry "
                    f"{last_id!r}"
                )
                entry.parent_id = last_id
            else:
                orphans.append((entry, lineno, last_id))
        if entry.type == "leaf":
            target = entry.data.get("targetId")
            if target is not None and target not in known:
                diagnostics.append(
                    f"{path}:{lineno}: leaf move to unknown entry {target!r} ignored"
                )
        else:
            last_id = entry.id
        known.add(entry.id)
        entries.append(entry)
    for entry, lineno, previous in orphans:
        if entry.parent_id in known:  # a parent further down: attach (no cycles)
            diagnostics.append(
                f"{path}:{lineno}: entry {entry.id} names parent {entry.parent_id!r}, which "
                f"comes after it; attached to the previous entry {previous!r}"
            )
            entry.parent_id = previous
        else:
            diagnostics.append(
                f"{path}:{lineno}: entry {entry.id} names parent {entry.parent_id!r}, which "
                "is not in the file; its branch starts there"
            )
    migrated_from = None
    if migrating:
        migrated_from = version
        header.version = SESSION_VERSION
    return LoadedSession(
        header=header,
        entries=entries,
        diagnostics=diagnostics,
        size=len(data),
        valid_end=valid_end,
        missing_newline=missing_newline,
        migrated_from=migrated_from,
    )


def _load_line(raw: bytes) -> Any:
    try:
        return _loads(raw)
    except UnicodeDecodeError:  # not UTF-8: read the bad bytes as U+FFFD
        return _loads(raw.decode("utf-8", "replace"))


def _parse_all(data: bytes, count: int) -> list[Any] | None:
    """Every line of ``data`` (ending with a newline) parsed at once, or None."""
    try:
        text = data[:-1].decode("utf-8")
    except UnicodeDecodeError:
        text = data[:-1].decode("utf-8", "replace")
    try:
        values = _loads("[" + text.replace("\n", ",") + "]")
    except (ValueError, RecursionError):
        return None
    # a line holding anything but one object (or a blank line) makes the counts or
    # the types disagree: then the slow path reports it with its line number
    if len(values) != count or any(type(v) is not dict for v in values):
        return None
    return values


def _migrate(
    obj: dict[str, Any],
    version: int,
    session_id: str,
    ids_by_index: list[str | None],
    known: set[str],
) -> None:
    """pi's migrations of one parsed line, in place (see the module docstring)."""
    if version < 2:
        if obj.get("type") == "session":
            ids_by_index.append(None)
            return
        index = len(ids_by_index)
        entry_id = stable_id(session_id, index, known)
        previous = next((i for i in reversed(ids_by_index) if i is not None), None)
        obj["id"] = entry_id
        obj["parentId"] = previous
        ids_by_index.append(entry_id)
        if obj.get("type") == "compaction":
            kept = obj.get("firstKeptEntryIndex")
            if isinstance(kept, int | float) and not isinstance(kept, bool):
                # pi: entries[firstKeptEntryIndex].id, when that is an entry with an id
                whole = int(kept) if kept == kept and abs(kept) != float("inf") else -1
                if whole == kept and 0 <= whole < len(ids_by_index):
                    target = ids_by_index[whole]
                    if target is not None:
                        obj["firstKeptEntryId"] = target
                del obj["firstKeptEntryIndex"]
    if obj.get("type") == "message":
        message = obj.get("message")
        if type(message) is dict and message.get("role") == "hookMessage":
            message["role"] = "custom"


def stable_id(session_id: str, index: int, taken: set[str]) -> str:
    """An 8-hex-digit entry id for line ``index`` of a file without ids: the same for
    every read of the file, and not in ``taken``."""
    import hashlib  # only migrating files need it

    salt = 0
    while True:
        digest = hashlib.blake2s(f"{session_id}:{index}:{salt}".encode(), digest_size=4)
        candidate = digest.hexdigest()
        if candidate not in taken:
            return candidate
        salt += 1


def _reason(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:117] + "..."


def read_session_file(path: str) -> LoadedSession:
    with open(path, "rb") as f:
        return parse_session(f.read(), path)


def read_header(path: str, max_bytes: int = 1 << 20) -> SessionHeader:
    """The header of a session file, reading its first line only."""
    with open(path, "rb") as f:
        line = f.readline(max_bytes)
    try:
        return SessionHeader.from_dict(_load_line(line))
    except (ValueError, RecursionError) as exc:
        raise SessionFileError(f"{path}: line 1 is not a session header ({exc})") from None

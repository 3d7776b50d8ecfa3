"""Reading and appending pi v3 session files (one compact JSON object per line).

Reading is forgiving: a torn last line (a crash mid-write leaves bytes without a
newline) or a corrupt line anywhere is skipped with a diagnostic naming its line
number; every other parseable line is kept, including those after a corrupt one. An
entry whose parent was lost that way is attached to the entry before it in the file
(in memory only, with a diagnostic), so the branch stays whole.

Writing is append-only: each entry is one ``write`` of one line on an ``O_APPEND``
descriptor (no user-space buffer, so a line reaches the OS at once); ``sync`` fsyncs.
The first append after opening a file with a torn tail truncates that tail (or adds
the missing newline), so the file is valid JSONL again.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from harnessc.runtime.session.lock import lock_exclusive, unlock
from harnessc.runtime.session.session import (
    SessionEntry,
    SessionError,
    SessionHeader,
    SessionReadOnlyError,
    no_gc,
)

__all__ = [
    "JsonlStorage",
    "LoadedSession",
    "ReadOnlyStorage",
    "SessionFileError",
    "encode_line",
    "js_number",
    "parse_session",
    "read_header",
    "read_session_file",
]


class SessionFileError(SessionError):
    """A file that is not a session file (no valid header line)."""


_encode = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
).encode
_encode_ascii = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def encode_line(obj: Any) -> bytes:
    """One JSON line exactly as pi writes it (``JSON.stringify`` + newline), UTF-8.

    Numbers are spelled as JavaScript spells them (``0`` not ``0.0``, ``0.000018`` not
    ``1.8e-05``), so copied pi entries keep their bytes. Non-finite floats become null
    (as in JavaScript); text with lone surrogates is written with ASCII escapes so the
    line stays valid UTF-8.
    """
    try:
        text = _encode(obj)
    except ValueError:
        obj = _finite(obj)
        text = _encode(obj)
    if _FLOAT_HINT.search(text):
        text = _with_js_numbers(obj, text)
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return _encode_ascii(_finite(obj)).encode("ascii") + b"\n"


# Python float spellings JavaScript writes differently: "5.0", "1e-05", "1.5e+16"
_FLOAT_HINT = re.compile(r"[0-9]\.0(?![0-9])|[0-9]e[-+]")
_SENTINEL = "\x00f" + secrets.token_hex(4)


def js_number(value: float) -> str:
    """``value`` as JavaScript's ``Number.prototype.toString`` writes it."""
    if value == 0:
        return "0"
    from decimal import Decimal  # only for unusual floats; decimal costs ms to import

    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exponent)  # value = 0.<text> x 10**point
    size = len(text)
    if size <= point <= 21:
        out = text + "0" * (point - size)
    elif 0 < point <= 21:
        out = f"{text[:point]}.{text[point:]}"
    elif -6 < point <= 0:
        out = "0." + "0" * -point + text
    else:
        mantissa = text[0] + ("." + text[1:] if size > 1 else "")
        out = f"{mantissa}e{'+' if point - 1 >= 0 else '-'}{abs(point - 1)}"
    return ("-" if sign else "") + out


def _with_js_numbers(obj: Any, text: str) -> str:
    numbers: list[str] = []

    def walk(value: Any) -> Any:
        if type(value) is float:
            js = js_number(value)
            if js == repr(value):
                return value
            numbers.append(js)
            return f"{_SENTINEL}{len(numbers) - 1}\x00"
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v) for v in value]
        return value

    swapped = walk(obj)
    if not numbers:
        return text
    text = _encode(swapped)
    for i, js in enumerate(numbers):
        text = text.replace(_encode(f"{_SENTINEL}{i}\x00"), js, 1)
    return text


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


@dataclass(slots=True)
class LoadedSession:
    header: SessionHeader
    entries: list[SessionEntry]
    diagnostics: list[str] = field(default_factory=list)
    size: int = 0
    valid_end: int = 0  # bytes to keep: everything but a torn (unparseable) last line
    missing_newline: bool = False  # the last kept line has no newline yet
    generated_ids: bool = False  # a pre-v2 file whose entries had no ids


_loads = json.loads


def parse_session(data: bytes, path: str = "<memory>") -> LoadedSession:
    """Parse a whole session file's bytes; raises SessionFileError without a header."""
    with no_gc():
        return _parse_session(data, path)


def _parse_session(data: bytes, path: str) -> LoadedSession:
    if not data.strip():
        raise SessionFileError(f"{path}: empty file, not a session")
    lines = data.split(b"\n")
    ends_with_newline = data.endswith(b"\n")
    if ends_with_newline:
        lines.pop()
    if not lines:
        raise SessionFileError(f"{path}: empty file, not a session")
    # fast path: a well-formed file parses as one JSON array (one C call instead of one
    # per line); anything unusual falls back to reading line by line
    parsed = _parse_all(data, len(lines)) if ends_with_newline else None
    try:
        header = SessionHeader.from_dict(parsed[0] if parsed else _loads(lines[0]))
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep JSON
        raise SessionFileError(f"{path}: line 1 is not a session header ({exc})") from None

    diagnostics: list[str] = []
    entries: list[SessionEntry] = []
    known: set[str] = set()
    last_id: str | None = None  # previous tree entry in file order
    lost_before = False  # a line was lost since the previous good entry
    generated = False
    legacy = header.version < 2
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
            obj = parsed[index] if parsed is not None else _loads(raw)
            if legacy and type(obj) is dict and "id" not in obj:
                obj["id"] = _fresh_id(known)
                obj.setdefault("parentId", last_id)
                generated = True
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
                lost_before = True
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
            diagnostics.append(
                f"{path}:{lineno}: entry {entry.id} names parent {parent!r}, which is not "
                f"in the file{' (lost in a corrupt line)' if lost_before else ''}; "
                f"attached to the previous entry {last_id!r}"
            )
            entry.parent_id = last_id
        if entry.type == "leaf":
            target = entry.data.get("targetId")
            if target is not None and target not in known:
                diagnostics.append(
                    f"{path}:{lineno}: leaf move to unknown entry {target!r} ignored"
                )
        else:
            last_id = entry.id
        known.add(entry.id)
        lost_before = False
        entries.append(entry)
    return LoadedSession(
        header=header,
        entries=entries,
        diagnostics=diagnostics,
        size=len(data),
        valid_end=valid_end,
        missing_newline=missing_newline,
        generated_ids=generated,
    )


def _parse_all(data: bytes, count: int) -> list[Any] | None:
    """Every line of ``data`` (ending with a newline) parsed at once, or None."""
    try:
        values = _loads("[" + data[:-1].decode("utf-8").replace("\n", ",") + "]")
    except (ValueError, RecursionError):
        return None
    # a line holding anything but one object (or a blank line) makes the counts or
    # the types disagree: then the slow path reports it with its line number
    if len(values) != count or any(type(v) is not dict for v in values):
        return None
    return values


def _fresh_id(known: set[str]) -> str:
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in known:
            return candidate


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
        return SessionHeader.from_dict(_loads(line))
    except (ValueError, RecursionError) as exc:
        raise SessionFileError(f"{path}: line 1 is not a session header ({exc})") from None


class ReadOnlyStorage:
    """The storage of a session opened read-only: appends are refused."""

    def __init__(self, path: str) -> None:
        self.path = path

    def append(self, line: dict[str, Any]) -> None:
        raise SessionReadOnlyError(f"session {self.path} was opened read-only")

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


class JsonlStorage:
    """Appends lines to a locked session file (see the module docstring)."""

    def __init__(self, path: str, fd: int, *, repair_to: int | None = None, newline: bool = False):
        self.path = path
        self._fd: int | None = fd
        self._repair_to = repair_to  # truncate to this size before the next append
        self._newline = newline  # write a newline before the next append
        self._dirty = False
        self._new_file = False  # the directory entry still needs an fsync

    @staticmethod
    def create(path: str, header: SessionHeader) -> JsonlStorage:
        """Create a new session file holding ``header``, locked for appending."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        try:
            lock_exclusive(fd, path)
            storage = JsonlStorage(path, fd)
            storage._new_file = True
            storage.append(header.to_dict())
        except BaseException:
            os.close(fd)
            raise
        return storage

    @staticmethod
    def open_locked(path: str) -> tuple[JsonlStorage, LoadedSession]:
        """Lock an existing file for appending, then read it (no writer can interleave)."""
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            lock_exclusive(fd, path)
            chunks = []
            while True:
                chunk = os.read(fd, 1 << 24)
                if not chunk:
                    break
                chunks.append(chunk)
            loaded = parse_session(b"".join(chunks), path)
        except BaseException:
            os.close(fd)
            raise
        repair = loaded.valid_end if loaded.valid_end < loaded.size else None
        return JsonlStorage(path, fd, repair_to=repair, newline=loaded.missing_newline), loaded

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, line: dict[str, Any]) -> None:
        fd = self._fd
        if fd is None:
            raise SessionError(f"session {self.path} is closed")
        data = encode_line(line)
        if self._repair_to is not None:
            os.ftruncate(fd, self._repair_to)
            self._repair_to = None
        if self._newline:
            data = b"\n" + data
        view = memoryview(data)
        done = 0
        try:
            while done < len(data):
                done += os.write(fd, view[done:])
        except BaseException:
            if done:  # a partial line: cut it off before the next append
                self._repair_to = os.fstat(fd).st_size - done
            raise
        self._newline = False
        self._dirty = True

    def sync(self) -> None:
        if self._fd is not None and self._dirty:
            os.fsync(self._fd)
            self._dirty = False
        if self._new_file:  # a new file survives a crash only once its directory does
            self._new_file = False
            _fsync_directory(os.path.dirname(self.path) or ".")

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._dirty:
                os.fsync(fd)
            if self._new_file:
                _fsync_directory(os.path.dirname(self.path) or ".")
        finally:
            unlock(fd)
            os.close(fd)


def _fsync_directory(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

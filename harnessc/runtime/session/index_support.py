"""What the session index stores of a message, and what its SQLite errors mean.

A message's text is stored in pieces of at most ``CHUNK_CHARS`` characters (cut at
whitespace where there is some, each piece repeating the last ``CHUNK_OVERLAP``
characters of the one before, so a phrase across a cut is still found): FTS5's
``snippet()`` costs the square of the matches in the text it runs over, so it must only
ever see a short text. At most ``MAX_INDEXED_CHARS`` characters of a message are
indexed; the rows of a longer one carry a note saying so.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from harnessc.runtime.session.entries import SessionError

__all__ = [
    "CHUNK_CHARS",
    "CHUNK_OVERLAP",
    "MAX_CHUNKS",
    "MAX_INDEXED_CHARS",
    "IndexRow",
    "SearchQueryError",
    "SessionIndexBusyError",
    "SessionIndexError",
    "SessionIndexWriteError",
    "clean_text",
    "index_chunks",
    "index_error",
    "index_rows",
    "is_busy",
    "is_corrupt",
    "literal_query",
    "message_text",
    "query_error",
]


class SearchQueryError(ValueError):
    """A search query FTS5 cannot parse."""


class SessionIndexError(SessionError):
    """The index cannot be read or written (the message names the file)."""


class SessionIndexBusyError(SessionIndexError):
    """Another process held the index locked for longer than the busy timeout."""


class SessionIndexWriteError(SessionIndexError):
    """A write to the index failed (disk full, file size limit, I/O error)."""


# what SQLite says of a file that is damaged (as opposed to busy or locked)
_CORRUPT = ("SQLITE_NOTADB", "SQLITE_CORRUPT")
_CORRUPT_TEXT = ("file is not a database", "malformed", "file is encrypted")
_BUSY_TEXT = ("database is locked", "database table is locked", "database is busy")


def message_text(message: Any) -> tuple[str, str] | None:
    """The searchable text of a message: user and assistant text, tool calls (name and
    arguments as JSON) and tool results."""
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role not in ("user", "assistant", "toolResult"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                parts.append(str(block.get("text", "")))
            elif kind == "toolCall":
                name, arguments = str(block.get("name", "")), block.get("arguments")
                if arguments in (None, {}):
                    parts.append(name)
                else:
                    parts.append(f"{name} {json.dumps(arguments, ensure_ascii=False, default=str)}")
        text = "\n".join(parts)
    else:
        return None
    text = text.strip()
    return (str(role), text) if text else None


def is_busy(exc: sqlite3.DatabaseError) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return True
    text = str(exc).lower()
    return any(t in text for t in _BUSY_TEXT)


def is_corrupt(exc: sqlite3.DatabaseError) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(_CORRUPT):
        return True
    text = str(exc).lower()
    return any(t in text for t in _CORRUPT_TEXT)


def index_error(path: str, exc: sqlite3.DatabaseError) -> SessionIndexError:
    if is_busy(exc):
        return SessionIndexBusyError(
            f"the session index {path} is locked by another process; try again ({exc})"
        )
    text = str(exc)
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_READONLY", "SQLITE_CANTOPEN")):
        hint = ""
        if name.startswith(("SQLITE_FULL", "SQLITE_IOERR")):
            hint = " (the disk is full, or the file size limit, ulimit -f, was reached)"
        return SessionIndexWriteError(
            f"cannot write the session index {path}: {text}{hint}; it keeps its previous "
            "state and is refreshed again next time"
        )
    return SessionIndexError(f"session index {path}: {text}")


def clean_text(text: str) -> str:
    """``text`` storable in SQLite: lone surrogates (from ``\\udc80`` escapes) become U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def literal_query(text: str) -> str:
    """A query matching ``text``'s words literally (each word quoted, FTS syntax off)."""
    words = text.split()
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


def query_error(query: str, exc: sqlite3.OperationalError) -> Exception:
    detail = str(exc)
    lowered = detail.lower()
    if not any(
        key in lowered
        for key in ("fts5", "syntax error", "no such column", "unterminated", "unknown special")
    ):
        return exc
    detail = detail.removeprefix("fts5: ")
    return SearchQueryError(
        f"invalid search query {query!r}: {detail}. Queries use FTS5 syntax: words, "
        '"quoted phrases", AND / OR / NOT, prefix*; put text with punctuation in double '
        'quotes (e.g. "foo-bar" or "a.b").'
    )


CHUNK_CHARS = 1000
CHUNK_OVERLAP = 100
MAX_INDEXED_CHARS = 1_000_000
MAX_CHUNKS = 2048  # a piece advances by at least 3/4 CHUNK_CHARS - CHUNK_OVERLAP
CHUNK_BITS = 11  # the piece's number in the row id: 2**CHUNK_BITS == MAX_CHUNKS
SEQ_BITS = 28  # the line's number in the row id; later lines of a file are not indexed
_SPACE = " \n\t\r"


def _last_space(text: str, start: int, end: int) -> int:
    return max(text.rfind(c, start, end) for c in _SPACE)


def _first_space(text: str, start: int, end: int) -> int:
    found = [i for i in (text.find(c, start, end) for c in _SPACE) if i >= 0]
    return min(found) if found else -1


def index_chunks(text: str) -> tuple[list[str], str]:
    """``text`` in the pieces the index stores (see the module doc), and a note when
    only its start is indexed ("" otherwise)."""
    if len(text) <= CHUNK_CHARS:
        return [text], ""
    limit = min(len(text), MAX_INDEXED_CHARS)
    pieces: list[str] = []
    start = 0
    while True:
        end = min(start + CHUNK_CHARS, limit)
        if end < limit:
            space = _last_space(text, start + CHUNK_CHARS * 3 // 4, end)
            if space > start:
                end = space
        pieces.append(text[start:end])
        if end >= limit or len(pieces) == MAX_CHUNKS:
            break
        back = end - CHUNK_OVERLAP
        space = _first_space(text, back, end)
        start = space + 1 if space >= 0 else back
    if end >= len(text):
        return pieces, ""
    return pieces, f"only the first {end:,} of its {len(text):,} characters are searchable"


# rowid (file << (SEQ_BITS + CHUNK_BITS) | line << CHUNK_BITS | piece), session, entry,
# line, role, piece of the text, note when the message is cut
IndexRow = tuple[int, str, str, int, str, str, str]


def index_rows(
    data: bytes, base: int, seq: int, session_id: str | None
) -> tuple[list[IndexRow], int, str | None]:
    """The index rows of a session file's complete lines ``data``, read after line
    ``seq`` (``session_id`` from the header, when it was read before): the rows, the
    number of the last line, and the session id. Lines that are not JSON objects, and
    entries that are not messages with text, give no row; a message gives a row per
    piece of its text (:func:`index_chunks`)."""
    rows: list[IndexRow] = []
    for raw in data.split(b"\n")[:-1] if data else ():
        seq += 1
        if seq >= 1 << SEQ_BITS:
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: absurdly deep JSON
            continue
        if not isinstance(obj, dict):
            continue
        if seq == 1:
            if obj.get("type") == "session" and isinstance(obj.get("id"), str):
                session_id = obj["id"]
            continue
        if session_id is None or obj.get("type") != "message":
            continue
        try:
            found = message_text(obj.get("message"))
        except (ValueError, TypeError, RecursionError):
            continue
        if found is not None:
            role, body = found
            entry_id = clean_text(str(obj.get("id", "")))
            pieces, note = index_chunks(clean_text(body))
            rows.extend(
                (
                    base | seq << CHUNK_BITS | number,
                    clean_text(session_id),
                    entry_id,
                    seq,
                    clean_text(role),
                    piece,
                    note,
                )
                for number, piece in enumerate(pieces)
            )
    return rows, seq, session_id

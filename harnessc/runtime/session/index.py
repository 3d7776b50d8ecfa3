"""Full-text search over the sessions of a repo (kept fresh by ``session_index``).

SQLite FTS5 (WAL) at ``<root>/.index.sqlite`` (mode 0600: it holds the sessions'
text). Indexed: user and assistant text, tool calls (name and arguments, as JSON) and
tool results (role ``toolResult``). ``refresh`` is incremental: an unchanged file (same size and mtime) is
skipped; a file that only grew is read from the byte offset where the last refresh
stopped (verified by the bytes just before it), so only its new lines are indexed; a
file that shrank or changed otherwise is re-indexed; rows of deleted files go.

A message is stored as rows of at most 1,000 characters each (``index_support.py``:
``snippet()`` must only ever run over a short text; a message's first 1,000,000
characters are indexed). Each row's rowid is ``file_id << 39 | line number << 11 |
piece number``, so a file's rows are one rowid range (cheap to delete), a message's rows
share ``rowid >> 11``, and ``seq`` is the entry's line in the file. A search ranks each
message by its best row and makes the snippet from that row.

The index is only a cache, so a damaged file (SQLite reports it is not a database or
is malformed) is deleted and rebuilt. A locked one never is: another process may be
writing it (several agents can share a sessions folder); it is waited for up to
``busy_timeout_s``, then SessionIndexBusyError says so. A write that fails (disk full,
``ulimit -f``) raises SessionIndexWriteError naming the index file; the index keeps its
previous state (the transaction is rolled back, or SQLite already did).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessc.runtime.session.index_support import (
    CHUNK_BITS,
    SEQ_BITS,
    SearchQueryError,
    SessionIndexBusyError,
    SessionIndexError,
    SessionIndexWriteError,
    index_error,
    index_rows,
    is_busy,
    is_corrupt,
    literal_query,
    query_error,
)

__all__ = [
    "INDEX_FILE_NAME",
    "MAX_SEARCH_LIMIT",
    "RefreshStats",
    "SearchHit",
    "SearchQueryError",
    "SessionIndex",
    "SessionIndexBusyError",
    "SessionIndexError",
    "SessionIndexWriteError",
    "literal_query",
]

INDEX_FILE_NAME = ".index.sqlite"
MAX_SEARCH_LIMIT = 50
_SCHEMA_VERSION = "3"  # 2: tool calls and tool results are indexed; 3: in pieces
_TAIL = 64  # bytes before the resume offset that must be unchanged to resume
_FILE_SHIFT = SEQ_BITS + CHUNK_BITS
_PIECE_MASK = (1 << CHUNK_BITS) - 1

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,      -- relative to the root
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    max_seq INTEGER NOT NULL,       -- line number of the last complete line read
    offset INTEGER NOT NULL,        -- byte offset just after that line
    tail BLOB,                      -- the {_TAIL} bytes before offset
    session_id TEXT                 -- NULL: not a session file
);
CREATE VIRTUAL TABLE IF NOT EXISTS messages USING fts5(
    session_id UNINDEXED, entry_id UNINDEXED, seq UNINDEXED, role UNINDEXED, body,
    cut UNINDEXED,                  -- '': the whole message is indexed, else a note
    tokenize='porter'
);
"""


@dataclass(slots=True)
class SearchHit:
    session_id: str
    path: str
    entry_id: str
    role: str
    snippet: str  # matched terms between [ and ]; a note at the end when the message is
    # only indexed in part
    score: float  # -bm25 of the message's best piece: higher is better


@dataclass(slots=True)
class RefreshStats:
    files_seen: int = 0
    files_indexed: int = 0  # read from the start
    files_appended: int = 0  # only new lines read
    files_removed: int = 0
    messages_added: int = 0


class SessionIndex:
    """The full-text index of the session files under ``root``; thread-safe."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        db_path: str | None = None,
        *,
        busy_timeout_s: float = 10.0,
    ) -> None:
        self.root = Path(os.path.abspath(os.fspath(root)))
        self.db_path = db_path or str(self.root / INDEX_FILE_NAME)
        self.busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    # -- connection ----------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            if not self.root.is_dir():
                self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            deadline = time.monotonic() + self.busy_timeout_s
            rebuilt = False
            while True:
                try:
                    self._conn = self._open()
                    break
                except sqlite3.DatabaseError as exc:
                    if is_busy(exc):
                        # another connection holds the file (often: creating it at the
                        # same moment); a locked index is never damaged, wait for it
                        if time.monotonic() >= deadline:
                            raise SessionIndexBusyError(
                                f"the session index {self.db_path} stayed locked by another "
                                f"process for {self.busy_timeout_s:g} s; try again"
                            ) from None
                        time.sleep(0.05)
                        continue
                    if is_corrupt(exc) and not rebuilt:
                        # a damaged index is only a cache: rebuild it
                        rebuilt = True
                        for suffix in ("", "-wal", "-shm"):
                            try:
                                os.unlink(self.db_path + suffix)
                            except FileNotFoundError:
                                pass
                        continue
                    raise index_error(self.db_path, exc) from None
        return self._conn

    def _open(self) -> sqlite3.Connection:
        try:  # created by us: the owner's alone (SQLite gives -wal/-shm the same mode)
            os.close(os.open(self.db_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
        except OSError as exc:
            raise SessionIndexWriteError(
                f"cannot create the session index {self.db_path}: {exc.strerror}"
            ) from None
        conn = sqlite3.connect(
            self.db_path,
            check_same_thread=False,
            isolation_level=None,
            timeout=self.busy_timeout_s,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            row = None
            try:
                row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            except sqlite3.OperationalError:
                pass
            if row is not None and row[0] != _SCHEMA_VERSION:
                conn.executescript(
                    "DROP TABLE IF EXISTS messages; DROP TABLE IF EXISTS files; "
                    "DROP TABLE IF EXISTS meta;"
                )
            conn.executescript(_SCHEMA)
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema', ?)", (_SCHEMA_VERSION,)
            )
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> SessionIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- refresh ----------------------------------------------------------------

    def _session_files(self) -> dict[str, os.stat_result]:
        found: dict[str, os.stat_result] = {}
        if not self.root.is_dir():
            return found
        root = os.path.realpath(self.root)
        for directory in os.scandir(self.root):
            if directory.name.startswith(".") or not directory.is_dir():
                continue
            if not _inside(directory.path, root):
                continue  # a link out of the root: its files are not ours to read
            try:
                entries = list(os.scandir(directory.path))
            except OSError:
                continue
            for entry in entries:
                if entry.name.endswith(".jsonl") and entry.is_file():
                    if entry.is_symlink() and not _inside(entry.path, root):
                        continue
                    try:
                        found[f"{directory.name}/{entry.name}"] = entry.stat()
                    except OSError:
                        continue
        return found

    def refresh(self) -> RefreshStats:
        """Bring the index up to date with the files (see the module docstring)."""
        stats = RefreshStats()
        with self._lock:
            conn = self._connection()
            files = self._session_files()
            stats.files_seen = len(files)
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise index_error(self.db_path, exc) from None
            try:
                known = {
                    row[1]: row
                    for row in conn.execute(
                        "SELECT id, path, mtime_ns, size, max_seq, offset, tail, session_id "
                        "FROM files"
                    )
                }
                for rel, row in known.items():
                    if rel not in files:
                        self._drop_rows(conn, row[0])
                        conn.execute("DELETE FROM files WHERE id = ?", (row[0],))
                        stats.files_removed += 1
                for rel, st in files.items():
                    row = known.get(rel)
                    if row is not None and row[2] == st.st_mtime_ns and row[3] == st.st_size:
                        continue
                    self._index_file(conn, rel, st, row, stats)
                conn.execute("COMMIT")
            except BaseException as exc:
                # SQLite rolls back by itself after some errors (a full disk, an I/O
                # error): only an open transaction is rolled back here
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.DatabaseError:
                        pass
                if isinstance(exc, sqlite3.DatabaseError):
                    raise index_error(self.db_path, exc) from None
                raise
        return stats

    @staticmethod
    def _drop_rows(conn: sqlite3.Connection, file_id: int) -> None:
        low = file_id << _FILE_SHIFT
        conn.execute(
            "DELETE FROM messages WHERE rowid BETWEEN ? AND ?",
            (low, low | ((1 << _FILE_SHIFT) - 1)),
        )

    def _index_file(
        self,
        conn: sqlite3.Connection,
        rel: str,
        st: os.stat_result,
        row: tuple[Any, ...] | None,
        stats: RefreshStats,
    ) -> None:
        path = self.root / rel
        try:
            with open(path, "rb") as f:
                resume = False
                if row is not None and row[7] is not None and 0 < row[5] <= st.st_size:
                    tail: bytes = row[6] or b""
                    f.seek(row[5] - len(tail))
                    resume = f.read(len(tail)) == tail
                if not resume:
                    f.seek(0)
                data = f.read()
        except OSError:
            return  # vanished or unreadable: try again next time
        if row is None:
            cursor = conn.execute(
                "INSERT INTO files(path, mtime_ns, size, max_seq, offset) VALUES (?, ?, ?, 0, 0)",
                (rel, st.st_mtime_ns, st.st_size),
            )
            file_id = int(cursor.lastrowid or 0)
        else:
            file_id = int(row[0])
        if resume:
            assert row is not None
            offset, seq, session_id = int(row[5]), int(row[4]), row[7]
            stats.files_appended += 1
        else:
            if row is not None:
                self._drop_rows(conn, file_id)
            offset, seq, session_id = 0, 0, None
            stats.files_indexed += 1
        end = data.rfind(b"\n") + 1  # only complete lines
        rows, seq, session_id = index_rows(data[:end], file_id << _FILE_SHIFT, seq, session_id)
        if rows:
            conn.executemany(
                "INSERT INTO messages(rowid, session_id, entry_id, seq, role, body, cut) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            stats.messages_added += sum(1 for row in rows if not row[0] & _PIECE_MASK)
        new_offset = offset + end
        previous_tail: bytes = (row[6] or b"") if resume and row is not None else b""
        tail_bytes = (previous_tail + data[:end])[-_TAIL:] if new_offset else b""
        conn.execute(
            "UPDATE files SET mtime_ns=?, size=?, max_seq=?, offset=?, tail=?, session_id=? "
            "WHERE id=?",
            (st.st_mtime_ns, st.st_size, seq, new_offset, tail_bytes, session_id, file_id),
        )

    # -- search -------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """The best matches of ``query`` (FTS5 syntax), ranked by bm25; at most 50."""
        if not query or not query.strip():
            return []
        limit = max(1, min(int(limit), MAX_SEARCH_LIMIT))
        with self._lock:
            conn = self._connection()
            try:
                # each message once, by its best piece (SQLite takes the bare columns
                # from the row holding the min); snippets only for the pieces shown
                best = conn.execute(
                    "SELECT m.rowid, m.session_id, m.entry_id, m.role, m.cut, f.path, m.best "
                    "FROM (SELECT rowid, session_id, entry_id, role, cut, min(rank) AS best "
                    f"FROM messages WHERE messages MATCH ? GROUP BY rowid >> {CHUNK_BITS} "
                    "ORDER BY best LIMIT ?) AS m "
                    f"JOIN files AS f ON f.id = (m.rowid >> {_FILE_SHIFT}) ORDER BY m.best",
                    (query, limit),
                ).fetchall()
                hits = []
                for rowid, session_id, entry_id, role, cut, path, rank in best:
                    (snip,) = conn.execute(
                        "SELECT snippet(messages, 4, '[', ']', '…', 16) FROM messages "
                        "WHERE messages MATCH ? AND rowid = ?",
                        (query, rowid),
                    ).fetchone()
                    hits.append(
                        SearchHit(
                            session_id=session_id,
                            path=str(self.root / path),
                            entry_id=entry_id,
                            role=role,
                            snippet=f"{snip} [{cut}]" if cut else snip,
                            score=-float(rank),
                        )
                    )
            except sqlite3.OperationalError as exc:
                raise query_error(query, exc) from None
        return hits

    def count(self) -> int:
        """Indexed messages."""
        with self._lock:
            row = (
                self._connection()
                .execute(f"SELECT count(*) FROM messages WHERE rowid & {_PIECE_MASK} = 0")
                .fetchone()
            )
            return int(row[0])


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

"""Sessions in PostgreSQL: the ``SessionRepo`` protocol over psycopg 3 (extra ``postgres``).

One row per session (the header and what ``list`` shows) and one row per pi v3 entry,
holding the entry's JSON line exactly as the JSONL store writes it, so a session
exported back to a file is byte for byte what the JSONL store would have written (and a
pi file imported and exported again keeps its bytes). User and assistant text is kept
in a ``tsvector`` column with a GIN index for full-text search.

One writer per session, as with files: a session opened for appending holds a
PostgreSQL advisory lock on its own connection, released when it is closed or its
process dies. Appends commit one by one without waiting for the WAL flush
(``synchronous_commit = off``: an append survives the death of the writing process at
once, and a crash of the server once ``sync`` returned), ``sync`` waits for the flush.
Every table lives in one schema (default ``harnessc``), created on first use.

psycopg is imported when a repo is first used, never by ``import harnessc.runtime``.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import time
from typing import TYPE_CHECKING, Any

from harnessc.runtime.session.jsonl import parse_session, read_session_file
from harnessc.runtime.session.lock import SessionLockedError
from harnessc.runtime.session.postgres_storage import (
    PostgresStorage,
    ReadOnlyRows,
    connect,
    entry_line,
    redact_url,
    schema_ddl,
)
from harnessc.runtime.session.repo import (
    JsonlSessionRepo,
    SessionMeta,
    SessionNotFoundError,
    SessionRepo,
    cwd_slug,
    session_file_name,
)
from harnessc.runtime.session.session import (
    Session,
    SessionEntry,
    SessionError,
    SessionHeader,
)
from harnessc.runtime.session.stores import SessionStore

if TYPE_CHECKING:
    from harnessc.runtime.session.index import SearchHit

__all__ = ["PostgresSessionRepo"]

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_SCHEMA_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_PATH_PREFIX = "postgres:"


class PostgresSessionRepo(SessionStore):
    """Sessions as rows in PostgreSQL (see the module docstring)."""

    def __init__(self, url: str, *, schema: str = "harnessc") -> None:
        if not url:
            raise SessionError("session.repo: postgres needs a url (session.url)")
        if not _SCHEMA_RE.match(schema):
            raise SessionError(f"invalid schema name {schema!r} (lower-case letters, digits, _)")
        self.url = url
        self.schema = schema
        self.skipped: list[tuple[str, str]] = []
        self._conn: Any = None

    def __repr__(self) -> str:
        return f"PostgresSessionRepo({redact_url(self.url)!r}, schema={self.schema!r})"

    # -- connections -----------------------------------------------------------

    def _db(self) -> Any:
        """The repo's own connection (list, open, delete), made and schema-checked once."""
        if self._conn is None or self._conn.closed:
            conn = connect(self.url)
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('harnessc-ddl', 0))")
                conn.execute(schema_ddl(self.schema))
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _lock(self, conn: Any, session_id: str) -> bool:
        row = conn.execute(
            "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
            (f"harnessc:{self.schema}:{session_id}",),
        ).fetchone()
        return bool(row and row[0])

    def path_of(self, session_id: str) -> str:
        """What ``SessionMeta.path`` holds for this store: ``postgres:<schema>/<id>``."""
        return f"{_PATH_PREFIX}{self.schema}/{session_id}"

    # -- create / open -----------------------------------------------------------

    def start(self, header: SessionHeader) -> Session:
        """The rows of a new session (``create``), locked."""
        self._insert_header(header, entry_line(header.to_dict()))
        return self._open_id(header.id, read_only=False)

    def _insert_header(self, header: SessionHeader, header_line: str) -> None:
        self._db().execute(
            f"INSERT INTO {self.schema}.sessions(id, cwd, created, header, version, "
            "parent_session, metadata, modified, size) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                header.id,
                header.cwd,
                header.timestamp,
                header_line,
                header.version,
                header.parent_session,
                json.dumps(header.metadata),
                time.time(),
                len(header_line.encode("utf-8")) + 1,
            ),
        )

    def open(
        self, target: SessionMeta | str | os.PathLike[str], *, read_only: bool = False
    ) -> Session:
        """Open a session by meta, id, unique id prefix or ``postgres:<schema>/<id>``.

        Unless ``read_only``, the session is locked for appending (SessionLockedError
        when another connection holds it).
        """
        return self._open_id(self.resolve(target), read_only=read_only)

    def resolve(self, target: SessionMeta | str | os.PathLike[str]) -> str:
        """The id of a meta, id, id prefix or ``postgres:`` path."""
        text = target.id if isinstance(target, SessionMeta) else os.fspath(target)
        if text.startswith(_PATH_PREFIX):
            schema, _, text = text[len(_PATH_PREFIX) :].partition("/")
            if schema != self.schema:
                raise SessionNotFoundError(f"{target} is in schema {schema!r}, not {self.schema!r}")
        if not _ID_RE.match(text):
            raise SessionNotFoundError(f"{text!r} is not a session id")
        rows = (
            self._db()
            .execute(
                f"SELECT id FROM {self.schema}.sessions WHERE id = %s OR starts_with(id, %s) "
                "ORDER BY id <> %s, id LIMIT 6",
                (text, text, text),
            )
            .fetchall()
        )
        ids = [r[0] for r in rows]
        if not ids:
            raise SessionNotFoundError(f"no session {text!r} in {self!r}")
        if ids[0] != text and len(ids) > 1:
            raise SessionNotFoundError(f"session id {text!r} is ambiguous: {', '.join(ids[:5])}")
        return str(ids[0])

    def _open_id(self, session_id: str, *, read_only: bool) -> Session:
        conn = self._db() if read_only else connect(self.url)
        try:
            if not read_only and not self._lock(conn, session_id):
                raise SessionLockedError(self.path_of(session_id))
            loaded = self._load(conn, session_id)
        except BaseException:
            if not read_only:
                conn.close()
            raise
        storage: Any
        if read_only:
            storage = ReadOnlyRows(session_id)
        else:
            storage = PostgresStorage(self.schema, session_id, conn, loaded[1])
        header, entries, diagnostics = loaded[0]
        return Session(header=header, entries=entries, storage=storage, diagnostics=diagnostics)

    def _load(
        self, conn: Any, session_id: str
    ) -> tuple[tuple[SessionHeader, list[SessionEntry], list[str]], int]:
        s = self.schema
        row = conn.execute(
            f"SELECT header FROM {s}.sessions WHERE id = %s", (session_id,)
        ).fetchone()
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r} in {self!r}")
        lines = conn.execute(
            f"SELECT line, seq FROM {s}.entries WHERE session_id = %s ORDER BY seq", (session_id,)
        ).fetchall()
        data = "\n".join([row[0], *(r[0] for r in lines)]) + "\n"
        parsed = parse_session(data.encode("utf-8"), self.path_of(session_id))
        seq = lines[-1][1] if lines else 0
        return (parsed.header, parsed.entries, parsed.diagnostics), seq

    # -- list / search -----------------------------------------------------------

    def list(self, cwd: str | None = None, *, full: bool = False) -> list[SessionMeta]:
        """Sessions (of ``cwd``, else all), most recently modified first (``full`` changes
        nothing here: the latest name is always known)."""
        query = (
            "SELECT id, cwd, created, modified, size, name, first_prompt, parent_session, "
            f"metadata, version FROM {self.schema}.sessions"
        )
        params: tuple[Any, ...] = ()
        if cwd is not None:
            query += " WHERE cwd = %s"
            params = (os.path.abspath(cwd),)
        rows = (
            self._db().execute(query + " ORDER BY modified DESC, created DESC", params).fetchall()
        )
        return [
            SessionMeta(
                id=r[0],
                path=self.path_of(r[0]),
                cwd=r[1],
                timestamp=r[2],
                modified=r[3],
                size=r[4],
                name=r[5],
                first_prompt=r[6],
                parent_session=r[7],
                metadata=r[8] if isinstance(r[8], dict) else {},
                version=r[9],
            )
            for r in rows
        ]

    def search(self, query: str, limit: int = 20) -> builtins.list[SearchHit]:
        """User and assistant messages matching ``query`` (web-search syntax: words,
        "quoted phrases", OR, -word), best first; matched terms between [ and ]."""
        from harnessc.runtime.session.index import SearchHit

        rows = (
            self._db()
            .execute(
                "WITH q AS (SELECT websearch_to_tsquery('english', %s) AS q) "
                "SELECT e.session_id, e.id, e.role, ts_headline('english', e.body, q.q, "
                "'StartSel=[, StopSel=], MaxFragments=2, MaxWords=20, MinWords=5'), "
                f"ts_rank(e.tsv, q.q) FROM {self.schema}.entries e, q WHERE e.tsv @@ q.q "
                "ORDER BY 5 DESC, e.session_id, e.seq LIMIT %s",
                (query, max(1, min(limit, 50))),
            )
            .fetchall()
        )
        return [
            SearchHit(
                session_id=r[0],
                path=self.path_of(r[0]),
                entry_id=r[1],
                role=r[2] or "",
                snippet=r[3] or "",
                score=float(r[4]),
            )
            for r in rows
        ]

    # -- delete -----------------------------------------------------------

    def delete(self, meta: SessionMeta | str | os.PathLike[str]) -> None:
        """Delete a session and its entries; refused while a writer holds it."""
        session_id = self.resolve(meta)
        conn = connect(self.url)
        try:
            if not self._lock(conn, session_id):
                raise SessionLockedError(self.path_of(session_id))
            conn.execute(f"DELETE FROM {self.schema}.sessions WHERE id = %s", (session_id,))
        finally:
            conn.close()

    def parent_of(self, session: Session) -> str | None:
        """A fork's ``parentSession``: the source's ``postgres:`` path."""
        return self.path_of(session.id)

    # -- JSONL export / import ---------------------------------------------------

    def export_jsonl(self, target: SessionMeta | str, root: str | os.PathLike[str]) -> str:
        """Write a session as a pi v3 file in ``JsonlSessionRepo(root)``'s layout; its path."""
        session_id = self.resolve(target)
        conn = self._db()
        row = conn.execute(
            f"SELECT header, cwd FROM {self.schema}.sessions WHERE id = %s", (session_id,)
        ).fetchone()
        lines = conn.execute(
            f"SELECT line FROM {self.schema}.entries WHERE session_id = %s ORDER BY seq",
            (session_id,),
        ).fetchall()
        header = SessionHeader.from_dict(json.loads(row[0]))
        directory = JsonlSessionRepo(root).root / cwd_slug(row[1] or "/")
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / session_file_name(header)
        data = "".join(f"{text}\n" for text in [row[0], *(r[0] for r in lines)]).encode("utf-8")
        with open(path, "xb") as f:  # never overwrite a file already there
            f.write(data)
        return str(path)

    def import_jsonl(self, path: str | os.PathLike[str]) -> SessionMeta:
        """Copy a session file (pi v1-v3) into the repo under its own id; problems the
        file reader reports are in ``self.skipped``. Refused if the id is already here."""
        loaded = read_session_file(os.fspath(path))
        if loaded.migrated_from is not None:  # a v1/v2 file: store the v3 header pi would
            from harnessc.runtime.session.encode import encode_line

            header_line = encode_line(loaded.header.to_dict()).rstrip(b"\n").decode("utf-8")
        else:  # v3: the header line byte for byte
            with open(path, "rb") as f:
                header_line = f.readline().rstrip(b"\r\n").decode("utf-8")
        self.skipped = [(os.fspath(path), d) for d in loaded.diagnostics]
        header = loaded.header
        if (
            self._db()
            .execute(f"SELECT 1 FROM {self.schema}.sessions WHERE id = %s", (header.id,))
            .fetchone()
        ):
            raise SessionError(f"session {header.id} is already in {self!r}")
        self._insert_header(header, header_line)
        with self._open_id(header.id, read_only=False) as session:
            storage = session.storage
            assert isinstance(storage, PostgresStorage)
            for entry in loaded.entries:
                storage.append(entry.to_dict())
        (meta,) = [m for m in self.list(header.cwd) if m.id == header.id]
        return meta


def _conforms(repo: PostgresSessionRepo) -> SessionRepo:
    return repo  # mypy checks that PostgresSessionRepo implements the protocol

"""The rows of the PostgreSQL session store: schema, connections, and the storage that
appends a session's entries (see ``harnessc.runtime.session.postgres``)."""

from __future__ import annotations

import time
from typing import Any

from harnessc.runtime.session.jsonl import encode_line
from harnessc.runtime.session.session import SessionError, SessionReadOnlyError
from harnessc.runtime.support.urls import redact_url

__all__ = ["PostgresStorage", "ReadOnlyRows", "connect", "entry_line", "redact_url", "schema_ddl"]


def schema_ddl(schema: str) -> str:
    return f"""
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.sessions(
    id text PRIMARY KEY,
    cwd text NOT NULL,
    created text NOT NULL,
    header text NOT NULL,
    version integer NOT NULL,
    parent_session text,
    metadata jsonb NOT NULL DEFAULT '{{}}',
    modified double precision NOT NULL,
    size bigint NOT NULL DEFAULT 0,
    name text,
    first_prompt text
);
CREATE INDEX IF NOT EXISTS sessions_cwd_modified ON {schema}.sessions(cwd, modified DESC);
CREATE TABLE IF NOT EXISTS {schema}.entries(
    session_id text NOT NULL REFERENCES {schema}.sessions(id) ON DELETE CASCADE,
    seq integer NOT NULL,
    id text NOT NULL,
    type text NOT NULL,
    line text NOT NULL,
    role text,
    body text,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', coalesce(body, ''))) STORED,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS entries_tsv ON {schema}.entries USING gin(tsv);
"""


def connect(url: str) -> Any:
    try:
        import psycopg
    except ImportError:
        raise SessionError(
            "session.repo: postgres needs psycopg 3: pip install 'harnessc[postgres]'"
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        detail = redact_url(str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        raise SessionError(f"cannot connect to PostgreSQL at {redact_url(url)}: {detail}") from None
    conn.execute("SET synchronous_commit = off")
    return conn


def _searchable(line: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(role, text for search, first-prompt candidate) of an entry's JSON form."""
    if line.get("type") != "message":
        return None, None, None
    message = line.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    if role not in ("user", "assistant"):
        return None, None, None
    assert isinstance(message, dict)
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "".join(
            str(c.get("text", ""))
            for c in content
            if isinstance(c, dict) and c.get("type") == "text"
        )
    else:
        text = ""
    text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").replace("\x00", "")
    return str(role), text or None, text if role == "user" else None


def entry_line(line: dict[str, Any]) -> str:
    """The entry's line as stored: the JSONL store's bytes without the newline."""
    return encode_line(line)[:-1].decode("utf-8")


class PostgresStorage:
    """Appends a session's entries as rows, holding the session's writer lock."""

    def __init__(self, schema: str, session_id: str, conn: Any, seq: int) -> None:
        self.schema = schema
        self.session_id = session_id
        self._conn: Any = conn
        self._seq = seq
        self._dirty = False

    @property
    def closed(self) -> bool:
        return self._conn is None

    def append(self, line: dict[str, Any]) -> None:
        conn = self._conn
        if conn is None:
            raise SessionError(f"session {self.session_id} is closed")
        role, body, prompt = _searchable(line)
        is_info = line.get("type") == "session_info"
        name = str(line.get("name")) if is_info and line.get("name") else None
        text = entry_line(line)
        s = self.schema
        conn.execute(
            f"WITH e AS (INSERT INTO {s}.entries(session_id, seq, id, type, line, role, body) "
            "VALUES (%(sid)s, %(seq)s, %(id)s, %(type)s, %(line)s, %(role)s, %(body)s)) "
            f"UPDATE {s}.sessions SET modified = %(now)s, size = size + %(size)s, "
            "name = CASE WHEN %(info)s THEN %(name)s ELSE name END, "
            "first_prompt = coalesce(first_prompt, %(prompt)s) WHERE id = %(sid)s",
            {
                "sid": self.session_id,
                "seq": self._seq + 1,
                "id": str(line.get("id", "")),
                "type": str(line.get("type", "")),
                "line": text,
                "role": role,
                "body": body,
                "now": time.time(),
                "size": len(text.encode("utf-8")) + 1,
                "info": is_info,
                "name": name,
                "prompt": prompt,
            },
        )
        self._seq += 1
        self._dirty = True

    def sync(self) -> None:
        """Wait until every append is flushed to the server's WAL."""
        conn = self._conn
        if conn is None or not self._dirty:
            return
        with conn.transaction():
            conn.execute("SET LOCAL synchronous_commit = on")
            conn.execute(
                f"UPDATE {self.schema}.sessions SET modified = modified WHERE id = %s",
                (self.session_id,),
            )
        self._dirty = False

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            if self._dirty:
                self._conn = conn
                self.sync()
                self._conn = None
        finally:
            conn.close()  # the advisory lock goes with the connection


class ReadOnlyRows:
    """The storage of a session opened read-only: appends are refused."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id

    def append(self, line: dict[str, Any]) -> None:
        raise SessionReadOnlyError(f"session {self.session_id} was opened read-only")

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass

"""The agent's session store as every door uses it: listing an agent's sessions, the
latest one of a folder, full-text search, and dropping a fresh session a run never used.

Everything here works on any ``SessionRepo`` (JSONL files, PostgreSQL, ...): a store that
keeps its sessions as files under a folder (``FileSessionRepo``: a ``root``) is searched
through the SQLite index beside them, a store with a ``search`` method
(``SearchableSessionRepo``) searches itself. Each call reads files or a database: a
served door calls them off its event loop (``asyncio.to_thread``).
"""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from harnessc.runtime.runs.errors import SetupError
from harnessc.runtime.session.repo_protocol import SessionRepo
from harnessc.runtime.session.session import Session, SessionError

if TYPE_CHECKING:
    from harnessc.runtime.session.index import SearchHit
    from harnessc.runtime.session.repo import SessionMeta

__all__ = [
    "FileSessionRepo",
    "SearchableSessionRepo",
    "describe_repo",
    "discard_if_empty",
    "discard_if_unused",
    "has_exchange",
    "is_agents",
    "latest_session",
    "list_sessions",
    "search_repo",
    "search_sessions",
]


@runtime_checkable
class FileSessionRepo(Protocol):
    """A store that keeps sessions as files under ``root`` (the JSONL store)."""

    root: Path


@runtime_checkable
class SearchableSessionRepo(Protocol):
    """A store that searches its sessions itself (PostgreSQL's full-text search)."""

    def search(self, query: str, limit: int = 20) -> builtins.list[SearchHit]: ...


def describe_repo(repo: SessionRepo) -> str:
    """Where a store keeps its sessions, for messages (never a password)."""
    return str(repo.root) if isinstance(repo, FileSessionRepo) else repr(repo)


def _drop_stored(session: Session, repo: SessionRepo | None) -> bool:
    """Delete a closed session from where it is stored: its file, or its rows in ``repo``
    (a store without files). True when it is gone."""
    if session.path:
        try:
            os.unlink(session.path)
        except OSError:
            return False
        return True
    if repo is None or session.storage is None:
        return False  # in memory: nothing stored
    try:
        repo.delete(session.id)
    except SessionError:
        return False
    return True


def discard_if_empty(session: Session | None, repo: SessionRepo | None = None) -> None:
    """Close a fresh session that got no entries and delete it (a run that never began).

    ``repo``: the store a session without a file lives in (PostgreSQL), to delete it there.
    """
    if session is None:
        return
    empty = len(session) == 0
    session.close()
    if empty:
        _drop_stored(session, repo)


def has_exchange(session: Session) -> bool:
    """Whether the model ever answered in ``session`` (an error reply does not count)."""
    for entry in session.entries():
        if entry.type != "message":
            continue
        raw = entry.data.get("message")
        if isinstance(raw, dict) and raw.get("role") == "assistant":
            if raw.get("stopReason") != "error":
                return True
    return False


def discard_if_unused(session: Session | None, repo: SessionRepo | None = None) -> bool:
    """Close a fresh session and delete it when the model never answered in it (a first
    request that failed: 401, connection refused). True when it was deleted."""
    if session is None:
        return False
    if len(session) and has_exchange(session):
        session.close()
        return False
    session.close()
    return _drop_stored(session, repo)


def is_agents(meta: SessionMeta, agent_name: str | None) -> bool:
    """A session of this agent, or one no agent claims (pi files, the Python API)."""
    owner = meta.metadata.get("agent") if isinstance(meta.metadata, dict) else None
    return agent_name is None or owner is None or owner == agent_name


def latest_session(repo: SessionRepo, cwd: str, agent_name: str) -> SessionMeta | None:
    """The most recently modified session of this agent in ``cwd`` (agents often share a
    session directory: another agent's session is never continued by default)."""
    return next((meta for meta in repo.list(cwd) if is_agents(meta, agent_name)), None)


def list_sessions(repo: SessionRepo, agent_name: str | None = None) -> list[SessionMeta]:
    """The sessions, newest first; with ``agent_name`` only that agent's (and untagged ones).
    Files are read through for the latest name; other stores always know it."""
    if isinstance(repo, FileSessionRepo):
        metas = repo.list(full=True)  # type: ignore[call-arg]  # the JSONL store's flag
    else:
        metas = repo.list()
    return [meta for meta in metas if is_agents(meta, agent_name)]


def search_sessions(root: str | os.PathLike[str], query: str) -> list[Any]:
    """Refresh the full-text index beside the sessions and search it.

    A query FTS5 cannot parse is searched again as literal words.
    """
    from harnessc.runtime.session.index import SearchQueryError, SessionIndex, literal_query

    with SessionIndex(root) as index:
        index.refresh()
        try:
            return index.search(query, limit=20)
        except SearchQueryError:
            return index.search(literal_query(query), limit=20)


def search_repo(repo: SessionRepo, query: str) -> list[Any]:
    """The 20 best hits for ``query`` in any store that can be searched."""
    if isinstance(repo, SearchableSessionRepo):
        return repo.search(query, limit=20)
    if isinstance(repo, FileSessionRepo):
        return search_sessions(repo.root, query)
    raise SetupError(f"{describe_repo(repo)} cannot be searched")

"""The ``SessionRepo`` protocol and what a repository lists: light to import,
so code that works on any store does not load the JSONL one."""

from __future__ import annotations

import os
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from harnessc.runtime.session.session import Session, SessionError
from harnessc.runtime.support.records import NEW_DICT, Record

__all__ = ["ForkPosition", "SessionMeta", "SessionNotFoundError", "SessionRef", "SessionRepo"]

ForkPosition: TypeAlias = Literal["before", "at"]


class SessionNotFoundError(SessionError, LookupError):
    """No session with that id (or path) in the repo."""


class SessionMeta(Record):
    """What ``list`` knows about a session without opening it."""

    __slots__ = (
        "id",
        "path",
        "cwd",
        "timestamp",
        "modified",
        "size",
        "name",
        "first_prompt",
        "parent_session",
        "metadata",
        "version",
    )
    id: str
    path: str
    cwd: str
    timestamp: str  # header creation time (ISO)
    modified: float  # file mtime, seconds since the epoch
    size: int
    name: str | None  # latest session_info name (see JsonlSessionRepo.list)
    first_prompt: str | None  # text of the first user message
    parent_session: str | None
    metadata: dict[str, Any]
    version: int

    def __init__(
        self,
        id: str,
        path: str,
        cwd: str = "",
        timestamp: str = "",
        modified: float = 0.0,
        size: int = 0,
        name: str | None = None,
        first_prompt: str | None = None,
        parent_session: str | None = None,
        metadata: dict[str, Any] = NEW_DICT,
        version: int = 3,
    ) -> None:
        self.id = id
        self.path = path
        self.cwd = cwd
        self.timestamp = timestamp
        self.modified = modified
        self.size = size
        self.name = name
        self.first_prompt = first_prompt
        self.parent_session = parent_session
        self.metadata = {} if metadata is NEW_DICT else metadata
        self.version = version


SessionRef: TypeAlias = "SessionMeta | Session | str | os.PathLike[str]"


@runtime_checkable
class SessionRepo(Protocol):
    """Where sessions are created, found, listed, deleted and forked."""

    def create(
        self, *, cwd: str | None = None, metadata: dict[str, Any] | None = None
    ) -> Session: ...

    def open(self, target: SessionMeta | str | os.PathLike[str]) -> Session: ...

    def list(self, cwd: str | None = None) -> list[SessionMeta]: ...

    def delete(self, meta: SessionMeta | str | os.PathLike[str]) -> None: ...

    def fork(
        self,
        source: SessionMeta | Session | str | os.PathLike[str],
        entry_id: str | None = None,
        position: ForkPosition = "before",
    ) -> Session: ...

"""The ``SessionRepo`` protocol and what a repository lists: light to import,
so code that works on any store does not load the JSONL one."""

from __future__ import annotations

import os
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from msgspec import Struct

from harnessc.runtime.session.session import Session, SessionError

__all__ = ["ForkPosition", "SessionMeta", "SessionNotFoundError", "SessionRef", "SessionRepo"]

ForkPosition: TypeAlias = Literal["before", "at"]


class SessionNotFoundError(SessionError, LookupError):
    """No session with that id (or path) in the repo."""


class SessionMeta(Struct):
    """What ``list`` knows about a session without opening it."""

    id: str
    path: str
    cwd: str = ""
    timestamp: str = ""  # header creation time (ISO)
    modified: float = 0.0  # file mtime, seconds since the epoch
    size: int = 0
    name: str | None = None  # latest session_info name (see JsonlSessionRepo.list)
    first_prompt: str | None = None  # text of the first user message
    parent_session: str | None = None
    metadata: dict[str, Any] = {}
    version: int = 3


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

"""What every session store does the same way: the latest session, and a fork.

``JsonlSessionRepo`` and ``PostgresSessionRepo`` differ in where sessions live; a fork
(a new session holding one branch of another) differs only in what its header's
``parentSession`` names (``parent_of``): the branch, the entries and the labels are copied
here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, Protocol

from harnessc.runtime.session.repo_protocol import ForkPosition, SessionMeta
from harnessc.runtime.session.session import Session, SessionEntry, SessionHeader

__all__ = ["SessionStore", "fork_branch"]


class _Store(Protocol):
    def list(self, cwd: str | None = None, *, full: bool = False) -> list[SessionMeta]: ...

    def open(
        self, target: SessionMeta | str | os.PathLike[str], *, read_only: bool = False
    ) -> Session: ...

    def start(self, header: SessionHeader) -> Session: ...

    def parent_of(self, session: Session) -> str | None: ...


class SessionStore:
    """``create``, ``latest`` and ``fork`` over a store's ``list``, ``open``, ``start`` (the
    storage of a new session) and ``parent_of`` (what a fork's ``parentSession`` names)."""

    def create(
        self: _Store,
        *,
        cwd: str | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session: str | None = None,
    ) -> Session:
        """A new, empty session for ``cwd`` (default: the current directory), locked."""
        cwd = os.path.abspath(cwd) if cwd else os.getcwd()
        return self.start(
            SessionHeader.new(cwd=cwd, metadata=metadata, parent_session=parent_session)
        )

    def latest(self: _Store, cwd: str | None = None) -> SessionMeta | None:
        """The most recently modified session (of ``cwd``), or None."""
        found = self.list(cwd)
        return found[0] if found else None

    def fork(
        self: _Store,
        source: SessionMeta | Session | str | os.PathLike[str],
        entry_id: str | None = None,
        position: ForkPosition = "before",
    ) -> Session:
        """A new session holding the branch of ``source`` up to ``entry_id``.

        ``position="at"`` keeps ``entry_id`` itself, ``"before"`` stops at its parent
        (pi's fork from a user message: re-ask it differently). Without ``entry_id``
        the whole current branch is copied. Entry ids are kept; labels of copied
        entries are carried over; the header names the source in ``parentSession``.
        """
        if position not in ("before", "at"):
            raise ValueError(f"position must be 'before' or 'at', not {position!r}")
        if isinstance(source, Session):
            return fork_branch(source, entry_id, position, self.start, self.parent_of(source))
        src = self.open(source, read_only=True)
        try:
            return fork_branch(src, entry_id, position, self.start, self.parent_of(src))
        finally:
            src.close()


def fork_branch(
    src: Session,
    entry_id: str | None,
    position: ForkPosition,
    start: Callable[[SessionHeader], Session],
    parent_session: str | None,
) -> Session:
    """``start`` a session and copy ``src``'s branch up to
    ``entry_id`` into it (``position="at"`` keeps ``entry_id``, ``"before"`` stops at its
    parent; no ``entry_id``: the whole current branch). Entry ids are kept and the labels
    of copied entries carried over; the new session is closed if the copy fails."""
    if entry_id is None:
        path = src.branch()
    else:
        entry = src.get_entry(entry_id)
        if entry is None:
            raise KeyError(f"no entry {entry_id!r} in session {src.id}")
        end = entry.id if position == "at" else entry.parent_id
        path = src.branch(end) if end is not None else []
    copied = {e.id for e in path}
    labels = {t: label for t, label in src.labels().items() if t in copied}
    cwd = os.path.abspath(src.header.cwd) if src.header.cwd else os.getcwd()
    fork = start(
        SessionHeader.new(
            cwd=cwd, metadata=dict(src.header.metadata), parent_session=parent_session
        )
    )
    try:
        for e in path:
            fork.append_entry(SessionEntry(e.type, e.id, e.parent_id, e.timestamp, _copy(e.data)))
        have = fork.labels()
        for target, label in labels.items():
            if have.get(target) != label:  # set off the copied path
                fork.append_label(target, label)
    except BaseException:
        fork.close()
        raise
    return fork


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(data))

"""The checkpoint store of a project: objects, each session's checkpoints, each
workspace's stat cache, and the garbage collection that prunes them with their sessions.

Layout (in the project's data folder, ``checkpoints/`` by default)::

    objects/ab/cdef...        file contents and folder listings (``objects``)
    sessions/<session>.jsonl  the checkpoints a session took, one JSON line each
    workspaces/<key>/         one per workspace folder: ``index`` (the stat cache),
                              ``lock``, ``journal`` (a rewind under way), ``taking``
                              (a checkpoint under way)
    store.lock, generation    the collector's lock, and its count of collections

Locks are ``flock`` locks, released when their holder dies: a checkpoint or a rewind
holds ``store.lock`` shared and its workspace's ``lock`` exclusively; the collector
holds ``store.lock`` exclusively, so it never removes an object a checkpoint is about
to record. A session's checkpoints stay while the session does: ``forget_session``
drops them (the session was deleted) and ``collect`` removes every object no session,
no stat cache and no journal names (and the sessions whose file is gone, and those of
in-memory sessions whose process has ended).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from msgspec import Struct

from harnessc.runtime.checkpoints.layout import WORKSPACES, workspace_dir
from harnessc.runtime.checkpoints.objects import ObjectStore
from harnessc.runtime.checkpoints.records import Checkpoint
from harnessc.runtime.checkpoints.trees import DIR, TreeReader
from harnessc.runtime.support.data_folder import make_folder

__all__ = ["CheckpointStore", "CollectReport", "SessionRefs", "locked"]

_SESSIONS = "sessions"


@contextlib.contextmanager
def locked(path: Path, exclusive: bool) -> Iterator[None]:
    """Hold a ``flock`` on ``path`` (created when missing) for the ``with`` block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


class CollectReport(Struct):
    """What a collection removed."""

    sessions: list[str]  # sessions whose checkpoints were dropped
    objects: int  # objects removed
    bytes: int  # bytes freed
    kept: int  # objects kept
    seconds: float


class SessionRefs(Struct):
    """The checkpoints a session took, as its file in the store lists them."""

    session_id: str
    session_path: str | None  # the session's file; None: in memory or in a database
    pid: int | None  # an in-memory session's process
    checkpoints: list[Checkpoint]


class CheckpointStore:
    """The checkpoints of one project, at ``root``."""

    __slots__ = ("root", "objects", "_generation", "_recorded")

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.abspath(root))
        self.objects = ObjectStore(self.root / "objects")
        self._generation: str | None = None
        self._recorded: set[str] = set()  # sessions whose refs file has its header

    def __repr__(self) -> str:
        return f"CheckpointStore({str(self.root)!r})"

    # -- places and locks ---------------------------------------------------------

    def ensure(self) -> None:
        if not self.root.is_dir():
            make_folder(self.root)

    def workspace_dir(self, workspace: str) -> Path:
        return workspace_dir(self.root, workspace)

    def refs_path(self, session_id: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)
        return self.root / _SESSIONS / f"{safe}.jsonl"

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Shared hold of the store (no collection meanwhile); objects another process
        collected since this one last looked are forgotten as present."""
        self.ensure()
        with locked(self.root / "store.lock", exclusive=False):
            generation = self._read_generation()
            if generation != self._generation:
                self.objects.forget_known()
                self._generation = generation
            yield

    def _read_generation(self) -> str:
        try:
            return (self.root / "generation").read_text()
        except OSError:
            return ""

    # -- sessions' checkpoints ----------------------------------------------------

    def record(
        self,
        session_id: str,
        checkpoint: Checkpoint,
        *,
        session_path: str | None,
        in_memory: bool = False,
    ) -> None:
        """Add ``checkpoint`` to the session's list (its first line names the session's
        file, or the process of an in-memory session)."""
        path = self.refs_path(session_id)
        lines = []
        if session_id not in self._recorded and not path.exists():
            head: dict[str, Any] = {"session": session_id, "path": session_path}
            if in_memory:
                head["pid"] = os.getpid()
            lines.append(json.dumps(head))
        lines.append(json.dumps(checkpoint.to_dict()))
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as file:
            file.write("".join(line + "\n" for line in lines))
        self._recorded.add(session_id)

    def adopt(
        self, session_id: str, checkpoints: list[Checkpoint], session_path: str | None
    ) -> int:
        """List in the session's file the checkpoints it names but the store does not
        list for it (a forked session, which copied its entries); how many were added."""
        self.ensure()
        known = {c.id for c in self.refs(session_id).checkpoints}
        added = 0
        for checkpoint in checkpoints:
            if checkpoint.id not in known:
                self.record(session_id, checkpoint, session_path=session_path)
                known.add(checkpoint.id)
                added += 1
        return added

    def refs(self, session_id: str) -> SessionRefs:
        return self._read_refs(self.refs_path(session_id), session_id)

    def _read_refs(self, path: Path, session_id: str) -> SessionRefs:
        out = SessionRefs(session_id, None, None, [])
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return out
        for number, line in enumerate(text.splitlines()):
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed process
            if number == 0 and isinstance(data, dict) and "session" in data:
                found = data.get("path")
                out.session_path = found if isinstance(found, str) else None
                pid = data.get("pid")
                out.pid = pid if isinstance(pid, int) else None
                continue
            checkpoint = Checkpoint.from_dict(data)
            if checkpoint is not None:
                out.checkpoints.append(checkpoint)
        return out

    def sessions(self) -> list[SessionRefs]:
        folder = self.root / _SESSIONS
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:
            return []
        return [
            self._read_refs(folder / name, name[: -len(".jsonl")])
            for name in names
            if name.endswith(".jsonl")
        ]

    def forget_session(self, session_id: str) -> bool:
        """Drop the session's checkpoints (their objects go at the next ``collect``)."""
        self._recorded.discard(session_id)
        try:
            os.unlink(self.refs_path(session_id))
        except FileNotFoundError:
            return False
        return True

    # -- collection ---------------------------------------------------------------

    def collect(self, alive: Callable[[SessionRefs], bool | None] | None = None) -> CollectReport:
        """Drop the checkpoints of sessions that are gone and remove every object
        nothing names any more.

        A session is gone when ``alive(refs)`` says False; when it says None (or is not
        given): when its file no longer exists, or, for an in-memory session, when its
        process has ended. A session in a database (no file, no process) stays until
        ``forget_session``.
        """
        started = time.perf_counter()
        self.ensure()
        dropped: list[str] = []
        with locked(self.root / "store.lock", exclusive=True):
            trees: set[str] = set()
            blobs: set[str] = set()
            for refs in self.sessions():
                verdict = alive(refs) if alive is not None else None
                if verdict is None:
                    verdict = _still_there(refs)
                if not verdict:
                    self.forget_session(refs.session_id)
                    dropped.append(refs.session_id)
                    continue
                for checkpoint in refs.checkpoints:
                    trees.add(checkpoint.tree)
                    if checkpoint.skipped_list:
                        blobs.add(checkpoint.skipped_list)
            self._workspace_roots(trees, blobs)
            marked = self._mark(trees, blobs)
            removed = freed = kept = 0
            for oid in list(self.objects.ids()):
                if oid in marked:
                    kept += 1
                    continue
                freed += self.objects.delete(oid)
                removed += 1
            self.objects.remove_temporary()
            count = int(self._read_generation() or "0") + 1
            (self.root / "generation").write_text(str(count))
            self.objects.forget_known()
        return CollectReport(dropped, removed, freed, kept, time.perf_counter() - started)

    def _workspace_roots(self, trees: set[str], blobs: set[str]) -> None:
        """Add what the workspaces' stat caches and journals name."""
        from harnessc.runtime.checkpoints.statcache import StatCache

        folder = self.root / WORKSPACES
        try:
            keys = os.listdir(folder)
        except FileNotFoundError:
            return
        for key in keys:
            cache = StatCache.read(folder / key / "index")
            if cache is not None:
                blobs |= cache.content_ids()
                if cache.last_tree:
                    trees.add(cache.last_tree)
            journal = folder / key / "journal"
            with contextlib.suppress(OSError, ValueError):
                plan = json.loads(journal.read_text(encoding="utf-8"))
                # a journal's trees and its changes' objects (blobs and trees alike:
                # a tree kept as a blob is kept all the same)
                for text in _strings(plan):
                    if len(text) == 64:
                        blobs.add(text)
                target = plan.get("target") if isinstance(plan, dict) else None
                if isinstance(target, str):
                    trees.add(target)

    def _mark(self, trees: set[str], blobs: set[str]) -> set[str]:
        """Every object reachable from the root ``trees``, and the root ``blobs``. A tree
        that cannot be read is kept as it is, with nothing below it."""
        reader = TreeReader(self.objects)
        marked: set[str] = set()
        visited: set[str] = set()  # trees read (a file may hold a tree's very bytes)
        stack = list(trees)
        while stack:
            oid = stack.pop()
            if oid in visited:
                continue
            visited.add(oid)
            marked.add(oid)
            try:
                entries = reader.read(oid)
            except (LookupError, ValueError):
                continue
            for node in entries.values():
                if node.kind == DIR:
                    if node.oid not in visited:
                        stack.append(node.oid)
                else:
                    marked.add(node.oid)
        return marked | blobs

    def disk_usage(self) -> int:
        """Bytes the store takes on disk (files' sizes)."""
        total = 0
        for folder, _, names in os.walk(self.root):
            for name in names:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(folder, name)).st_size
        return total


def _still_there(refs: SessionRefs) -> bool:
    if refs.session_path is not None:
        return os.path.exists(refs.session_path)
    if refs.pid is not None:
        try:
            os.kill(refs.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return True  # in a database: until forget_session


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)

"""The checkpoints of one agent around its tool batches, as the agent loop takes them.

``BatchCheckpoints`` opens the store of the agent's settings for its workspace (the
session's working directory) on first use, finishes what a killed process left there
(``notes``: the reports for the agent's start), and takes each checkpoint off the event
loop (``runner``: a thread by default; a durable run makes it a recorded step, so a
recovered run gets the recorded checkpoint back instead of taking a second one).
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from harnessc.runtime.checkpoints.history import CHECKPOINT_TYPE, entry_data
from harnessc.runtime.checkpoints.records import Checkpoint
from harnessc.runtime.checkpoints.store import CheckpointStore
from harnessc.runtime.checkpoints.workspace import Recovery, Workspace
from harnessc.runtime.core.checkpoint_settings import CheckpointSettings
from harnessc.runtime.session.session import Session
from harnessc.runtime.support.data_folder import resolve_folder

__all__ = ["BatchCheckpoints", "Runner", "open_workspace"]

# Runs a checkpoint's work (a function returning the checkpoint as a dict) off the loop.
Runner = Callable[[Callable[[], dict[str, Any]]], Awaitable[dict[str, Any]]]


# The workspaces open in this process, by store, folder and settings: the agents of one
# process checkpointing one folder share its stat cache and folder memos (a thousand
# sessions in one project hold one copy). Every operation of a workspace holds its
# file lock, taken on a descriptor of its own, so the threads of one process take
# their checkpoints in turn as processes do.
_open: weakref.WeakValueDictionary[tuple[Any, ...], Workspace] = weakref.WeakValueDictionary()
_open_lock = threading.Lock()


def open_workspace(settings: CheckpointSettings, cwd: str) -> Workspace:
    """The workspace ``cwd`` in the store the settings name (resolved from ``cwd``),
    shared with the other agents of this process that checkpoint it alike."""
    real = os.path.realpath(cwd)
    folder = resolve_folder(settings.folder, real)
    key = (
        str(folder),
        real,
        tuple(settings.exclude),
        settings.max_file_bytes,
        settings.max_files,
    )
    with _open_lock:
        found = _open.get(key)
        if found is None:
            found = _open[key] = Workspace(CheckpointStore(folder), real, settings)
    return found


async def _in_thread(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    return await asyncio.to_thread(work)


class BatchCheckpoints:
    """An agent's checkpoints (see the module docstring)."""

    __slots__ = ("settings", "runner", "_workspace", "_cwd", "_notes", "failed", "pending")

    def __init__(self, settings: CheckpointSettings, runner: Runner | None = None) -> None:
        self.settings = settings
        self.runner: Runner = runner or _in_thread
        self._workspace: Workspace | None = None
        self._cwd = ""  # the session's folder as given, of ``_workspace``
        self._notes: list[Recovery] = []
        self.failed: str | None = None  # why checkpoints stopped (a workspace too large)
        self.pending: list[str] = []  # reports for the agent's start, not yet shown

    def workspace(self, session: Session) -> Workspace:
        """The workspace of the session's folder (resolved when it names another one
        than the last call's: each take asks, and a resolve costs a stat a component)."""
        cwd = session.cwd or os.getcwd()
        found = self._workspace
        if found is None or cwd != self._cwd:
            found = self._workspace = open_workspace(self.settings, cwd)
            self._cwd = cwd
        return found

    def recover(self, session: Session) -> list[Recovery]:
        """Finish what a killed process left in the workspace; the reports (once)."""
        workspace = self.workspace(session)
        return [*self._notes, *workspace.recover()]

    def take_notes(self) -> list[Recovery]:
        notes = self._notes
        self._notes = []
        if self._workspace is not None:
            notes.extend(self._workspace.take_notes())
        return notes

    async def take(
        self,
        session: Session,
        phase: str,
        *,
        guards: str | None = None,
        tools: list[str] | None = None,
    ) -> Checkpoint | None:
        """Take a checkpoint and record it in ``session`` beside its leaf (the entry
        it belongs to); None when checkpoints stopped for this agent."""
        if self.failed is not None:
            return None
        workspace = self.workspace(session)
        session_id, path = session.id, session.path
        in_memory = path is None and session.storage is None

        def work() -> dict[str, Any]:
            checkpoint = workspace.take(
                phase, session_id=session_id, session_path=path, in_memory=in_memory
            )
            return checkpoint.to_dict()

        data = await self.runner(work)
        checkpoint = Checkpoint.from_dict(data)
        if checkpoint is None:  # pragma: no cover - a runner returning something else
            raise ValueError(f"not a checkpoint: {data!r}")
        session.append_custom(CHECKPOINT_TYPE, entry_data(checkpoint, guards=guards, tools=tools))
        return checkpoint

    def close(self) -> None:
        if self._workspace is not None:
            self._workspace.close()

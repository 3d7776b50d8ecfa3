"""Workspace checkpoints in the agent: one before each tool batch that may change files,
one after it, both recorded in the session beside the reply they belong to.

``BatchGuard`` is what the tool batch holds: ``before(records)`` takes the checkpoint
the first time a call that may change files is about to run (a batch of read-only calls
takes none: a tool only reads when ``tools.base.is_read_only`` says so, the built-in
``read``, ``ls``, ``grep`` and ``find`` or a tool whose ``read_only`` is true),
``after()`` the one that closes the batch. A checkpoint that cannot be
taken (a full disk, a workspace over ``max_files``) is a warning notice, never a reason
not to run the batch. ``attach`` (the harness's start) finishes what a process killed
during a checkpoint or a rewind left in the workspace; its reports become notices at the
first batch, and ``take_notes`` gives them to a door that shows them at once.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.run_state import CallRecord, RunState
from harnessc.runtime.core.events import NoticeEvent
from harnessc.runtime.tools.base import is_read_only

if TYPE_CHECKING:
    from harnessc.runtime.checkpoints.batch import BatchCheckpoints, Runner
    from harnessc.runtime.checkpoints.records import Checkpoint
    from harnessc.runtime.checkpoints.rewind import RewindPoint, RewindReport
    from harnessc.runtime.checkpoints.workspace import Workspace
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "BatchGuard",
    "attach",
    "batch_checkpoints",
    "close",
    "rewind",
    "rewind_points",
    "take_notes",
    "use_runner",
    "workspace",
]

_SOURCE = "checkpoints"


def batch_checkpoints(agent: AgentParts) -> BatchCheckpoints | None:
    """The agent's checkpoints; None when its options turn them off."""
    settings = agent.options.checkpoints
    if settings is None or not settings.enabled:
        return None
    found = agent.checkpoints
    if found is None:
        from harnessc.runtime.checkpoints.batch import BatchCheckpoints

        found = agent.checkpoints = BatchCheckpoints(settings)
    return found


def use_runner(agent: AgentParts, runner: Runner) -> None:
    """Take the agent's checkpoints with ``runner`` (a durable run: a recorded step)."""
    found = batch_checkpoints(agent)
    if found is not None:
        found.runner = runner


def workspace(agent: AgentParts) -> Workspace | None:
    """The workspace the agent checkpoints (its session's folder); None when off."""
    found = batch_checkpoints(agent)
    return found.workspace(agent.session) if found is not None else None


def attach(agent: AgentParts) -> None:
    """At the harness's start: when the store shows a checkpoint or a rewind of the
    workspace cut short by a killed process, finish it (and a rewind of this very
    session in the session too: the conversation moved, the rewind recorded). A forked
    session's copied checkpoints are listed as its own."""
    settings = agent.options.checkpoints
    if settings is None or not settings.enabled:
        return
    from harnessc.runtime.checkpoints.layout import cut_short

    session = agent.session
    fork = session.header.parent_session is not None
    short = cut_short(settings, session.cwd or os.getcwd())
    if not (fork or short):
        return  # the common case: two stat calls, nothing created or imported
    found = batch_checkpoints(agent)
    assert found is not None
    if fork:
        _adopt(found, agent)
    if not short:
        return
    from harnessc.runtime.checkpoints.rewind import finish_recovered

    notes = found.pending
    try:
        recoveries = found.recover(session)
    except Exception as exc:  # the store is unreadable: say so, the agent still starts
        notes.append(f"the workspace's checkpoint store could not be checked: {exc}")
        return
    for recovery in recoveries:
        notes.append(recovery.message)
        try:
            done = finish_recovered(session, recovery, found.workspace(session))
        except Exception as exc:
            notes.append(f"the rewind could not be finished in the session: {exc}")
            continue
        if done:
            notes.append(f"in this session: {done}")


def _adopt(found: BatchCheckpoints, agent: AgentParts) -> None:
    """List a forked session's copied checkpoints as its own in the store, so they stay
    while it does (whatever becomes of the session it was forked from)."""
    from harnessc.runtime.checkpoints.history import all_points

    session = agent.session
    copied = [p.checkpoint for p in all_points(session)]
    if not copied:
        return
    try:
        found.workspace(session).store.adopt(session.id, copied, session.path)
    except OSError as exc:
        found.pending.append(f"the forked session's checkpoints could not be listed: {exc}")


def close(agent: AgentParts) -> None:
    """Write the workspace's stat cache when it changed since it was last written."""
    if agent.checkpoints is not None:
        try:
            agent.checkpoints.close()
        except OSError:
            pass  # a cache is only a speed-up: the next start reads the files again


def take_notes(agent: AgentParts) -> list[str]:
    """The reports of ``attach`` not yet shown (each once)."""
    found = agent.checkpoints
    if found is None or not found.pending:
        return []
    notes, found.pending = found.pending, []
    return notes


class BatchGuard:
    """The checkpoints of one tool batch (see the module docstring)."""

    __slots__ = ("agent", "run", "found", "before_taken")

    def __init__(self, agent: AgentParts, run: RunState) -> None:
        self.agent = agent
        self.run = run
        self.found = batch_checkpoints(agent)
        self.before_taken: Checkpoint | None = None

    async def before(self, records: list[CallRecord]) -> None:
        """The batch's first checkpoint, when one of ``records`` may change files."""
        if self.before_taken is not None:
            return
        agent, found = self.agent, self.found
        if found is None or found.failed is not None:
            return
        names = []
        for record in records:
            tool = agent.settings.active_tool(record.call.name)
            if tool is not None and not tool.external and not is_read_only(tool):
                names.append(record.call.name)
        if not names:
            return
        await _notices(agent)
        self.before_taken = await _take(agent, found, "before", names)

    async def after(self) -> None:
        """The checkpoint that closes the batch (when it began with one)."""
        if self.before_taken is None:
            return
        if self.found is not None:
            await _take(self.agent, self.found, "after", [])
        self.before_taken = None


async def _notices(agent: AgentParts) -> None:
    for note in take_notes(agent):
        await agent.bus.emit(NoticeEvent(source=_SOURCE, level="warning", message=note))


async def _take(agent: AgentParts, found: BatchCheckpoints, phase: str, tools: list[str]) -> Any:
    from harnessc.runtime.checkpoints.scan import WorkspaceTooLarge

    try:
        return await found.take(agent.session, phase, guards=_reply_entry(agent), tools=tools)
    except WorkspaceTooLarge as exc:
        found.failed = str(exc)
        message = f"checkpoints are off for this agent: {exc}"
    except Exception as exc:
        message = (
            f"the {phase} checkpoint of this tool batch failed ({exc}); the batch runs without it"
        )
    await agent.bus.emit(NoticeEvent(source=_SOURCE, level="warning", message=message))
    return None


def _reply_entry(agent: AgentParts) -> str | None:
    """The id of the assistant message the batch belongs to: the nearest one up the
    session's path from its leaf."""
    session = agent.session
    current = session.leaf_id
    for _ in range(10_000):
        if current is None:
            return None
        entry = session.get_entry(current)
        if entry is None:
            return None
        if entry.role == "assistant":
            return entry.id
        current = entry.parent_id
    return None


async def rewind(
    harness: HarnessContext,
    agent: AgentParts,
    entry_id: str,
    *,
    mode: str,
    force: bool,
    dry_run: bool,
    summarize: bool,
    confirm: Any,
) -> RewindReport:
    """``AgentHarness.rewind``: the tree move (the harness's, with its hooks and a
    paused run settled) and the files (``checkpoints.rewind``)."""
    import asyncio

    from harnessc.runtime.agent import session_moves
    from harnessc.runtime.checkpoints.rewind import rewind as rewind_session

    found = batch_checkpoints(agent)
    workspace = found.workspace(agent.session) if found is not None else None

    async def move(target: str) -> Any:
        return await session_moves.navigate_tree(
            harness,
            agent,
            target,
            summarize=summarize,
            custom_instructions=None,
            replace_instructions=False,
            label=None,
        )

    if workspace is not None and mode != "conversation":
        await asyncio.to_thread(workspace.recover)  # the store is whole before a plan
    return await rewind_session(
        agent.session,
        workspace,
        entry_id,
        mode=mode,
        force=force,
        dry_run=dry_run,
        move=move,
        confirm=confirm,
    )


def rewind_points(agent: AgentParts, limit: int) -> list[RewindPoint]:
    """``AgentHarness.rewind_points``: the recent checkpoints and what each would change."""
    from harnessc.runtime.checkpoints.rewind import recent_points

    found = batch_checkpoints(agent)
    if found is None:
        return []
    return recent_points(agent.session, found.workspace(agent.session), limit)

"""Rewind: a move of the session tree that takes the files along, as every door offers
it (the terminal's ``/tree``, ``/fork`` and ``/rewind``, ``--rewind``, ``harnessc
sessions rewind``, the served API).

``plan_rewind`` says what a rewind to an entry would do without touching anything (the
checkpoint holding the entry's files, every change, the conflicts); ``rewind`` does it
in one of three modes: ``conversation`` (the tree move only), ``files`` (the files only:
the conversation stays where it is) or ``both``. The conversation move is the caller's
(``move``: the harness's tree navigation, with its hooks), so this module stays below
the agent. A rewind of the files records where it left (a ``leave`` checkpoint at the
old position) and where it arrived (a ``rewind`` checkpoint at the new one), so moving
back restores what the rewind replaced; its journal is written before the conversation
moves, so a process killed at any point is finished by the next start.

A path changed outside the agent since the checkpoint is a conflict: reported, and
left as it is unless ``force``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, Literal

from msgspec import Struct

from harnessc.runtime.checkpoints.history import (
    CHECKPOINT_TYPE,
    Point,
    entry_data,
    files_at,
    outside_changes,
    points,
    rewound,
)
from harnessc.runtime.checkpoints.records import Checkpoint
from harnessc.runtime.checkpoints.trees import TreeReader, changed_paths
from harnessc.runtime.checkpoints.workspace import (
    Recovery,
    RestoreOutcome,
    RestorePlan,
    Workspace,
)
from harnessc.runtime.session.session import Session

__all__ = [
    "MODES",
    "RewindError",
    "RewindPoint",
    "RewindReport",
    "RewindRequest",
    "finish_recovered",
    "plan_rewind",
    "recent_points",
    "rewind",
]

RewindMode = Literal["conversation", "files", "both"]
MODES: tuple[str, ...] = ("conversation", "files", "both")

Move = Callable[[str], Any]  # the conversation's move to an entry (may be async)


class RewindRequest(Struct, frozen=True):
    """What a door asks for (a served request's JSON body: ``entry_id``, ``mode``,
    ``force``, ``dry_run``)."""

    entry_id: str
    mode: str
    force: bool = False
    dry_run: bool = False

    @staticmethod
    def from_json(body: Any) -> RewindRequest:
        """The request a JSON body describes; ValueError naming what is wrong. ``mode``
        is required (a non-interactive rewind says what moves)."""
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        unknown = sorted(set(body) - {"entry_id", "mode", "force", "dry_run"})
        if unknown:
            raise ValueError(
                f"unknown fields {', '.join(unknown)} (known: entry_id, mode, force, dry_run)"
            )
        entry_id = body.get("entry_id")
        if not isinstance(entry_id, str) or not entry_id:
            raise ValueError("'entry_id' must be the id of an entry of the session")
        mode = body.get("mode")
        if mode not in MODES:
            raise ValueError(f"'mode' must be one of {', '.join(MODES)} (what moves)")
        for key in ("force", "dry_run"):
            if not isinstance(body.get(key, False), bool):
                raise ValueError(f"'{key}' must be true or false")
        return RewindRequest(
            entry_id, str(mode), bool(body.get("force")), bool(body.get("dry_run"))
        )


class RewindError(Exception):
    """A rewind that cannot be done (no such entry, no checkpoint for its files, a
    checkpoint whose objects are missing); nothing was changed."""


class RewindReport(Struct):
    """What a rewind did or would do."""

    entry_id: str
    mode: str
    point: Point | None = None  # the checkpoint of the entry's files
    plan: RestorePlan | None = None
    outcome: RestoreOutcome | None = None
    moved: bool = False  # the conversation moved
    done: bool = False  # False: a dry run, or cancelled
    note: str = ""
    diff: str = ""  # the plan's unified diff (text files), from the workspace to the checkpoint

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id,
            "mode": self.mode,
            "checkpoint": self.point.checkpoint.to_dict() if self.point else None,
            "plan": self.plan.to_dict() if self.plan else None,
            "outcome": self.outcome.to_dict() if self.outcome else None,
            "moved": self.moved,
            "done": self.done,
            "note": self.note,
            "diff": self.diff,
        }


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise RewindError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")


def plan_rewind(session: Session, workspace: Workspace, entry_id: str) -> tuple[Point, RestorePlan]:
    """The checkpoint of ``entry_id``'s files and what restoring it would change now
    (a scan of the workspace; nothing is changed)."""
    if session.get_entry(entry_id) is None:
        raise RewindError(f"no entry {entry_id!r} in session {session.id}")
    point = files_at(session, entry_id)
    if point is None:
        raise RewindError(
            f"no checkpoint holds the files of entry {entry_id}: no tool that may change "
            "files ran before or after it with checkpoints on"
        )
    if point.checkpoint.workspace != workspace.root:
        raise RewindError(
            f"the checkpoint of entry {entry_id} is of {point.checkpoint.workspace}, "
            f"not of this workspace ({workspace.root})"
        )
    reader = TreeReader(workspace.store.objects)
    try:
        plan = workspace.plan(point.checkpoint, outside_changes(session, point, reader))
    except (LookupError, ValueError) as exc:
        raise RewindError(f"the checkpoint of entry {entry_id} cannot be read: {exc}") from exc
    return point, plan


async def rewind(
    session: Session,
    workspace: Workspace | None,
    entry_id: str,
    *,
    mode: str = "both",
    force: bool = False,
    dry_run: bool = False,
    move: Move | None = None,
    confirm: Callable[[RestorePlan], Any] | None = None,
) -> RewindReport:
    """Rewind to ``entry_id`` (see the module docstring). ``confirm(plan)`` is asked
    before anything changes (False: cancelled); ``dry_run`` only plans. ``move``
    moves the conversation (default: ``session.move_to``); a move that reports
    ``cancelled`` (a hook) cancels the rewind before any file is touched."""
    _check_mode(mode)
    if session.get_entry(entry_id) is None:
        raise RewindError(f"no entry {entry_id!r} in session {session.id}")
    mover: Move = move if move is not None else session.move_to
    if mode == "conversation":
        if dry_run:
            return RewindReport(entry_id, mode, note="the conversation would move")
        moved = await _move(mover, entry_id)
        return RewindReport(entry_id, mode, moved=moved, done=moved, note=_moved_note(moved))
    if workspace is None:
        raise RewindError("checkpoints are off for this agent: its files cannot be rewound")
    point, plan = await asyncio.to_thread(plan_rewind, session, workspace, entry_id)
    report = RewindReport(entry_id, mode, point, plan)
    if plan.changes:
        report.diff = plan.text_diff(workspace.store.objects)
    if dry_run:
        report.note = "dry run: nothing changed"
        return report
    if confirm is not None:
        answer = confirm(plan)
        if inspect.isawaitable(answer):
            answer = await answer
        if not answer:
            report.note = "cancelled: nothing changed"
            return report
    if plan.empty:  # nothing to restore: no journal, no checkpoint entries
        if mode == "both":
            report.moved = await _move(mover, entry_id)
            if not report.moved:
                report.note = "cancelled by a session_before_tree hook: nothing changed"
                return report
        report.done = True
        report.note = "the files are already as the checkpoint has them" + (
            "; the conversation moved" if report.moved else ""
        )
        return report
    session_path = session.path
    in_memory = session.path is None and session.storage is None
    # where the rewind leaves from, so that moving back restores it
    workspace.store.record(session.id, plan.current, session_path=session_path, in_memory=in_memory)
    session.append_custom(CHECKPOINT_TYPE, entry_data(plan.current))
    about = {"session": session.id, "entry": entry_id, "mode": mode}
    try:
        with workspace.restore(
            plan,
            force=force,
            session_id=session.id,
            session_path=session_path,
            in_memory=in_memory,
            about=about,
        ) as outcome:
            if mode == "both":
                report.moved = await _move(mover, entry_id)
                if not report.moved:
                    raise _Cancelled
            session.append_custom(
                CHECKPOINT_TYPE, entry_data(outcome.checkpoint, rewind=outcome.journal_id)
            )
            session.sync()
    except _Cancelled:
        report.note = "cancelled by a session_before_tree hook: nothing changed"
        return report
    except (LookupError, ValueError) as exc:
        raise RewindError(f"the checkpoint of entry {entry_id} cannot be read: {exc}") from exc
    report.outcome = outcome
    report.done = True
    report.note = _outcome_note(outcome, mode)
    return report


class _Cancelled(Exception):
    pass


async def _move(mover: Move, entry_id: str) -> bool:
    result = mover(entry_id)
    if inspect.isawaitable(result):
        result = await result
    return not bool(getattr(result, "cancelled", False))


def _moved_note(moved: bool) -> str:
    return "the conversation moved" if moved else "cancelled by a session_before_tree hook"


def _outcome_note(outcome: RestoreOutcome, mode: str) -> str:
    parts = [f"{len(outcome.applied)} change(s) made"]
    if outcome.kept:
        parts.append(f"{len(outcome.kept)} path(s) kept as they are")
    what = "files and conversation" if mode == "both" else "files"
    return f"rewound the {what}: " + ", ".join(parts)


class RewindPoint(Struct):
    """One of ``/rewind``'s listed points: the entry a rewind goes to, its checkpoint,
    and what restoring it would change now."""

    entry_id: str
    point: Point
    changes: list[str] = []  # paths that differ from the workspace now
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id,
            "checkpoint": self.point.checkpoint.to_dict(),
            "tools": self.point.tools,
            "changes": self.changes,
            "label": self.label,
        }


def recent_points(session: Session, workspace: Workspace, limit: int = 10) -> list[RewindPoint]:
    """The latest checkpoints taken before a tool batch on the current branch (newest
    first), each with the entry a rewind to it goes to (the entry before the reply
    that asked for the tools) and the paths that differ from the workspace now."""
    now: Checkpoint = workspace.current()
    reader = TreeReader(workspace.store.objects)
    out: list[RewindPoint] = []
    for point in reversed(points(session)):
        if point.checkpoint.phase != "before" or point.checkpoint.workspace != workspace.root:
            continue
        guarded = session.get_entry(point.guards) if point.guards else None
        target = guarded.parent_id if guarded is not None else point.entry.parent_id
        if target is None:
            target = point.entry.id
        differ = [path for path, _, _ in changed_paths(reader, now.tree, point.checkpoint.tree)]
        label = ", ".join(point.tools) if point.tools else "tool batch"
        out.append(RewindPoint(target, point, sorted(differ), label))
        if len(out) >= limit:
            break
    return out


def finish_recovered(
    session: Session, recovery: Recovery, workspace: Workspace | None = None
) -> str | None:
    """Finish in ``session`` a rewind of it that a killed process left, after its files
    were finished (``Workspace.recover``): the conversation moved when the rewind was of
    both, and the rewind recorded (the checkpoint its journal holds, else one of the
    workspace taken now). A note of what was done, None when nothing was to do."""
    journal = recovery.journal
    if recovery.what != "rewind" or journal.get("session") != session.id:
        return None
    journal_id = journal.get("id")
    if not isinstance(journal_id, str) or rewound(session, journal_id):
        return None
    entry_id = journal.get("entry")
    notes = []
    if journal.get("mode") == "both" and isinstance(entry_id, str):
        if session.get_entry(entry_id) is not None and session.leaf_id != entry_id:
            session.move_to(entry_id)
            notes.append(f"the conversation moved to {entry_id}")
    after = Checkpoint.from_dict(journal.get("after"))
    if after is None and workspace is not None:
        in_memory = session.path is None and session.storage is None
        after = workspace.take(
            "rewind", session_id=session.id, session_path=session.path, in_memory=in_memory
        )
        if recovery.outcome is not None:
            after.kept = [k.path for k in recovery.outcome.kept]
    if after is not None:
        session.append_custom(CHECKPOINT_TYPE, entry_data(after, rewind=journal_id))
        notes.append("the rewind is recorded in the session")
    session.sync()
    return "; ".join(notes) or None

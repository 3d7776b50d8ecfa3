"""Checkpoints in a session: the entries that record them, which checkpoint holds the
files of an entry, and which paths changed outside the agent.

A checkpoint is a pi ``custom`` entry ``harnessc.checkpoint`` (pi keeps it and leaves
it out of the model's context) appended beside the entry it belongs to: a ``before``
checkpoint right after the assistant message whose tool batch it guards (``guards``:
that message's id, ``tools``: the batch's tool names), an ``after`` checkpoint when the
batch ended, a ``leave`` checkpoint where a rewind left, a ``rewind`` checkpoint where
it arrived (``rewind``: the journal's id).

The files of an entry are those of the first checkpoint taken below it (the files as
they were when the conversation was first there; a ``rewind`` checkpoint does not
count: it records what a rewind made of them); an entry with none below it has the
files of the last checkpoint on its path.

A path changed outside the agent since a checkpoint when, in the order the session's
checkpoints were taken (the files have one history, however the conversation
branches), it differs between one checkpoint and the next one taken before a batch or
a rewind (``before``, ``leave``: what happened in between was not the agent's), or
between the last checkpoint and the workspace now. Between a ``before`` and its
``after``, and before a ``rewind``, the changes are the agent's (a rewind's kept paths
excepted).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import Struct

from harnessc.runtime.checkpoints.records import Checkpoint
from harnessc.runtime.checkpoints.trees import TreeReader, changed_paths
from harnessc.runtime.session.entries import SessionEntry
from harnessc.runtime.session.session import Session

__all__ = [
    "CHECKPOINT_TYPE",
    "Point",
    "all_points",
    "checkpoint_of",
    "entry_data",
    "files_at",
    "outside_changes",
    "points",
    "rewound",
]

CHECKPOINT_TYPE = "harnessc.checkpoint"
_OUTSIDE_BEFORE = ("before", "leave")  # phases whose gap before them is not the agent's


class Point(Struct):
    """A checkpoint entry of a session: the entry, its checkpoint, what it guards."""

    entry: SessionEntry
    checkpoint: Checkpoint
    guards: str | None = None
    tools: list[str] = []
    rewind: str | None = None  # a rewind's journal id


def entry_data(
    checkpoint: Checkpoint,
    *,
    guards: str | None = None,
    tools: list[str] | None = None,
    rewind: str | None = None,
) -> dict[str, Any]:
    """The ``data`` of a checkpoint entry."""
    data: dict[str, Any] = {"checkpoint": checkpoint.to_dict()}
    if guards is not None:
        data["guards"] = guards
    if tools:
        data["tools"] = list(tools)
    if rewind is not None:
        data["rewind"] = rewind
    return data


def checkpoint_of(entry: SessionEntry) -> Point | None:
    """The checkpoint an entry records, else None."""
    if entry.type != "custom" or entry.data.get("customType") != CHECKPOINT_TYPE:
        return None
    data = entry.data.get("data")
    if not isinstance(data, dict):
        return None
    checkpoint = Checkpoint.from_dict(data.get("checkpoint"))
    if checkpoint is None:
        return None
    guards, tools, rewind = data.get("guards"), data.get("tools"), data.get("rewind")
    return Point(
        entry,
        checkpoint,
        guards if isinstance(guards, str) else None,
        [t for t in tools if isinstance(t, str)] if isinstance(tools, list) else [],
        rewind if isinstance(rewind, str) else None,
    )


def points(session: Session, entry_id: str | None = None) -> list[Point]:
    """The checkpoints on the branch ending at ``entry_id`` (default: the leaf), oldest
    first."""
    out = []
    for entry in session.branch(entry_id):
        point = checkpoint_of(entry)
        if point is not None:
            out.append(point)
    return out


def all_points(session: Session) -> list[Point]:
    """Every checkpoint of the session, in file order."""
    out = []
    for entry in session.entries():
        point = checkpoint_of(entry)
        if point is not None:
            out.append(point)
    return out


def files_at(session: Session, entry_id: str) -> Point | None:
    """The checkpoint holding the files of entry ``entry_id`` (see the module
    docstring); None when the session has none for it."""
    entry = session.get_entry(entry_id)
    if entry is None:
        raise KeyError(f"no entry {entry_id!r} in session {session.id}")
    own = checkpoint_of(entry)
    if own is not None:
        return own
    entries = session.entries()
    below = {entry_id}
    seen_self = False
    for later in entries:
        if not seen_self:
            seen_self = later.id == entry_id
            continue
        if later.parent_id not in below:
            continue
        below.add(later.id)
        point = checkpoint_of(later)
        if point is not None and point.checkpoint.phase != "rewind":
            return point
    earlier = points(session, entry_id)
    return earlier[-1] if earlier else None


def outside_changes(
    session: Session,
    target: Point,
    reader: TreeReader,
) -> Callable[[Checkpoint], set[str]]:
    """The paths changed outside the agent since ``target``, given the workspace now
    (a function of the current checkpoint, as ``Workspace.plan`` takes it).

    The files have one history, whatever branches the conversation has: the session's
    checkpoints of the workspace in the order they were taken (file order), from
    ``target`` on."""
    workspace = target.checkpoint.workspace
    timeline = [p for p in all_points(session) if p.checkpoint.workspace == workspace]
    ids = [p.checkpoint.id for p in timeline]
    start = ids.index(target.checkpoint.id) if target.checkpoint.id in ids else 0
    sequence = timeline[start:]

    def compute(current: Checkpoint) -> set[str]:
        out: set[str] = set()
        for before, after in zip(sequence, sequence[1:], strict=False):
            if after.checkpoint.phase in _OUTSIDE_BEFORE:
                out.update(
                    path
                    for path, _, _ in changed_paths(
                        reader, before.checkpoint.tree, after.checkpoint.tree
                    )
                )
            out.update(after.checkpoint.kept)
        last = sequence[-1].checkpoint.tree if sequence else target.checkpoint.tree
        out.update(path for path, _, _ in changed_paths(reader, last, current.tree))
        return out

    return compute


def rewound(session: Session, journal_id: str) -> bool:
    """Whether the session records the rewind with this journal id."""
    for entry in session.entries():
        point = checkpoint_of(entry)
        if point is not None and point.rewind == journal_id:
            return True
    return False

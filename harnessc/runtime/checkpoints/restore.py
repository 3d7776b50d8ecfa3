"""Restoring a workspace to a checkpoint: what would change, and the changes made one
path at a time so that a process killed midway can be finished by the next one.

A plan lists the changes (``Change``: a path, what is there now, what the checkpoint
had) and the conflicts (``Conflict``: a path the restore leaves as it is, and why). A
restore writes its intent first (the journal: every change with the state before and
after, fsynced), then makes the changes in an order that always works (removals
deepest first, then creations and rewrites shallowest first), each whole: a file or a
link is written beside its place and renamed over it, so a path holds its old or its
new content, never a mix. ``finish`` does the changes of a journal that a killed
process left: a path that already holds its new state is done, one that still holds
its old state is changed, and one holding neither (changed since) is left as it is
and reported.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from typing import Any

from msgspec import Struct

from harnessc.runtime.checkpoints.crash import crash_point
from harnessc.runtime.checkpoints.objects import ObjectStore
from harnessc.runtime.checkpoints.trees import DIR, FILE, LINK, Node

__all__ = [
    "Change",
    "Conflict",
    "StepOutcome",
    "apply_changes",
    "describe_change",
    "leftover_temporaries",
    "order_changes",
    "state_at",
]

# permission bits a restore sets: never set-user-ID or set-group-ID
_MODE_MASK = 0o1777
_TMP_MARK = ".harnessc-rewind-"


class Change(Struct, frozen=True):
    """One path a restore changes: ``old`` is what the workspace has (None: nothing),
    ``new`` what the checkpoint had (None: the path is removed)."""

    path: str
    old: Node | None
    new: Node | None

    @property
    def kind(self) -> str:
        """added, deleted, modified, mode (permission bits only) or type (a file
        becomes a folder, a link ...)."""
        old, new = self.old, self.new
        if old is None:
            return "added"
        if new is None:
            return "deleted"
        if old.kind != new.kind:
            return "type"
        if old.oid == new.oid and old.kind != DIR:
            return "mode"
        if old.kind == DIR:
            return "mode"
        return "modified"

    def to_list(self) -> list[Any]:
        return [self.path, _node_list(self.old), _node_list(self.new)]

    @staticmethod
    def from_list(data: Any) -> Change:
        path, old, new = data
        return Change(str(path), _node_from(old), _node_from(new))


class Conflict(Struct, frozen=True):
    """A change a restore leaves out (unless forced): the path and why."""

    change: Change
    reason: str

    @property
    def path(self) -> str:
        return self.change.path


class StepOutcome(Struct):
    """What making the changes did: applied, already in place, left as they were."""

    applied: list[Change]
    already: list[Change]
    kept: list[Conflict]


def _node_list(node: Node | None) -> list[Any] | None:
    return None if node is None else [node.kind, node.mode, node.size, node.oid]


def _node_from(data: Any) -> Node | None:
    if data is None:
        return None
    kind, mode, size, oid = data
    return Node(str(kind), int(mode), int(size), str(oid))


_SYMBOL = {"added": "A", "deleted": "D", "modified": "M", "mode": "m", "type": "T"}


def describe_change(change: Change) -> str:
    """``M path`` (git's letters; ``m``: permission bits only, ``T``: type change)."""
    node = change.new or change.old
    suffix = "/" if node is not None and node.kind == DIR else ""
    extra = ""
    if change.kind == "mode" and change.old and change.new:
        extra = f" ({change.old.mode:o} -> {change.new.mode:o})"
    return f"{_SYMBOL[change.kind]} {change.path}{suffix}{extra}"


def _depth(path: str) -> int:
    return path.count("/")


def order_changes(changes: Iterable[Change]) -> list[Change]:
    """The order a restore makes changes in: removals (and a folder turning into a
    file or link) deepest first, then the rest shallowest first."""
    removals: list[Change] = []
    rest: list[Change] = []
    for change in changes:
        old, new = change.old, change.new
        if new is None or (old is not None and old.kind == DIR and new.kind != DIR):
            removals.append(change)
        else:
            rest.append(change)
    removals.sort(key=lambda c: (-_depth(c.path), c.path))
    rest.sort(key=lambda c: (_depth(c.path), c.path))
    return removals + rest


def state_at(path: str, node_hint: Node | None = None) -> Node | None:
    """The node at ``path`` as it is now (a file's content hashed; a folder's tree is
    not computed: its id is ``""``); None when nothing is there. A path that is
    neither a file, a link nor a folder is a node of kind ``?``."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return Node(DIR, stat.S_IMODE(mode), 0, "")
    if stat.S_ISLNK(mode):
        target = os.readlink(os.fsencode(path))
        return Node(LINK, stat.S_IMODE(mode), len(target), hashlib.sha256(target).hexdigest())
    if stat.S_ISREG(mode):
        digest = hashlib.sha256()
        size = 0
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
                size += len(chunk)
        finally:
            os.close(fd)
        return Node(FILE, stat.S_IMODE(mode), size, digest.hexdigest())
    return Node("?", stat.S_IMODE(mode), 0, "")


def _same(actual: Node | None, wanted: Node | None) -> bool:
    if actual is None or wanted is None:
        return actual is wanted
    if actual.kind != wanted.kind:
        return False
    if actual.kind == DIR:
        return (actual.mode & _MODE_MASK) == (wanted.mode & _MODE_MASK)
    if actual.kind == LINK:
        return actual.oid == wanted.oid  # a link's own bits mean nothing on Linux
    return actual.oid == wanted.oid and (actual.mode & _MODE_MASK) == (wanted.mode & _MODE_MASK)


def _same_content(actual: Node | None, wanted: Node | None) -> bool:
    """Same kind and content (permission bits aside): a folder is a folder."""
    if actual is None or wanted is None:
        return actual is wanted
    if actual.kind != wanted.kind:
        return False
    return actual.kind == DIR or actual.oid == wanted.oid


def apply_changes(
    root: str,
    objects: ObjectStore,
    changes: list[Change],
    journal_id: str,
    *,
    quick_check: Callable[[Change, str], bool | None] | None = None,
    keep: Iterable[str] = (),
) -> StepOutcome:
    """Make ``changes`` (in ``order_changes``' order) under ``root``.

    Before a path is touched its state is checked: a path that already holds the new
    state is left (``already``); one that holds neither the old nor the new state
    changed since the plan and is left as it is (``kept``). ``quick_check(change,
    path)`` may vouch for the old state without reading the file (True), or say it
    cannot (None). A folder that still holds something (what a kept change, one of
    the paths in ``keep`` or the ignore rules left there) is not removed, and said so.
    """
    applied: list[Change] = []
    already: list[Change] = []
    kept: list[Conflict] = []
    blocked: set[str] = set()  # folders that must stay (something kept below them)
    for path in keep:
        _block_parents(path, blocked)
    for number, change in enumerate(order_changes(changes), start=1):
        path = os.path.join(root, change.path)
        old, new = change.old, change.new
        if new is None and old is not None and old.kind == DIR and change.path in blocked:
            kept.append(Conflict(change, "a folder holding what was kept"))
            _block_parents(change.path, blocked)
            continue
        vouched = quick_check(change, path) if quick_check is not None else None
        actual = old if vouched else state_at(path)
        if _same(actual, new):
            already.append(change)
            continue
        if not _same_content(actual, old):
            kept.append(Conflict(change, "changed since the rewind was planned"))
            _block_parents(change.path, blocked)
            continue
        crash_point(f"rewind:op:{number}")
        try:
            _apply_one(path, actual, new, objects, journal_id)
        except OSError as exc:
            if new is None and actual is not None and actual.kind == DIR and _not_empty(exc):
                kept.append(Conflict(change, "a folder holding files the checkpoint left out"))
            else:
                kept.append(Conflict(change, f"could not be changed: {exc.strerror or exc}"))
            _block_parents(change.path, blocked)
            continue
        applied.append(change)
    return StepOutcome(applied, already, kept)


def _not_empty(exc: OSError) -> bool:
    import errno

    return exc.errno in (errno.ENOTEMPTY, errno.EEXIST)


def _block_parents(path: str, blocked: set[str]) -> None:
    while "/" in path:
        path = path.rsplit("/", 1)[0]
        blocked.add(path)


def _apply_one(
    path: str, actual: Node | None, new: Node | None, objects: ObjectStore, journal_id: str
) -> None:
    if new is None:
        if actual is None:
            return
        if actual.kind == DIR:
            os.rmdir(path)
        else:
            os.unlink(path)
        return
    if new.kind == DIR:
        if actual is not None and actual.kind != DIR:
            os.unlink(path)
            actual = None
        if actual is None:
            os.mkdir(path, 0o700)
        os.chmod(path, new.mode & _MODE_MASK)
        return
    if actual is not None and actual.kind == DIR:
        os.rmdir(path)  # its content went first (order_changes)
    if new.kind == FILE and actual is not None and actual.kind == FILE and actual.oid == new.oid:
        os.chmod(path, new.mode & _MODE_MASK, follow_symlinks=False)
        return
    data = objects.get(new.oid)
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name[:100]}{_TMP_MARK}{journal_id}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    try:
        if new.kind == LINK:
            os.symlink(data, os.fsencode(tmp))
        else:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, new.mode & _MODE_MASK)
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def leftover_temporaries(root: str, changes: Iterable[Change], journal_id: str) -> int:
    """Remove the files a killed restore left beside their places; how many."""
    removed = 0
    for change in changes:
        folder, name = os.path.split(os.path.join(root, change.path))
        tmp = os.path.join(folder, f".{name[:100]}{_TMP_MARK}{journal_id}")
        try:
            os.unlink(tmp)
            removed += 1
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            pass
        except OSError:
            pass
    return removed

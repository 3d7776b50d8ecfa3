"""One workspace folder in a checkpoint store: taking checkpoints, planning and making
a restore, and finishing what a killed process left.

Every operation holds the store's shared lock and the workspace's own lock. A
checkpoint or a rewind first leaves a ``busy`` note (what, which process, when) in the
workspace's folder of the store, and a rewind writes its journal (``restore``) before
it touches a file; both go when it is done. Whoever takes the workspace's lock next and
finds them knows that their process was killed: a journal is finished (every change
made, save paths changed since, which are reported), a lone note only reported, since
a checkpoint never touches the workspace and a rewind touches it only after its
journal is written. ``take_notes`` gives those reports once (the agent's start shows
them).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from msgspec import Struct

from harnessc.runtime.checkpoints.crash import crash_point
from harnessc.runtime.checkpoints.ignore import IgnoreRules
from harnessc.runtime.checkpoints.layout import BUSY, JOURNAL
from harnessc.runtime.checkpoints.objects import ObjectStore
from harnessc.runtime.checkpoints.records import Checkpoint, CheckpointSettings
from harnessc.runtime.checkpoints.restore import (
    Change,
    Conflict,
    StepOutcome,
    apply_changes,
    describe_change,
    leftover_temporaries,
    state_at,
)
from harnessc.runtime.checkpoints.scan import FolderMemo, ScanResult, Skip, scan_workspace
from harnessc.runtime.checkpoints.statcache import StatCache
from harnessc.runtime.checkpoints.store import CheckpointStore, locked
from harnessc.runtime.checkpoints.trees import FILE, LINK, Node, TreeReader, changed_paths
from harnessc.runtime.session.entries import iso_now

__all__ = ["Recovery", "RestoreOutcome", "RestorePlan", "Workspace"]

_SAVE_EVERY_S = 10.0  # the stat cache is written at most this often (and at close)


class Recovery(Struct):
    """What the next start found of a checkpoint or rewind whose process was killed."""

    what: str  # "checkpoint" or "rewind"
    message: str
    journal: dict[str, Any] = {}  # a rewind's journal (session, entry, mode, checkpoint ...)
    outcome: StepOutcome | None = None  # a rewind's changes, made now


class RestorePlan(Struct):
    """What restoring ``target`` would change in the workspace as it is (``current``,
    a checkpoint of it not yet recorded), and which of those changes are conflicts."""

    workspace: str
    target: Checkpoint
    current: Checkpoint
    changes: list[Change]
    conflicts: list[Conflict] = []
    # paths the target left out, with why: never removed nor written by the restore
    left_out: dict[str, str] = {}

    @property
    def empty(self) -> bool:
        return not self.changes

    def renames(self) -> dict[str, str]:
        """New path -> old path, for a file (or link) removed and one added with the
        same content."""
        gone: dict[tuple[str, str], str] = {}
        for change in sorted(self.changes, key=lambda c: c.path):
            old = change.old
            if change.new is None and old is not None and old.kind in (FILE, LINK):
                gone.setdefault((old.kind, old.oid), change.path)
        out: dict[str, str] = {}
        for change in sorted(self.changes, key=lambda c: c.path):
            new = change.new
            if change.old is None and new is not None and (new.kind, new.oid) in gone:
                out[change.path] = gone.pop((new.kind, new.oid))
        return out

    def lines(self) -> list[str]:
        """One line per change (git's letters; ``R old -> new`` for a rename), then the
        conflicts (``! path: why``)."""
        renames = self.renames()
        renamed_from = set(renames.values())
        out = []
        for change in sorted(self.changes, key=lambda c: c.path):
            if change.path in renames:
                out.append(f"R {renames[change.path]} -> {change.path}")
            elif change.path in renamed_from:
                continue
            else:
                out.append(describe_change(change))
        for conflict in self.conflicts:
            out.append(f"! {conflict.path}: {conflict.reason}")
        if self.changes:
            out.extend(self.left_out_lines())
        return out

    def left_out_lines(self, limit: int = 20) -> list[str]:
        """What the checkpoint left out (not rewound), ``~ path: why``, at most ``limit``."""
        shown = [f"~ {path}: {why}; not rewound" for path, why in sorted(self.left_out.items())]
        if len(shown) > limit:
            shown = [*shown[:limit], f"~ ... and {len(shown) - limit} more left out"]
        return shown

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for change in self.changes:
            counts[change.kind] = counts.get(change.kind, 0) + 1
        if not counts:
            return "no change"
        parts = [f"{n} {kind}" for kind, n in sorted(counts.items())]
        if self.conflicts:
            parts.append(f"{len(self.conflicts)} conflict(s) kept unless forced")
        if self.left_out:
            parts.append(f"{len(self.left_out)} path(s) left out, not rewound")
        return ", ".join(parts)

    def text_diff(self, objects: ObjectStore, max_lines: int = 400) -> str:
        """A unified diff from the workspace now to the checkpoint (text files; a
        binary file is one line), cut at ``max_lines``."""
        import difflib

        out: list[str] = []
        for change in sorted(self.changes, key=lambda c: c.path):
            old, new = change.old, change.new
            if (old is None or old.kind != FILE) and (new is None or new.kind != FILE):
                continue
            before = _text(objects, old)
            after = _text(objects, new)
            if before is None or after is None:
                out.append(f"Binary file {change.path} differs")
                continue
            out.extend(
                line.rstrip("\n")
                for line in difflib.unified_diff(
                    before,
                    after,
                    f"a/{change.path}" if old is not None else "/dev/null",
                    f"b/{change.path}" if new is not None else "/dev/null",
                    n=2,
                )
            )
            if len(out) > max_lines:
                break
        if len(out) > max_lines:
            out = [*out[:max_lines], f"... (the diff goes on: {len(out) - max_lines}+ lines)"]
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workspace": self.workspace,
            "target": self.target.to_dict(),
            "current": self.current.to_dict(),
            "changes": [
                {"path": c.path, "change": c.kind, "line": describe_change(c)} for c in self.changes
            ],
            "renames": self.renames(),
            "conflicts": [{"path": c.path, "reason": c.reason} for c in self.conflicts],
            "left_out": [{"path": p, "reason": r} for p, r in sorted(self.left_out.items())],
            "summary": self.summary(),
        }


class RestoreOutcome(Struct):
    """What a restore did: its changes made, those already in place, those kept
    (conflicts, and paths changed between the plan and the restore), and the checkpoint
    of the workspace it left."""

    applied: list[Change]
    already: list[Change]
    kept: list[Conflict]
    checkpoint: Checkpoint
    journal_id: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": [describe_change(c) for c in self.applied],
            "already": [describe_change(c) for c in self.already],
            "kept": [{"path": c.path, "reason": c.reason} for c in self.kept],
            "checkpoint": self.checkpoint.to_dict(),
        }


def _text(objects: ObjectStore, node: Node | None) -> list[str] | None:
    """The lines of a file node's content; [] for none; None when it is not text."""
    if node is None or node.kind != FILE:
        return []
    data = objects.get(node.oid)
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def new_checkpoint_id() -> str:
    return uuid.uuid4().hex[:16]


class Workspace:
    """The checkpoints of the workspace folder ``root`` in ``store``."""

    __slots__ = (
        "store",
        "root",
        "settings",
        "folder",
        "cache",
        "memos",
        "exclude",
        "last_scan",
        "_notes",
        "_saved_at",
        "_scanned",
        "__weakref__",
    )

    def __init__(
        self,
        store: CheckpointStore,
        root: str | os.PathLike[str],
        settings: CheckpointSettings | None = None,
    ) -> None:
        self.store = store
        self.root = os.path.realpath(os.fspath(root))
        self.settings = settings or CheckpointSettings()
        self.folder = store.workspace_dir(self.root)
        self.cache = StatCache(self.folder / "index", self.root)
        self.memos: dict[str, FolderMemo] = {}
        exclude = list(self.settings.exclude)
        store_root = os.path.realpath(store.root)
        if store_root == self.root or store_root.startswith(self.root + os.sep):
            inside = os.path.relpath(store_root, self.root).replace(os.sep, "/")
            exclude.append("/" + inside + "/" if inside != "." else "/*")
        self.exclude = exclude
        self.last_scan: ScanResult | None = None  # the latest scan's counts and time
        self._notes: list[Recovery] = []
        self._saved_at = 0.0
        # The latest scan of a take and when it began (time.monotonic_ns): a take asked
        # for before that scan began, and waiting for the lock meanwhile, uses it.
        self._scanned: tuple[int, ScanResult] | None = None

    def __repr__(self) -> str:
        return f"Workspace({self.root!r}, store={str(self.store.root)!r})"

    # -- holding the workspace ------------------------------------------------------

    @contextlib.contextmanager
    def _hold(self) -> Iterator[None]:
        with self.store.writing():
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            with locked(self.folder / "lock", exclusive=True):
                before = self.cache._seen
                self.cache.refresh()
                if self.cache._seen != before:
                    self.memos.clear()  # another process scanned since
                    self._scanned = None
                self._recover_locked()
                yield

    def _busy(self, what: str, session_id: str | None) -> None:
        note = {"what": what, "pid": os.getpid(), "started": iso_now(), "session": session_id}
        (self.folder / "busy").write_text(json.dumps(note), encoding="utf-8")

    def _done(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.folder / "busy")

    def recover(self) -> list[Recovery]:
        """Finish what a killed process left in this workspace; the reports not taken
        yet (``take_notes``' too)."""
        with self._hold():
            pass
        return self.take_notes()

    def take_notes(self) -> list[Recovery]:
        notes, self._notes = self._notes, []
        return notes

    def _recover_locked(self) -> None:
        journal_path = self.folder / JOURNAL
        busy_path = self.folder / BUSY
        if journal_path.exists():
            self._notes.append(self._finish_journal(journal_path))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(busy_path)
            return
        try:
            note = json.loads(busy_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            note = {}
        with contextlib.suppress(FileNotFoundError):
            os.unlink(busy_path)
        what = note.get("what") if isinstance(note, dict) else None
        pid = note.get("pid") if isinstance(note, dict) else None
        started = note.get("started") if isinstance(note, dict) else None
        who = f"process {pid}" if pid else "a process"
        if what == "rewind":
            message = (
                f"a rewind of {self.root} begun by {who} at {started} was interrupted before "
                "it changed any file: the workspace is as it was before that rewind"
            )
        else:
            message = (
                f"a checkpoint of {self.root} begun by {who} at {started} was interrupted "
                "and discarded; a checkpoint never changes the workspace, which is as it was"
            )
        self._notes.append(Recovery("rewind" if what == "rewind" else "checkpoint", message))

    def _finish_journal(self, path: Path) -> Recovery:
        try:
            journal = json.loads(path.read_text(encoding="utf-8"))
            changes = [Change.from_list(item) for item in journal["changes"]]
            journal_id = str(journal["id"])
            keep = [str(p) for p in journal.get("keep", [])]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            os.unlink(path)
            return Recovery(
                "rewind",
                f"the journal of an interrupted rewind of {self.root} could not be read "
                f"({exc}); it was removed, the workspace was left as it is",
            )
        outcome = apply_changes(self.root, self.store.objects, changes, journal_id, keep=keep)
        leftover_temporaries(self.root, changes, journal_id)
        journal["finished"] = iso_now()
        journal["applied_at_recovery"] = len(outcome.applied)
        self._write_journal(journal, done=True)
        os.unlink(path)
        pid = journal.get("pid")
        message = (
            f"a rewind of {self.root} to checkpoint {journal.get('checkpoint')} (process "
            f"{pid}, {journal.get('started')}) was interrupted after its journal was written; "
            f"it was finished now: {len(outcome.applied)} change(s) made, "
            f"{len(outcome.already)} already in place; the workspace is as the rewind "
            "should leave it"
        )
        if outcome.kept:
            listed = ", ".join(f"{k.path} ({k.reason})" for k in outcome.kept[:10])
            message += f", except {len(outcome.kept)} path(s) left as they are: {listed}"
        self.memos.clear()
        self._scanned = None
        return Recovery("rewind", message, journal, outcome)

    def _write_journal(self, journal: dict[str, Any], *, done: bool = False) -> None:
        """The journal, whole or not at all (temporary file, fsync, rename, fsync of the
        folder); ``done``: the finished journal kept as ``journal.last`` for reports."""
        name = "journal.last" if done else "journal"
        tmp = self.folder / f"{name}.tmp-{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps(journal).encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.folder / name)
        dir_fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    # -- checkpoints ------------------------------------------------------------------

    def _scan(self) -> ScanResult:
        rules = IgnoreRules.for_workspace(self.root, self.exclude)
        self.last_scan = scan_workspace(
            self.root,
            self.store.objects,
            self.cache,
            rules,
            self.settings.max_file_bytes,
            self.memos,
            self.settings.max_files,
        )
        return self.last_scan

    def _checkpoint(self, result: ScanResult, phase: str, kept: Iterable[str] = ()) -> Checkpoint:
        listed = None
        if result.skipped:
            text = "".join(f"{s.path}\t{s.reason}\n" for s in result.skipped)
            listed = self.store.objects.put(text.encode("utf-8", "surrogateescape"))
        return Checkpoint(
            id=new_checkpoint_id(),
            tree=result.tree,
            workspace=self.root,
            phase=phase,
            time=iso_now(),
            files=result.files,
            bytes=result.bytes,
            skipped=len(result.skipped),
            skipped_list=listed,
            kept=list(kept),
        )

    def _save_cache(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.cache.dirty and (force or now - self._saved_at >= _SAVE_EVERY_S):
            self.cache.save()
            self._saved_at = now

    def take(
        self,
        phase: str = "before",
        *,
        session_id: str | None = None,
        session_path: str | None = None,
        in_memory: bool = False,
    ) -> Checkpoint:
        """Take a checkpoint of the workspace as it is; with ``session_id``, list it
        as that session's.

        Takes asked for together share a scan: one that waited for the workspace's lock
        while another take's scan began and ended uses that scan, a picture of the
        workspace taken after it was asked for (as its own scan would be), so a
        thousand sessions in one folder asking at once make a few scans, not a thousand.
        A rewind made in this process since forgets the shared scan."""
        asked = time.monotonic_ns()
        with self._hold():
            self._busy("checkpoint", session_id)
            try:
                scanned = self._scanned
                if scanned is not None and scanned[0] > asked:
                    result = scanned[1]
                else:
                    began = time.monotonic_ns()
                    result = self._scan()
                    self._scanned = (began, result)
                checkpoint = self._checkpoint(result, phase)
                crash_point("take:scanned")
                if session_id is not None:
                    self.store.record(
                        session_id, checkpoint, session_path=session_path, in_memory=in_memory
                    )
                self._save_cache()
            finally:
                self._done()
        return checkpoint

    def close(self) -> None:
        """Write the stat cache if it changed since it was last written."""
        if self.cache.dirty:
            with self.store.writing(), locked(self.folder / "lock", exclusive=True):
                self._save_cache(force=True)

    def skipped(self, checkpoint: Checkpoint) -> list[Skip]:
        """What ``checkpoint`` left out, with the reasons."""
        if not checkpoint.skipped_list:
            return []
        text = self.store.objects.get(checkpoint.skipped_list).decode("utf-8", "surrogateescape")
        out = []
        for line in text.splitlines():
            path, _, reason = line.partition("\t")
            out.append(Skip(path, reason))
        return out

    # -- restoring --------------------------------------------------------------------

    def current(self) -> Checkpoint:
        """A checkpoint of the workspace as it is, not listed for any session."""
        with self._hold():
            return self._checkpoint(self._scan(), "leave")

    def plan(
        self,
        target: Checkpoint,
        outside: Iterable[str] | Callable[[Checkpoint], Iterable[str]] = (),
    ) -> RestorePlan:
        """What restoring ``target`` would change now. A change to a path in
        ``outside`` (changed outside the agent since ``target``; a function of the
        checkpoint of the workspace now), or one that would write over something the
        workspace has but does not record (ignored, over the size limit), is a
        conflict. Paths ``target`` left out are never removed."""
        current = self.current()
        paths = outside(current) if callable(outside) else outside
        return self._plan(target, current, set(paths))

    def _plan(self, target: Checkpoint, current: Checkpoint, outside: set[str]) -> RestorePlan:
        reader = TreeReader(self.store.objects)
        left_out = {s.path: s.reason for s in self.skipped(target)}
        folders = tuple(p for p in left_out if p.endswith("/"))
        files = {p for p in left_out if not p.endswith("/")}
        changes: list[Change] = []
        conflicts: list[Conflict] = []
        for path, old, new in changed_paths(reader, current.tree, target.tree):
            if new is None and (path in files or _under(path, folders)):
                continue  # left out by the target: not the restore's to remove
            change = Change(path, old, new)
            changes.append(change)
            if path in outside:
                conflicts.append(Conflict(change, "changed outside the agent since the checkpoint"))
            elif old is None and os.path.lexists(os.path.join(self.root, path)):
                conflicts.append(
                    Conflict(
                        change,
                        "exists and is not recorded (ignored, over the size limit or not a "
                        "file); the checkpoint has it",
                    )
                )
        return RestorePlan(self.root, target, current, changes, conflicts, left_out)

    @contextlib.contextmanager
    def restore(
        self,
        plan: RestorePlan,
        *,
        force: bool = False,
        session_id: str | None = None,
        session_path: str | None = None,
        in_memory: bool = False,
        about: dict[str, Any] | None = None,
    ) -> Iterator[RestoreOutcome]:
        """Make the plan's changes (its conflicts too when ``force``) and give what was
        done to the ``with`` block, which records the rewind in its session; the
        journal goes when the block ends without an error. A process killed before that
        (or a block that fails) leaves the journal, which the next holder of the
        workspace finishes and reports (``about``: what the report should name, such as
        the session, the entry and the mode).

        Every object the changes need is read and checked first: a checkpoint missing
        an object is refused before any file is touched (LookupError, ValueError)."""
        conflicted = {c.path for c in plan.conflicts}
        if force:  # a forced conflict replaces whatever is there (an ignored file too)
            changes = [
                Change(c.path, state_at(os.path.join(self.root, c.path)), c.new)
                if c.path in conflicted and c.old is None
                else c
                for c in plan.changes
            ]
        else:
            changes = [c for c in plan.changes if c.path not in conflicted]
        kept = [] if force else list(plan.conflicts)
        journal_id = new_checkpoint_id()
        with self._hold():
            for change in changes:
                if change.new is not None and change.new.kind in (FILE, LINK):
                    self.store.objects.get(change.new.oid)  # present and whole
            self._busy("rewind", session_id)
            journal = {
                "id": journal_id,
                "workspace": self.root,
                "target": plan.target.tree,
                "checkpoint": plan.target.id,
                "pid": os.getpid(),
                "started": iso_now(),
                "changes": [c.to_list() for c in changes],
                "keep": [c.path for c in kept],
                **(about or {}),
            }
            self._write_journal(journal)
            crash_point("rewind:journal")
            facts = dict(self.cache.entries)

            def vouch(change: Change, path: str) -> bool | None:
                old = change.old
                if old is None or old.kind != FILE:
                    return None
                row = facts.get(change.path)
                if row is None or row[5] != old.oid:
                    return None
                try:
                    st = os.lstat(path)
                except OSError:
                    return None
                if (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) != row[:5]:
                    return None
                return True

            outcome = apply_changes(
                self.root,
                self.store.objects,
                changes,
                journal_id,
                quick_check=vouch,
                keep=[c.path for c in kept],
            )
            leftover_temporaries(self.root, changes, journal_id)
            self.memos.clear()
            self._scanned = None
            all_kept = kept + outcome.kept
            after = self._checkpoint(self._scan(), "rewind", kept=[k.path for k in all_kept])
            journal["stage"] = "files-done"
            journal["after"] = after.to_dict()
            self._write_journal(journal)
            crash_point("rewind:files-done")
            if session_id is not None:
                self.store.record(session_id, after, session_path=session_path, in_memory=in_memory)
            self._save_cache(force=True)
            yield RestoreOutcome(outcome.applied, outcome.already, all_kept, after, journal_id)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.folder / "journal")
            self._done()


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path.startswith(f) or path + "/" == f for f in folders)

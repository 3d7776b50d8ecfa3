"""One scan of a workspace into the object store: a stat walk, reading only the files
whose ``lstat`` facts the stat cache does not vouch for.

Folders are walked in name order, never through a symbolic link (a link is recorded as
a link: its target, not what it points to). A regular file is recorded with its
content and permission bits, a folder with its permission bits (an empty one too). Left
out, and listed with the reason (``Skip``): what the ignore rules name (a folder left
out is one line, its content is not entered), files over the size limit, what is
neither a file, a link nor a folder (FIFOs, sockets, devices), and what cannot be read.
A file that changes while it is read is read again (three tries, then it is recorded
as last read and said so).
"""

from __future__ import annotations

import os
import stat
import time
from operator import attrgetter

from msgspec import Struct

from harnessc.runtime.checkpoints.ignore import ALWAYS_SKIPPED, IgnoreRules
from harnessc.runtime.checkpoints.objects import ObjectStore
from harnessc.runtime.checkpoints.statcache import CacheEntry, StatCache
from harnessc.runtime.checkpoints.trees import DIR, FILE, LINK, Node, encode_tree

__all__ = ["FolderMemo", "ScanResult", "Skip", "WorkspaceTooLarge", "scan_workspace"]


class WorkspaceTooLarge(ValueError):
    """The workspace has more files than a checkpoint takes (``max_files``)."""


_BY_NAME = attrgetter("name")  # any fixed order does: trees are compared by name
_O_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class Skip(Struct, frozen=True):
    """A path a checkpoint left out (a folder's ends with ``/``) and why."""

    path: str
    reason: str


class ScanResult(Struct):
    """What one scan recorded: the root tree's id, counts, and what it left out."""

    tree: str
    files: int = 0  # files and links recorded
    bytes: int = 0  # their size
    read: int = 0  # files read (the stat cache did not vouch for them)
    skipped: list[Skip] = []
    seconds: float = 0.0


class FolderMemo:
    """What the last scan found in one folder, to reuse while nothing in it changed:
    its listing (names, whether each is a folder) under the same ignore rules, what it
    left out, the ``lstat`` facts of what it recorded, and the folder's tree."""

    __slots__ = ("listing", "rules", "kept", "skipped", "facts", "tree", "rows", "files", "bytes")

    def __init__(
        self,
        listing: tuple[tuple[str, bool], ...],
        rules: tuple[int, ...],
        kept: list[int],
        skipped: list[Skip],
    ) -> None:
        self.listing = listing
        self.rules = rules
        self.kept = kept  # indexes (into the listing) of the entries recorded
        self.skipped = skipped
        self.facts: tuple[tuple[object, ...], ...] | None = None  # None: not reusable
        self.tree = ""
        self.rows: list[tuple[str, CacheEntry]] = []  # the stat cache rows of its files
        self.files = 0
        self.bytes = 0


class _Walk:
    __slots__ = (
        "store",
        "cache",
        "memos",
        "limit",
        "skipped",
        "files",
        "bytes",
        "read",
        "seen",
        "now",
        "unsure",
        "max_files",
    )

    def __init__(
        self,
        store: ObjectStore,
        cache: StatCache,
        memos: dict[str, FolderMemo],
        limit: int,
        max_files: int,
    ) -> None:
        self.max_files = max_files
        self.store = store
        self.cache = cache
        self.memos = memos
        self.limit = limit
        self.skipped: list[Skip] = []
        self.files = 0
        self.bytes = 0
        self.read = 0
        self.seen: dict[str, CacheEntry] = {}
        self.now = time.time_ns()
        self.unsure = False  # a file of the current folder was read or is racily clean

    def folder(self, path: str, rel: str, rules: IgnoreRules) -> str:
        """Record the folder at ``path`` (walk-relative ``rel``: "" or ending with
        ``/``); its tree's id."""
        rules = rules.below(path, rel)
        try:
            with os.scandir(path) as found:
                items = sorted(found, key=_BY_NAME)
        except OSError as exc:
            # unreadable (or gone): recorded empty, and said so
            self.skipped.append(Skip(rel or "./", f"cannot be read: {exc.strerror or exc}"))
            items = []
        listing = tuple((e.name, e.is_dir(follow_symlinks=False)) for e in items)
        memo = self.memos.get(rel)
        if memo is None or memo.listing != listing or memo.rules != rules.key:
            memo = self._sort_out(listing, rel, rules)
            self.memos[rel] = memo
        if memo.skipped:
            self.skipped.extend(memo.skipped)
        facts: list[tuple[object, ...]] = []
        stats: list[tuple[os.DirEntry[str], os.stat_result | None, str | None]] = []
        for index in memo.kept:
            item = items[index]
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                stats.append((item, None, None))  # gone since the folder was listed
                facts.append((item.name,))
                continue
            if stat.S_ISDIR(st.st_mode):
                sub = self.folder(item.path, rel + item.name + "/", rules)
                stats.append((item, st, sub))
                facts.append((item.name, st.st_mode, sub))
            else:
                stats.append((item, st, None))
                facts.append(
                    (item.name, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                )
        key = tuple(facts)
        if memo.facts == key and self.store.has(memo.tree):
            for row in memo.rows:
                self.seen[row[0]] = row[1]
            self.files += memo.files
            self.bytes += memo.bytes
            tree = memo.tree
        else:
            tree = self._record(memo, key, stats, rel)
        if self.files > self.max_files:
            raise WorkspaceTooLarge(
                f"the workspace has more than {self.max_files} files to record; "
                "checkpoints.exclude can leave some out (or raise checkpoints.max_files)"
            )
        return tree

    def _sort_out(
        self, listing: tuple[tuple[str, bool], ...], rel: str, rules: IgnoreRules
    ) -> FolderMemo:
        """Which entries of a listing are recorded, which left out (and why)."""
        kept: list[int] = []
        skipped: list[Skip] = []
        for index, (name, is_dir) in enumerate(listing):
            child = rel + name
            if name in ALWAYS_SKIPPED:
                skipped.append(Skip(child, "version control data"))
                continue
            why = rules.reason(child, is_dir)
            if why is not None:
                skipped.append(Skip(child + "/" if is_dir else child, f"ignored by {why}"))
                continue
            kept.append(index)
        return FolderMemo(listing, rules.key, kept, skipped)

    def _record(
        self,
        memo: FolderMemo,
        key: tuple[tuple[object, ...], ...],
        stats: list[tuple[os.DirEntry[str], os.stat_result | None, str | None]],
        rel: str,
    ) -> str:
        entries: list[tuple[bytes, Node]] = []
        rows: list[tuple[str, CacheEntry]] = []
        files_before, bytes_before = self.files, self.bytes
        self.unsure = False
        for item, st, sub in stats:
            if st is None:
                continue
            name = item.name
            child = rel + name
            mode = st.st_mode
            node: Node | None
            if sub is not None:
                node = Node(DIR, stat.S_IMODE(mode), 0, sub)
            elif stat.S_ISLNK(mode):
                node = self.link(item.path, child, st)  # a link's inode changes with it
            elif stat.S_ISREG(mode):
                node = self.file(item.path, child, st)
                row = self.seen.get(child)
                if row is not None:
                    rows.append((child, row))
            else:
                self.skipped.append(Skip(child, "not a file, folder or link"))
                self.unsure = True
                node = None
            if node is not None:
                entries.append((os.fsencode(name), node))
        tree = self.store.put(encode_tree(entries))
        # reusable next time only when every file came from a trusted cache entry
        memo.facts = None if self.unsure else key
        memo.tree = tree
        memo.rows = rows
        memo.files = self.files - files_before
        memo.bytes = self.bytes - bytes_before
        self.unsure = False
        return tree

    def link(self, path: str, rel: str, st: os.stat_result) -> Node | None:
        try:
            target = os.readlink(os.fsencode(path))
        except OSError as exc:
            self.skipped.append(Skip(rel, f"cannot be read: {exc.strerror or exc}"))
            return None
        self.files += 1
        self.bytes += len(target)
        return Node(LINK, stat.S_IMODE(st.st_mode), len(target), self.store.put(target))

    def file(self, path: str, rel: str, st: os.stat_result) -> Node | None:
        size = st.st_size
        if size > self.limit:
            self.skipped.append(Skip(rel, f"over the size limit ({size} > {self.limit} bytes)"))
            return None
        oid = self.cache.lookup(rel, st)
        if oid is not None and not self.store.has(oid):
            oid = None  # collected since (a cache from before a collection): read again
        if oid is None:
            self.unsure = True
            read = self.read_file(path, rel, st)
            if read is None:
                return None
            st, data, stable = read
            size = len(data)
            oid = self.store.put(data)
            self.read += 1
            read_at = self.now if stable else 0
        else:
            read_at = self.cache.entries[rel][6]
        if read_at:  # a file that changed while it was read is read again next time
            self.seen[rel] = (
                st.st_mode,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_ino,
                oid,
                read_at,
            )
        self.files += 1
        self.bytes += size
        return Node(FILE, stat.S_IMODE(st.st_mode), size, oid)

    def read_file(
        self, path: str, rel: str, st: os.stat_result
    ) -> tuple[os.stat_result, bytes, bool] | None:
        for _ in range(3):
            try:
                fd = os.open(path, _O_READ)
            except OSError as exc:
                self.skipped.append(Skip(rel, f"cannot be read: {exc.strerror or exc}"))
                return None
            try:
                before = os.fstat(fd)
                if not stat.S_ISREG(before.st_mode):
                    self.skipped.append(Skip(rel, "not a file, folder or link"))
                    return None
                if before.st_size > self.limit:
                    self.skipped.append(
                        Skip(rel, f"over the size limit ({before.st_size} > {self.limit} bytes)")
                    )
                    return None
                chunks = []
                while chunk := os.read(fd, 1 << 20):
                    chunks.append(chunk)
                    if sum(map(len, chunks)) > self.limit:
                        break
                after = os.fstat(fd)
            except OSError as exc:
                self.skipped.append(Skip(rel, f"cannot be read: {exc.strerror or exc}"))
                return None
            finally:
                os.close(fd)
            data = b"".join(chunks)
            if (
                after.st_mtime_ns == before.st_mtime_ns
                and after.st_size == before.st_size == len(data)
                and after.st_ctime_ns == before.st_ctime_ns
            ):
                return after, data, True
        if len(data) > self.limit:
            self.skipped.append(Skip(rel, f"over the size limit (> {self.limit} bytes)"))
            return None
        self.skipped.append(Skip(rel, "changed while it was read: recorded as last read"))
        return after, data, False


def scan_workspace(
    root: str,
    store: ObjectStore,
    cache: StatCache,
    rules: IgnoreRules,
    max_file_bytes: int,
    memos: dict[str, FolderMemo] | None = None,
    max_files: int = 1 << 62,
) -> ScanResult:
    """Scan ``root`` into ``store``; the cache then holds exactly the files seen.

    ``memos``: the folders of the previous scan by this process (kept by the caller,
    updated here), so that an unchanged folder costs its listing and ``lstat`` calls."""
    started = time.perf_counter()
    walk = _Walk(store, cache, {} if memos is None else memos, max_file_bytes, max_files)
    tree = walk.folder(root, "", rules)
    if walk.seen != cache.entries:
        cache.entries = walk.seen
        cache.dirty = True
    if cache.last_tree != tree:
        cache.last_tree = tree
        cache.dirty = True
    return ScanResult(
        tree=tree,
        files=walk.files,
        bytes=walk.bytes,
        read=walk.read,
        skipped=walk.skipped,
        seconds=time.perf_counter() - started,
    )

"""The stat cache of a workspace (git's index, in small): for each file recorded, the
facts ``lstat`` gives (mode, size, modification and change times, inode) and the id of
its content when it was read, so a checkpoint of an unchanged file costs one ``lstat``.

A cached id is trusted only while all five facts match and the file's times lie well
before the moment it was read (``RACY_NS``): a file written again within the same tick
of a coarse clock after it was read keeps its times, so such a file is read once more
by the next checkpoint, as git re-reads its "racily clean" entries.

The cache also holds the tree of the last scan harnessc made of the workspace. It is a
``marshal`` file (about 60 bytes a file; written and read in 15 ms for 10,000 files,
JSON took three times as long) replaced whole, a temporary file renamed over it. A
cache that cannot be read (another Python's format, damage) is dropped: every file is
read again, nothing is lost. One that is out of date is harmless too: an entry is used
only while the file's facts match it.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["RACY_NS", "CacheEntry", "StatCache"]

RACY_NS = 2_000_000_000  # times this close to the read are not trusted (FAT: 2 s ticks)
_VERSION = f"harnessc-stat-cache 1 {sys.implementation.cache_tag}"

# (mode, size, mtime_ns, ctime_ns, inode, content id, read at (ns))
CacheEntry = tuple[int, int, int, int, int, str, int]


class StatCache:
    __slots__ = ("path", "root", "entries", "last_tree", "_seen", "dirty")

    def __init__(self, path: str | os.PathLike[str], root: str) -> None:
        self.path = Path(path)
        self.root = root
        self.entries: dict[str, CacheEntry] = {}
        self.last_tree: str | None = None
        self._seen: tuple[int, int, int] | None = None  # (inode, size, mtime) of the file
        self.dirty = False

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def refresh(self) -> None:
        """Read the file again when another process replaced it since this one read or
        wrote it (or it was never read)."""
        stamp = self._stamp()
        if stamp is not None and stamp == self._seen:
            return
        self.entries, self.last_tree, self.dirty = {}, None, False
        self._seen = stamp
        if stamp is None:
            return
        try:
            with open(self.path, "rb") as file:
                data: Any = marshal.loads(file.read())
        except (OSError, ValueError, EOFError, TypeError):
            return
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            return
        if data.get("root") != self.root:
            return
        last = data.get("lastTree")
        self.last_tree = last if isinstance(last, str) else None
        entries = data.get("entries")
        if isinstance(entries, dict):
            self.entries = entries

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> StatCache | None:
        """The cache at ``path`` whatever workspace it is of; None when unreadable."""
        try:
            with open(path, "rb") as file:
                data: Any = marshal.loads(file.read())
        except (OSError, ValueError, EOFError, TypeError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("root"), str):
            return None
        cache = cls(path, data["root"])
        cache.refresh()
        return cache

    def lookup(self, rel: str, st: os.stat_result) -> str | None:
        """The content id of ``rel`` when its ``lstat`` facts match a trusted entry."""
        found = self.entries.get(rel)
        if found is None:
            return None
        mode, size, mtime, ctime, ino, oid, read_at = found
        if (
            mode != st.st_mode
            or size != st.st_size
            or mtime != st.st_mtime_ns
            or ctime != st.st_ctime_ns
            or ino != st.st_ino
        ):
            return None
        if mtime >= read_at - RACY_NS or ctime >= read_at - RACY_NS:
            return None  # racily clean: read again
        return oid

    def save(self) -> None:
        """Write the cache when it changed (temporary file renamed over it)."""
        if not self.dirty:
            return
        data = {
            "version": _VERSION,
            "root": self.root,
            "lastTree": self.last_tree,
            "entries": self.entries,
        }
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        try:
            with open(tmp, "wb") as file:
                file.write(marshal.dumps(data))
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._seen = self._stamp()
        self.dirty = False

    def content_ids(self) -> set[str]:
        """Every content id the cache names (kept by the garbage collector: a later
        checkpoint reuses them without reading the file)."""
        return {entry[5] for entry in self.entries.values()}

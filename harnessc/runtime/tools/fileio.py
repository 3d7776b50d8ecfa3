"""Atomic file writes: a temp file in the same folder, fsync, then rename over the target."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["FileChangedError", "atomic_write_bytes", "path_lock"]


class FileChangedError(Exception):
    """The target changed on disk while a new version was being written (not replaced)."""


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def path_lock(path: Path) -> threading.Lock:
    """One lock per file, so parallel edits of the same file do not lose updates."""
    key = os.path.realpath(path)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.Lock()
        return lock


def _read_umask() -> int:
    # Read once at import (single-threaded); os.umask has no read-only form.
    current = os.umask(0o022)
    os.umask(current)
    return current


_UMASK = _read_umask()


def atomic_write_bytes(
    path: Path, data: bytes, *, unchanged: Callable[[], bool] | None = None
) -> None:
    """Write ``data`` to ``path`` so readers see the old or the new file, never a mix.

    Parent folders are created; an existing file keeps its permission bits. With
    ``unchanged``, it is asked right before the rename whether the target is still
    what the caller read; if not, nothing is replaced and FileChangedError is raised.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o666 & ~_UMASK)
        if unchanged is not None and not unchanged():
            raise FileChangedError(str(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise

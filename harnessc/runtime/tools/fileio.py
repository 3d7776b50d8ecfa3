"""File access of the tools: regular files only; writes no-follow, relative to
directory descriptors, atomic.

Reading tools open files with :func:`open_regular`: ``O_NONBLOCK`` so that a FIFO or a
device never blocks the open, then ``fstat`` on the descriptor, refusing anything that
is not a regular file (FIFOs, sockets, devices) with a message naming what it is.

A path checked by name can change before it is used (a folder swapped for a symlink
pointing out of the workspace). So ``write`` and ``edit`` never use a checked path by
name: :func:`open_parent` opens the workspace, then each folder of the path relative to
the one before with ``O_NOFOLLOW | O_DIRECTORY``, creating missing folders with
``mkdir(dir_fd=...)``; a component that is (or becomes) a symlink is refused. The file
is then read, written and renamed relative to that folder's descriptor, its last
component never followed either. Writes are atomic: a temp file in the same folder,
fsync, then rename over the target.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "FileChangedError",
    "UnsafePathError",
    "atomic_write_at",
    "NotRegularFileError",
    "atomic_write_bytes",
    "file_kind",
    "open_parent",
    "open_regular",
    "path_lock",
    "read_at",
    "stat_at",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_ATTEMPTS = 5  # a folder created and removed by another process in between: retry


class FileChangedError(Exception):
    """The target changed on disk while a new version was being written (not replaced)."""


class UnsafePathError(OSError):
    """A folder of the path is a symlink, or not a folder (maybe swapped while in use)."""


class NotRegularFileError(OSError):
    """A FIFO, socket or device where a regular file was expected."""


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for binary reading; NotRegularFileError unless a regular file.

    The open never blocks (``O_NONBLOCK``, cleared again once the file is known to be
    regular), so a FIFO without a writer is refused instead of hanging the tool.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(
                errno.EINVAL, f"{os.fspath(path)} is {file_kind(mode)}; only regular files are read"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def path_lock(path: Path) -> threading.Lock:
    """One lock per file, so parallel edits of the same file do not lose updates."""
    key = os.path.abspath(path)  # callers pass resolved paths; no second resolution
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


def _open_dir(name: str, dir_fd: int | None, *, create: bool) -> int:
    for _ in range(_ATTEMPTS):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                raise UnsafePathError(
                    exc.errno, f"{name!r} is a symbolic link or not a folder (not followed)"
                ) from None
            raise
    raise UnsafePathError(errno.EAGAIN, f"folder {name!r} keeps disappearing")


@contextlib.contextmanager
def open_parent(path: Path, root: Path, *, create: bool = False) -> Iterator[tuple[int, str]]:
    """``(descriptor of path's folder, last component)``, walked down from ``root``.

    ``root`` (a real path, e.g. the workspace) is opened as is; every folder below it
    is opened without following symlinks, created first when ``create``. ``path``
    must lie below ``root``.
    """
    parts = path.relative_to(root).parts
    if not parts:
        raise IsADirectoryError(errno.EISDIR, f"{path} is a directory")
    fd = os.open(str(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            nxt = _open_dir(part, fd, create=create)
            os.close(fd)
            fd = nxt
        yield fd, parts[-1]
    finally:
        os.close(fd)


def stat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in the folder, or None when it does not exist."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def read_at(dir_fd: int, name: str, max_bytes: int | None = None) -> bytes:
    """The bytes of regular file ``name`` in the folder (a symlink is not followed)."""
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(
                exc.errno, f"{name!r} is a symbolic link (not followed)"
            ) from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePathError(errno.EINVAL, f"{name!r} is not a regular file")
        return fh.read() if max_bytes is None else fh.read(max_bytes)


def _temp_name(name: str) -> str:
    stem = name.encode("utf-8", "surrogateescape")[:200].decode("utf-8", "ignore")
    return f".{stem}.{secrets.token_hex(4)}.tmp"


def atomic_write_at(
    dir_fd: int, name: str, data: bytes, *, unchanged: Callable[[], bool] | None = None
) -> bool:
    """Write ``data`` to ``name`` in the folder atomically; True when it existed before.

    An existing file keeps its permission bits. With ``unchanged``, it is asked right
    before the rename whether the target is still what the caller read; if not,
    nothing is replaced and FileChangedError is raised.
    """
    before = stat_at(dir_fd, name)
    if before is not None and stat.S_ISDIR(before.st_mode):
        raise IsADirectoryError(errno.EISDIR, f"{name!r} is a directory")
    mode = (
        stat.S_IMODE(before.st_mode)
        if before is not None and stat.S_ISREG(before.st_mode)
        else 0o666 & ~_UMASK
    )
    tmp = _temp_name(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        if unchanged is not None and not unchanged():
            raise FileChangedError(name)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    return before is not None


def atomic_write_bytes(
    path: Path, data: bytes, *, unchanged: Callable[[], bool] | None = None
) -> None:
    """Write ``data`` to ``path`` atomically (parent folders created, none followed)."""
    path = Path(os.path.abspath(path))
    with open_parent(path, Path(path.anchor), create=True) as (dir_fd, name):
        atomic_write_at(dir_fd, name, data, unchanged=unchanged)

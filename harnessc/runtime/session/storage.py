"""Writing session files: create, append, rewrite after a migration.

Appending is the only change to a file in use: each entry is one ``write`` of one line
on an ``O_APPEND`` descriptor (no user-space buffer, so a line reaches the OS at once);
``sync`` fsyncs. The first append after opening a file with a torn tail truncates that
tail (or adds the missing newline), so the file is valid JSONL again.

A new session file is created under its own name, exclusively (of two processes
creating one name, one gets FileExistsError), mode 0600, locked before its header is
written in one ``write``; a header that cannot be written (disk full, ``ulimit -f``)
is unlinked, so no file is left. Until the header is written the file is empty, as a
crash right after creating it leaves it: listing and search skip such a file (and one
holding only a torn header), an open makes it a new session with the id of its name
(pi's rule for an empty file). The file and its folder entry are made durable by the
first ``sync``. A migrated v1/v2 file is rewritten whole: written to a temporary file
``.<name>.<8 hex>.tmp`` beside it (mode 0600, locked), fsynced and renamed over the old
one (pi rewrites it on open too), so a crash leaves the old file or the new one.
Temporary files a killed process left behind (unlocked and older than a minute) are
removed when a session of that folder is created or opened.

A write that fails (disk full, ``ulimit -f``, I/O error) raises SessionWriteError
naming the file; the entry is not in the session and a partly written line is cut off
before the next append, so the session stays valid. New files are 0600 and new
session folders 0700.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import secrets
import time
from typing import Any

from harnessc.runtime.session.encode import encode_line
from harnessc.runtime.session.entries import (
    SessionError,
    SessionHeader,
    SessionReadOnlyError,
    SessionWriteError,
)
from harnessc.runtime.session.jsonl import (
    EmptySessionFileError,
    LoadedSession,
    parse_session,
)
from harnessc.runtime.session.lock import lock_exclusive, unlock

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "JsonlStorage",
    "ReadOnlyStorage",
    "TEMP_MAX_AGE_S",
    "clean_stale_temp_files",
    "empty_file_header",
    "write_error",
]

FILE_MODE = 0o600
DIR_MODE = 0o700
TEMP_MAX_AGE_S = 60.0
_TEMP_RE = re.compile(r"^\..+\.jsonl\.[A-Za-z0-9_]{8}\.tmp$")
# When this process last cleaned each folder on a create (monotonic seconds): a temp file
# is only removed once it is TEMP_MAX_AGE_S old, so a create need not list a folder of
# thousands of sessions again within that time (an open always cleans).
_CLEANED_ON_CREATE: dict[str, float] = {}
# Folder fsyncs shared by the sessions created in a folder: a number is drawn (``next``
# on a count is atomic) for each new file once its name is in its folder, and for
# each fsync of a folder before it starts. A file whose number is below that of a
# finished fsync of its folder is durable there (it was created before that fsync
# began), so sessions created together need one fsync of their folder, not one each.
_NUMBERS = itertools.count(1)
_FOLDER_SYNCED: dict[str, int] = {}  # folder -> the number of its latest finished fsync
_ID_IN_NAME = re.compile(r"_([A-Za-z0-9][A-Za-z0-9_-]*)\.jsonl$")
_CREATE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW


def write_error(path: str, exc: OSError, what: str = "write to") -> SessionWriteError:
    """The error a failed write raises: it names the session file and the cause."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.EFBIG:
        reason += " (the file size limit, ulimit -f, was reached)"
    error = SessionWriteError(
        f"cannot {what} session file {path}: {reason}; the entry was not written and the "
        "session stays valid"
    )
    error.errno = exc.errno
    error.strerror = exc.strerror
    error.filename = path
    return error


def empty_file_header(path: str) -> SessionHeader:
    """The header pi gives an empty session file it opens: a new session (here keeping
    the id of the file's name, so it is still found by that id)."""
    header = SessionHeader.new(cwd=os.getcwd())
    match = _ID_IN_NAME.search(os.path.basename(path))
    if match:
        header.id = match.group(1)
    return header


def clean_stale_temp_files(directory: str, max_age: float = TEMP_MAX_AGE_S) -> list[str]:
    """Remove the ``.<name>.jsonl.XXXXXXXX.tmp`` files of ``directory`` that nobody holds
    and that are older than ``max_age`` seconds; returns their paths."""
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(directory) if _TEMP_RE.match(n)]
    except OSError:
        return removed
    now = time.time()
    for name in names:
        path = os.path.join(directory, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not _is_regular(st.st_mode) or now - st.st_mtime < max_age:
                continue
            try:
                lock_exclusive(fd, path)
            except SessionError:
                continue  # a writer holds it
            os.unlink(path)
            removed.append(path)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed


def _is_regular(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _write_all(fd: int, data: bytes) -> int:
    """Write all of ``data``; on an error, the OSError carries how much was written."""
    view = memoryview(data)
    done = 0
    try:
        while done < len(data):
            done += os.write(fd, view[done:])
    except OSError as exc:
        exc.written = done  # type: ignore[attr-defined]  # read back by the caller
        raise
    return done


def _temp_file(path: str) -> tuple[int, str]:
    """A new temporary file beside ``path``, opened for appending, mode 0600, locked."""
    directory, name = os.path.split(path)
    while True:
        temp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(
                temp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW, FILE_MODE
            )
        except FileExistsError:
            continue
        try:
            lock_exclusive(fd, temp)
        except BaseException:
            os.close(fd)
            os.unlink(temp)
            raise
        return fd, temp


def _write_temp(path: str, data: bytes, *, sync: bool = True) -> tuple[int, str]:
    fd, temp = _temp_file(path)
    try:
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise write_error(path, exc, "create") from None
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return fd, temp


class ReadOnlyStorage:
    """The storage of a session opened read-only: appends are refused."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def append(self, line: dict[str, Any]) -> None:
        raise SessionReadOnlyError(f"session {self.path} was opened read-only")

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


class JsonlStorage:
    """Appends lines to a locked session file (see the module docstring)."""

    __slots__ = ("path", "_fd", "_repair_to", "_newline", "_dirty", "_link")

    def __init__(self, path: str, fd: int, *, repair_to: int | None = None, newline: bool = False):
        self.path = path
        self._fd: int | None = fd
        self._repair_to = repair_to  # truncate to this size before the next append
        self._newline = newline  # write a newline before the next append
        self._dirty = False
        self._link = 0  # the number drawn when created, while its folder needs an fsync

    @staticmethod
    def create(path: str, header: SessionHeader) -> JsonlStorage:
        """Create a new session file holding ``header``, locked for appending.

        FileExistsError if ``path`` exists; SessionWriteError if the disk is full (no
        file is left then)."""
        directory = os.path.dirname(path) or "."
        now = time.monotonic()
        if now - _CLEANED_ON_CREATE.get(directory, -TEMP_MAX_AGE_S) >= TEMP_MAX_AGE_S:
            clean_stale_temp_files(directory)
            if len(_CLEANED_ON_CREATE) >= 1024:  # bounded: a process may use many folders
                _CLEANED_ON_CREATE.clear()
            _CLEANED_ON_CREATE[directory] = now
        data = encode_line(header.to_dict())
        # The name itself, created exclusively: of two processes creating one name, one
        # gets FileExistsError. Until the header is written the file is empty, which
        # every reader takes for a file a crash left (listing and search skip it, an
        # open makes it a new session with the id of its name); the lock is taken
        # first, so such an open fails rather than writing a header of its own.
        fd = os.open(path, _CREATE_FLAGS, FILE_MODE)
        try:
            lock_exclusive(fd, path)
        except BaseException:
            os.close(fd)  # another opener holds it: the file is its now
            raise
        try:
            _write_all(fd, data)
        except BaseException as exc:
            # still locked: nobody can take the file between the unlink and the close
            with contextlib.suppress(OSError):
                os.unlink(path)
            os.close(fd)
            if isinstance(exc, OSError):
                raise write_error(path, exc, "create") from None
            raise
        # No fsync here: creating a session is a call on the event loop, and a disk
        # busy with other writes can take tens of milliseconds per fsync. The first
        # ``sync`` (the end of the first turn, in a worker thread) makes the file and
        # its directory entry durable; a crash before it leaves no file, an empty one
        # or one holding the header, each opening as a new session with the id of its
        # name.
        storage = JsonlStorage(path, fd)
        storage._dirty = True
        storage._link = next(_NUMBERS)
        return storage

    @staticmethod
    def open_locked(path: str) -> tuple[JsonlStorage, LoadedSession]:
        """Lock an existing file for appending, then read it (no writer can interleave).

        An empty file is given a new header (pi's rule); a v1/v2 file is rewritten in
        the current version (see the module docstring)."""
        clean_stale_temp_files(os.path.dirname(path) or ".")
        fd = _open_and_lock(path)
        try:
            chunks = []
            while True:
                chunk = os.read(fd, 1 << 24)
                if not chunk:
                    break
                chunks.append(chunk)
            data = b"".join(chunks)
            try:
                loaded = parse_session(data, path)
            except EmptySessionFileError as empty:
                header = empty_file_header(path)
                line = encode_line(header.to_dict())
                try:
                    os.ftruncate(fd, 0)
                    _write_all(fd, line)
                except OSError as exc:
                    raise write_error(path, exc) from None
                diagnostic = f"{empty}: opened as a new session"
                loaded = LoadedSession(header, [], [diagnostic], len(line), len(line))
                return JsonlStorage(path, fd), loaded
            if loaded.migrated_from is not None:
                fd = _rewrite(path, fd, loaded)
        except BaseException:
            os.close(fd)
            raise
        repair = loaded.valid_end if loaded.valid_end < loaded.size else None
        return JsonlStorage(path, fd, repair_to=repair, newline=loaded.missing_newline), loaded

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, line: dict[str, Any]) -> None:
        fd = self._fd
        if fd is None:
            raise SessionError(f"session {self.path} is closed")
        data = encode_line(line)
        try:
            if self._repair_to is not None:
                os.ftruncate(fd, self._repair_to)
                self._repair_to = None
        except OSError as exc:
            raise write_error(self.path, exc) from None
        if self._newline:
            data = b"\n" + data
        try:
            _write_all(fd, data)
        except OSError as exc:
            done = int(getattr(exc, "written", 0))
            if done:  # a partial line: cut it off now, or else before the next append
                with contextlib.suppress(OSError):
                    self._repair_to = os.fstat(fd).st_size - done
                    os.ftruncate(fd, self._repair_to)
                    self._repair_to = None
            raise write_error(self.path, exc) from None
        self._newline = False
        self._dirty = True

    async def sync_off_loop(self) -> None:
        """``sync`` on a session sync thread (see ``file_sync``), the event loop free
        meanwhile; with nothing to sync, at once."""
        if self._fd is not None and (self._dirty or self._link):
            from harnessc.runtime.session.file_sync import sync_off_loop  # with the first turn

            await sync_off_loop(self.sync)

    def sync(self) -> None:
        try:
            if self._fd is not None and self._dirty:
                os.fsync(self._fd)
                self._dirty = False
        except OSError as exc:
            raise write_error(self.path, exc, "sync") from None
        if self._link:  # a new file survives a crash only once its folder does
            _sync_folder(os.path.dirname(self.path) or ".", self._link)
            self._link = 0

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._dirty:
                os.fsync(fd)
            if self._link:
                _sync_folder(os.path.dirname(self.path) or ".", self._link)
        except OSError as exc:
            raise write_error(self.path, exc, "sync") from None
        finally:
            unlock(fd)
            os.close(fd)


def _open_and_lock(path: str) -> int:
    """Open ``path`` for appending and take its lock, making sure the locked file is
    still the one at ``path`` (a migrating writer may have renamed a new one over it)."""
    for _ in range(10):
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            lock_exclusive(fd, path)
            here, there = os.fstat(fd), os.stat(path)
        except BaseException:
            os.close(fd)
            raise
        if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino):
            return fd
        unlock(fd)
        os.close(fd)
    raise SessionError(f"session {path} keeps being replaced; try again")


def _rewrite(path: str, fd: int, loaded: LoadedSession) -> int:
    """Write ``loaded`` (migrated) as a new file renamed over ``path``; returns its
    descriptor, locked (the old one is closed)."""
    parts = [encode_line(loaded.header.to_dict())]
    parts.extend(encode_line(entry.to_dict()) for entry in loaded.entries)
    data = b"".join(parts)
    new_fd, temp = _write_temp(path, data)
    try:
        os.replace(temp, path)
    except OSError as exc:
        os.close(new_fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise write_error(path, exc, "rewrite") from None
    _fsync_directory(os.path.dirname(path) or ".")
    unlock(fd)
    os.close(fd)
    loaded.diagnostics.append(
        f"{path}: version {loaded.migrated_from} session file migrated to version "
        f"{loaded.header.version} and rewritten (as pi does on open)"
    )
    loaded.size = loaded.valid_end = len(data)
    loaded.missing_newline = False
    return new_fd


def _sync_folder(folder: str, link: int) -> None:
    """Make the entry of the file created as number ``link`` durable in ``folder``: an
    fsync of the folder, unless one that began after its create has finished."""
    if _FOLDER_SYNCED.get(folder, 0) > link:
        return
    number = next(_NUMBERS)
    if not _fsync_directory(folder):
        return
    if number > _FOLDER_SYNCED.get(folder, 0):  # a race may keep a lower one: more fsyncs
        if len(_FOLDER_SYNCED) >= 1024 and folder not in _FOLDER_SYNCED:
            _FOLDER_SYNCED.clear()  # bounded: a process may use many folders
        _FOLDER_SYNCED[folder] = number


def _fsync_directory(path: str) -> bool:
    """fsync a folder; False when that failed (a file system that refuses it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        os.fsync(fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True

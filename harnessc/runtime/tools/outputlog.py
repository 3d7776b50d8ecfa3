"""Where bash keeps the full output of long commands, and for how long.

Logs live in one private folder, ``$TMPDIR/harnessc-bash-<uid>/`` (mode 0700), named
``bash-<pid>-<random>.log``. They are the agent process's: kept while it runs (its
tool results point the model at them) and deleted when it exits, the folder too once
empty. Logs left by a process that died without cleaning up (SIGKILL) are deleted the
next time any agent opens the folder, as are logs older than a week (and the loose
``$TMPDIR/harnessc-bash-*.log`` files of older versions, once untouched for an hour). One log holds at
most ``max_log_bytes`` (the rest of the output is counted, not stored), and before a
new log starts the oldest logs are deleted until all of them together stay under
``max_total_bytes``. Defaults: 1 GiB per log, 2 GiB in all; ``HARNESSC_BASH_LOG_MAX_MB``
and ``HARNESSC_BASH_LOGS_TOTAL_MB`` change them.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import stat
import tempfile
import threading
import time
from pathlib import Path

__all__ = ["MAX_LOG_BYTES", "MAX_TOTAL_BYTES", "OutputLogs", "output_logs"]

MAX_LOG_BYTES = 1 << 30
MAX_TOTAL_BYTES = 2 << 30
_MAX_AGE_S = 7 * 24 * 3600
_NAME = re.compile(r"bash-(\d+)-[0-9a-f]+\.log\Z")
_LEGACY = re.compile(r"harnessc-bash-[A-Za-z0-9_]+\.log\Z")  # loose files of older versions
_LEGACY_IDLE_S = 3600


def _env_mb(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value * 1024 * 1024 if value > 0 else default


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid > 0
    return True


class OutputLogs:
    """The log folder of this process: creates, caps, sweeps and deletes logs."""

    def __init__(
        self,
        root: Path | None = None,
        *,
        max_log_bytes: int | None = None,
        max_total_bytes: int | None = None,
    ) -> None:
        self._root = root
        self.max_log_bytes = max_log_bytes or _env_mb("HARNESSC_BASH_LOG_MAX_MB", MAX_LOG_BYTES)
        self.max_total_bytes = max_total_bytes or _env_mb(
            "HARNESSC_BASH_LOGS_TOTAL_MB", MAX_TOTAL_BYTES
        )
        self._own: set[str] = set()
        self._open: set[str] = set()
        self._lock = threading.Lock()
        self._folder: Path | None = None
        self._registered = False

    def folder(self) -> Path:
        """The private log folder, created (0700) and swept on first use."""
        with self._lock:
            if self._folder is None:
                self._folder = self._make_folder()
                self._sweep(self._folder)
            return self._folder

    def _make_folder(self) -> Path:
        root = self._root or Path(tempfile.gettempdir()) / f"harnessc-bash-{os.getuid()}"
        with contextlib.suppress(FileExistsError):
            root.mkdir(mode=0o700)
        info = os.lstat(root)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            # someone else's folder, or a symlink: use a fresh private one instead
            return Path(tempfile.mkdtemp(prefix="harnessc-bash-"))
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(root, 0o700)
        return root

    def _sweep_legacy(self) -> None:
        """Loose ``harnessc-bash-*.log`` files of older versions, untouched for an hour."""
        tmp = tempfile.gettempdir()
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(tmp) as it:
            for entry in it:
                if not _LEGACY.match(entry.name):
                    continue
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    mine = info.st_uid == os.getuid() and stat.S_ISREG(info.st_mode)
                    if mine and now - info.st_mtime > _LEGACY_IDLE_S:
                        os.unlink(entry.path)

    def _sweep(self, folder: Path) -> None:
        if self._root is None:
            self._sweep_legacy()
        now = time.time()
        with contextlib.suppress(OSError), os.scandir(folder) as it:
            for entry in it:
                match = _NAME.match(entry.name)
                if match is None:
                    continue
                with contextlib.suppress(OSError):
                    pid = int(match.group(1))
                    old = now - entry.stat(follow_symlinks=False).st_mtime > _MAX_AGE_S
                    if old or (pid != os.getpid() and not _alive(pid)):
                        os.unlink(entry.path)

    def _evict(self, folder: Path) -> None:
        """Delete the oldest logs (not being written) until a new one fits the total cap."""
        logs: list[tuple[float, int, str]] = []
        with contextlib.suppress(OSError), os.scandir(folder) as it:
            for entry in it:
                if _NAME.match(entry.name) and entry.path not in self._open:
                    with contextlib.suppress(OSError):
                        info = entry.stat(follow_symlinks=False)
                        logs.append((info.st_mtime, info.st_size, entry.path))
        budget = max(0, self.max_total_bytes - self.max_log_bytes)
        used = sum(size for _, size, _ in logs)
        for _, size, path in sorted(logs):
            if used <= budget:
                break
            with contextlib.suppress(OSError):
                os.unlink(path)
            self._own.discard(path)
            used -= size

    def create(self) -> tuple[int, str]:
        """A new log, open for writing: ``(descriptor, path)``. Call :meth:`closed` after.

        The folder is shared by the user's agents, and the last one to exit removes it
        when it is empty: a folder gone since this process made it is made again."""
        folder = self.folder()
        with self._lock:
            self._evict(folder)
            path = str(folder / f"bash-{os.getpid()}-{secrets.token_hex(6)}.log")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            try:
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:  # another agent's exit removed the empty folder
                self._folder = folder = self._make_folder()
                path = str(folder / os.path.basename(path))
                fd = os.open(path, flags, 0o600)
            self._own.add(path)
            self._open.add(path)
            if not self._registered:
                atexit.register(self.cleanup)
                self._registered = True
        return fd, path

    def closed(self, path: str) -> None:
        """The log is complete (it may be evicted from now on)."""
        with self._lock:
            self._open.discard(path)

    def cleanup(self) -> None:
        """Delete every log of this process, and the folder when nothing else is in it."""
        with self._lock:
            for path in list(self._own):
                with contextlib.suppress(OSError):
                    os.unlink(path)
            self._own.clear()
            self._open.clear()
            if self._folder is not None:
                with contextlib.suppress(OSError):
                    os.rmdir(self._folder)  # only when empty
                self._folder = None


_DEFAULT: OutputLogs | None = None
_DEFAULT_LOCK = threading.Lock()


def output_logs() -> OutputLogs:
    """The process-wide log folder bash uses."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = OutputLogs()
        return _DEFAULT

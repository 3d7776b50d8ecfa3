"""A stdio MCP server's log: its stderr and what it printed that was not JSON-RPC.

``logs/mcp-<server>.log`` in the project's data folder (``support.data_folder``),
created private (0600, in a 0700 folder) and never through a symlink. It holds at most ``max_bytes``
(10 MiB, ``HARNESSC_MCP_LOG_MAX_MB`` changes it): when it is full it becomes
``mcp-<server>.log.1`` (replacing the one before) and a new log starts, so a server
flooding its stderr uses at most twice the cap on disk.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

from harnessc.runtime.support.data_folder import make_folder

__all__ = ["MAX_LOG_BYTES", "ServerLog"]

MAX_LOG_BYTES = 10 * 1024 * 1024


def _max_bytes() -> int:
    try:
        value = int(os.environ.get("HARNESSC_MCP_LOG_MAX_MB", ""))
    except ValueError:
        return MAX_LOG_BYTES
    return value * 1024 * 1024 if value > 0 else MAX_LOG_BYTES


class ServerLog:
    """Appends bytes to the log, rotating it at the cap; ``close()`` when done."""

    def __init__(self, path: Path, max_bytes: int | None = None) -> None:
        self.path = path
        self.max_bytes = max_bytes or _max_bytes()
        self._fd: int | None = None
        self._size = 0

    def open(self) -> None:
        folder = self.path.parent
        make_folder(folder)
        info = os.lstat(folder)
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(folder, 0o700)
        self._fd = self._open_file()

    def _open_file(self) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.path, flags, 0o600)
        info = os.fstat(fd)
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, 0o600)  # a log an older version created readable by others
        self._size = info.st_size
        return fd

    def note(self, text: str) -> None:
        """One line of the agent's own (a start, a line that was not JSON-RPC)."""
        line = " ".join(text.split())
        self.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n".encode())

    def write(self, data: bytes) -> None:
        if self._fd is None or not data:
            return
        if self._size + len(data) > self.max_bytes:
            self._rotate()
            data = data[-self.max_bytes :]
        with contextlib.suppress(OSError):  # a full disk loses log lines, not the server
            os.write(self._fd, data)
            self._size += len(data)

    def _rotate(self) -> None:
        assert self._fd is not None
        os.close(self._fd)
        self._fd = None
        with contextlib.suppress(OSError):
            os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        with contextlib.suppress(OSError):
            self._fd = self._open_file()

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

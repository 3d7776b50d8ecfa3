"""One writer per session file: an exclusive ``flock`` on the file itself.

``flock`` locks belong to an open file description, so they are released when the
holder closes the file or dies (SIGKILL included) and never leak to child processes
(Python opens files close-on-exec). On Linux the holder's PID is read from
``/proc/locks`` for the error message; elsewhere the message says "another process".
"""

from __future__ import annotations

import fcntl
import os

from harnessc.runtime.session.session import SessionError

__all__ = ["SessionLockedError", "holder_pid", "lock_exclusive", "unlock"]


class SessionLockedError(SessionError):
    """Another process (or another open handle) is appending to this session."""

    def __init__(self, path: str, pid: int | None = None) -> None:
        self.path = path
        self.pid = pid
        who = f"process {pid}" if pid is not None else "another process"
        if pid == os.getpid():
            who = f"this process ({pid}) through another open handle"
        super().__init__(
            f"session {path} is locked by {who}; two writers would interleave entries. "
            "Close the other session first, or open it read-only."
        )


def lock_exclusive(fd: int, path: str) -> None:
    """Take the writer lock on ``fd`` without waiting; SessionLockedError if it is held."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionLockedError(path, holder_pid(fd)) from None


def unlock(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        pass


def holder_pid(fd: int) -> int | None:
    """The PID holding a flock on the file behind ``fd``, from /proc/locks (Linux)."""
    try:
        st = os.fstat(fd)
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return None
    wanted = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for line in lines:
        parts = line.split()
        # "1: FLOCK  ADVISORY  WRITE 5497 fe:00:2146494 0 EOF"; waiters have a "->" field
        if len(parts) < 6 or parts[1] == "->" or parts[1] != "FLOCK":
            continue
        try:
            major, minor, inode = parts[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == wanted:
                return int(parts[4])
        except ValueError:
            continue
    return None

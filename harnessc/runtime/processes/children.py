"""Child processes that die with the agent and cannot read its secrets.

Two guards, for every program the agent starts (the bash tool, command hooks; MCP stdio
servers can use the same two calls):

- :func:`protect_secrets` makes the agent's process non-dumpable (Linux
  ``prctl(PR_SET_DUMPABLE, 0)``): another process of the same user can no longer open
  ``/proc/<agent>/environ``, ``mem``, ``fd/*`` or ``task/*/environ``, attach a debugger
  or read a core dump, so a command cannot fetch the API keys the agent holds. Root
  gets past that with ``CAP_SYS_PTRACE``, which the supervisor below takes away from
  what it runs; without it, root can still read ``/proc/<agent>/environ`` (not ``mem``),
  so the credential values are also blanked in the environment block that file shows.
- :func:`supervised` wraps a command line in ``child_supervisor.py``: a small process,
  leader of its own process group, that runs the command and SIGKILLs the whole group
  (the command and everything it started) when the agent dies, even by SIGKILL. Spawn
  the returned argv as usual; the spawned process's pid is the group id, so
  ``os.killpg(pid, sig)`` still stops everything, as before.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harnessc.runtime.support.secrets import scrubbed_environ

__all__ = ["SUPERVISOR", "protect_secrets", "supervised"]

SUPERVISOR = str(Path(__file__).with_name("child_supervisor.py"))

_PR_SET_DUMPABLE = 4
# Fields of /proc/<pid>/stat after the command name: env_start and env_end.
_ENV_START, _ENV_END = 47, 48
_LOCK = threading.Lock()
_protected_pid = 0


def protect_secrets() -> bool:
    """Keep this process's credentials from its children; True when it is protected.

    Makes the process non-dumpable (once) and blanks the value of every credential
    variable (``secrets.py``'s rules) in the environment block ``/proc/<pid>/environ``
    shows: on Linux, root without ``CAP_SYS_PTRACE`` can still read that file of a
    non-dumpable process of its own. Python's ``os.environ``, ``getenv`` and the
    environment of children started with the inherited one keep every value (each
    blanked variable is set again first, into memory of its own). Call it again after
    more secret names are registered: the blanking is repeated, the rest is done.
    Only Linux has these calls; elsewhere (and when they fail) this returns False.
    """
    global _protected_pid
    if not sys.platform.startswith("linux"):
        return False
    with _LOCK:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            return False
        if _protected_pid != os.getpid():
            if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
                return False
            _protected_pid = os.getpid()
        _blank_environment_block(ctypes)
        return True


def _blank_environment_block(ctypes: Any) -> None:
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[_ENV_START]), int(fields[_ENV_END])
    except (OSError, ValueError, IndexError):
        return
    if not 0 < start < end:
        return
    block = ctypes.string_at(start, end - start)
    entries: list[tuple[int, str, str]] = []  # (offset of the value, name, value)
    offset = 0
    for raw in block.split(b"\0"):
        name, sep, value = raw.partition(b"=")
        if sep and name:
            entries.append((offset + len(name) + 1, os.fsdecode(name), os.fsdecode(value)))
        offset += len(raw) + 1
    kept = scrubbed_environ({name: value for _, name, value in entries}, passthrough=())
    for at, name, value in entries:
        if name in kept or not value:
            continue
        current = os.environ.get(name)
        if current is not None:
            os.putenv(name, current)  # getenv and inherited environments keep the value
        ctypes.memset(start + at, 0, len(os.fsencode(value)))


def supervised(argv: Sequence[str], env: Mapping[str, str] | None = None) -> list[str]:
    """``argv`` run under the supervisor, for a child started with environment ``env``
    (default: this process's). Also makes the agent non-dumpable first.

    The child needs no ``start_new_session``: the supervisor makes its own group. When
    this Python cannot be found (``sys.executable`` empty) or the OS has no ``fork``,
    ``argv`` comes back unchanged.
    """
    protect_secrets()
    if not sys.executable or not hasattr(os, "fork"):
        return list(argv)
    source = os.environ if env is None else env
    lc_ctype = source.get("LC_CTYPE")
    marker = "-" if lc_ctype is None else "=" + lc_ctype
    return [sys.executable, "-I", "-S", SUPERVISOR, str(os.getpid()), marker, "--", *argv]

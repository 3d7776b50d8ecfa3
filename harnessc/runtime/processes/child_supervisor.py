"""The small process between the agent and a command it runs (see ``children.py``).

Started as ``python -I -S child_supervisor.py AGENT_PID LC_CTYPE -- PROGRAM ARGS...``
(standard library only, no harnessc import), it:

- becomes the leader of its own process group (unless it already is), so one
  ``killpg(pid)`` reaches it, the program and everything the program starts;
- removes ``CAP_SYS_PTRACE`` from the capability bounding set, so a program run by root
  cannot read the agent's memory or environment through /proc (the agent is
  non-dumpable; only that capability overrides it);
- runs the program and exits the way it did (same code, same signal);
- kills its whole group with SIGKILL as soon as the agent process is gone (a SIGKILLed
  agent leaves no command running), watching the agent with a pidfd (Linux) or by
  polling its parent pid;
- forwards SIGTERM, SIGINT and SIGHUP sent to it alone to the program (those the agent
  ignores stay ignored, for the program too).

``LC_CTYPE`` is the program's ``LC_CTYPE`` as the agent meant it (``=value``, or ``-``
when unset): Python sets ``LC_CTYPE=C.UTF-8`` in its own environment at start in a C
locale, and the program must not inherit that.
"""

from __future__ import annotations

import os
import select
import signal
import sys

__all__ = ["main"]

PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_LOWER = 3
CAP_SETPCAP = 8
CAP_SYS_PTRACE = 19
_POLL_S = 0.2  # how often the agent's liveness is checked without a pidfd
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _capability_sets() -> dict[str, int]:
    sets: dict[str, int] = {}
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name.startswith("Cap"):
                    sets[name] = int(value.strip(), 16)
    except (OSError, ValueError):
        pass
    return sets


def _drop_ptrace_capability() -> None:
    bit = 1 << CAP_SYS_PTRACE
    sets = _capability_sets()
    if not (sets.get("CapBnd", 0) | sets.get("CapAmb", 0)) & bit:
        return
    if not sets.get("CapEff", 0) & (1 << CAP_SETPCAP | bit):
        return  # an ordinary user: the program cannot gain the capability (spares ctypes)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, CAP_SYS_PTRACE, 0, 0)
        libc.prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass


def _agent_watch(agent: int) -> int | None:
    """A pidfd that becomes readable when the agent exits; None without pidfd support."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return int(pidfd_open(agent))
    except OSError:
        return None


def _exit_like(status: int) -> None:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            if sig != signal.SIGKILL:
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
            os.kill(os.getpid(), sig)
        except (OSError, ValueError):
            pass
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _kill_group() -> None:
    os.killpg(0, signal.SIGKILL)
    os._exit(137)  # not reached: the supervisor is in the group


def main(argv: list[str]) -> None:
    if len(argv) < 5 or argv[3] != "--":
        sys.stderr.write("usage: child_supervisor.py AGENT_PID LC_CTYPE -- PROGRAM [ARGS...]\n")
        os._exit(2)
    agent = int(argv[1])
    lc_ctype, command = argv[2], argv[4:]
    if os.getpgrp() != os.getpid():
        os.setsid()
    watch = _agent_watch(agent)
    if os.getppid() != agent:  # the agent is gone already (or never was our parent)
        _kill_group()
    _drop_ptrace_capability()
    if lc_ctype.startswith("="):
        os.environ["LC_CTYPE"] = lc_ctype[1:]
    else:
        os.environ.pop("LC_CTYPE", None)

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    child = 0

    def forward(sig: int, _frame: object) -> None:
        if child:
            try:
                os.kill(child, sig)
            except OSError:
                pass

    # a signal the agent ignores stays ignored (the program inherits that), the others
    # are forwarded
    forwarded = [sig for sig in _FORWARDED if signal.getsignal(sig) != signal.SIG_IGN]
    for sig in forwarded:
        signal.signal(sig, forward)
    child = os.fork()
    if child == 0:
        # Python ignores SIGPIPE and SIGXFSZ; the program gets the defaults, as it would
        # from subprocess (restore_signals)
        for sig in (*forwarded, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        for fd in (wake_r, wake_w, watch):
            if fd is not None:
                os.close(fd)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            os.write(2, f"cannot run {command[0]}: {exc.strerror or exc}\n".encode())
        os._exit(127)
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            _exit_like(status)
        watched = [wake_r] if watch is None else [wake_r, watch]
        try:
            ready, _, _ = select.select(watched, [], [], _POLL_S if watch is None else None)
        except InterruptedError:
            continue
        if (watch is not None and watch in ready) or os.getppid() != agent:
            _kill_group()
        if wake_r in ready:
            try:
                os.read(wake_r, 512)
            except BlockingIOError:
                pass


if __name__ == "__main__":
    main(sys.argv)

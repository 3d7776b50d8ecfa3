"""A terminal's modes, saved and put back, and signal handlers on the loop (for the REPL
and a one-shot run)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["TerminalModes", "add_signal", "remove_signal"]


class TerminalModes:
    """The modes of terminal ``fd`` (default: stdin, when it is a terminal) as they were
    when made; ``restore()`` puts them back (safe from a signal handler, and more than
    once). ``saved`` is False when there was no terminal to save."""

    def __init__(self, fd: int | None = None) -> None:
        self._saved: list[Any] | None = None
        self._fd = -1
        try:
            import termios

            if fd is None:
                if not sys.stdin.isatty():
                    return
                fd = sys.stdin.fileno()
            self._saved = termios.tcgetattr(fd)
            self._fd = fd
        except (ImportError, OSError, ValueError, AttributeError):  # termios.error: OSError
            self._saved = None

    @property
    def saved(self) -> bool:
        return self._saved is not None

    def restore(self) -> None:
        if self._saved is None:
            return
        with contextlib.suppress(Exception):
            import termios

            termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)  # keeps typed keys


def add_signal(loop: asyncio.AbstractEventLoop, name: str, handler: Callable[[], None]) -> None:
    import signal

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
        loop.add_signal_handler(getattr(signal, name), handler)


def remove_signal(loop: asyncio.AbstractEventLoop, name: str) -> None:
    import signal

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
        loop.remove_signal_handler(getattr(signal, name))

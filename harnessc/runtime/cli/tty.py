"""A terminal's modes, saved and put back (the REPL's and a one-shot run's quiet keys)."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

__all__ = ["TerminalModes"]


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

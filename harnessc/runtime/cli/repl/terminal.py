"""The interactive mode's terminal: its modes put back on every way out, and signals."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from harnessc.runtime.cli.tty import TerminalModes, add_signal, remove_signal

__all__ = [
    "TerminalModes",
    "add_signal",
    "remove_signal",
    "stdin_is_terminal",
    "terminal_restored",
]


@contextlib.contextmanager
def terminal_restored() -> Iterator[TerminalModes]:
    """Put the terminal back as it was, even when we leave while readline (or the
    type-ahead reader) holds it."""
    modes = TerminalModes()
    try:
        yield modes
    finally:
        modes.restore()


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False

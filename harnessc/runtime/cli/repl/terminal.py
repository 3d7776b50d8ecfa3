"""The interactive mode's terminal: its modes put back on every way out, and signals."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Iterator

from harnessc.runtime.cli.tty import TerminalModes

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


def add_signal(loop: asyncio.AbstractEventLoop, name: str, handler: Callable[[], None]) -> None:
    import signal

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
        loop.add_signal_handler(getattr(signal, name), handler)


def remove_signal(loop: asyncio.AbstractEventLoop, name: str) -> None:
    import signal

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError, AttributeError):
        loop.remove_signal_handler(getattr(signal, name))


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False

"""A one-shot run on a terminal: keys typed while it runs are not echoed.

The tty would echo them onto the spinner line and garble it. Only ``ECHO`` is turned
off; the line discipline is kept, so the typed text stays in the terminal's input
queue and the shell reads it (and shows it) once the run has exited. The terminal's
modes are put back on every way out: the run ends, Ctrl-C, an exception, or SIGTERM
(which then ends the process as before).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType
from typing import Any

from harnessc.runtime.cli.tty import TerminalModes

__all__ = ["QuietKeys"]


def _foreground_terminal() -> int | None:
    """stdin's descriptor when it is a terminal this process owns in the foreground (a
    background job that changed the modes would be stopped by SIGTTOU)."""
    try:
        if sys.stdin is None or not sys.stdin.isatty():
            return None
        fd = sys.stdin.fileno()
        return fd if os.tcgetpgrp(fd) == os.getpgrp() else None
    except (OSError, ValueError, AttributeError):
        return None


class QuietKeys:
    """The terminal's echo turned off from ``start()`` to ``stop()`` (both safe to call
    more than once; nothing happens without a foreground terminal)."""

    def __init__(self) -> None:
        self._modes: TerminalModes | None = None  # the modes to put back
        self._previous: Any = None

    def start(self) -> None:
        fd = _foreground_terminal()
        if fd is None or self._modes is not None:
            return
        modes = TerminalModes(fd)
        if not modes.saved:
            return
        try:
            import termios

            quiet = termios.tcgetattr(fd)
            quiet[3] &= ~termios.ECHO  # lflag
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except (ImportError, OSError):  # termios.error is an OSError
            return
        self._modes = modes
        with contextlib.suppress(ValueError):  # ValueError: not the main thread
            self._previous = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, self._on_terminate)

    def stop(self) -> None:
        self._restore()
        if self._previous is not None:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGTERM, self._previous)
            self._previous = None

    def _restore(self) -> None:
        if self._modes is not None:
            self._modes.restore()  # keeps the typed keys queued
            self._modes = None

    def _on_terminate(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM: the modes back first, then the process ends as it would have."""
        previous = self._previous
        self.stop()
        if previous == signal.SIG_IGN:
            return
        if not callable(previous):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            previous(signum, frame)

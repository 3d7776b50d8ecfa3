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
        self._fd: int | None = None
        self._saved: list[Any] | None = None
        self._previous: Any = None

    def start(self) -> None:
        fd = _foreground_terminal()
        if fd is None or self._saved is not None:
            return
        try:
            import termios

            saved = termios.tcgetattr(fd)
            quiet = termios.tcgetattr(fd)
            quiet[3] &= ~termios.ECHO  # lflag
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except (ImportError, OSError):  # termios.error is an OSError
            return
        self._fd, self._saved = fd, saved
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
        if self._saved is None or self._fd is None:
            return
        with contextlib.suppress(ImportError, OSError):
            import termios

            termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)  # keeps typed keys
        self._saved = None

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

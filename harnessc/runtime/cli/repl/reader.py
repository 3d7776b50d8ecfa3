"""Reading the user's lines for the interactive mode, in a thread, one read at a time."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from typing import Any

__all__ = ["EOF", "INTERRUPT", "LineReader", "terminal_restored"]

EOF = object()  # Ctrl-D
INTERRUPT = object()  # Ctrl-C while a question waits for its answer


@contextlib.contextmanager
def terminal_restored() -> Any:
    """Put the terminal back as it was, even when we leave while readline holds it."""
    saved = None
    try:
        import termios

        if sys.stdin.isatty():
            saved = termios.tcgetattr(sys.stdin.fileno())
    except (ImportError, OSError, ValueError):
        saved = None
    try:
        yield
    finally:
        if saved is not None:
            with contextlib.suppress(Exception):
                import termios

                termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)


class LineReader:
    """Reads lines in a thread; each read starts only when the loop asks for it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        self._loop = loop
        self._queue = queue
        self._go = threading.Event()
        self._lock = threading.Lock()
        self._pending: str | None = None  # the prompt of a requested read not started yet
        self._reading = False  # inside input()
        self._prompt = ""  # the prompt input() showed
        self._thread = threading.Thread(target=self._run, name="repl-input", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def request(self, prompt: str) -> bool:
        """Ask for the next line, shown with ``prompt``. False when a read is already
        going (it will deliver the line; the caller prints the prompt itself)."""
        with self._lock:
            if self._reading:
                return False
            self._pending = prompt  # a read not started yet shows the latest prompt
            self._go.set()
            return True

    def showing(self) -> str | None:
        """The prompt on screen while a read waits for typing (None: not reading)."""
        with self._lock:
            return self._prompt if self._reading else None

    def _run(self) -> None:
        while True:
            self._go.wait()
            with self._lock:
                self._go.clear()
                prompt = self._pending or ""
                self._pending = None
                self._reading = True
                self._prompt = prompt
            try:
                line: Any = input(prompt)
            except EOFError:
                line = EOF
            except Exception:  # a closed stdin
                line = EOF
            with self._lock:
                self._reading = False
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line)
            except RuntimeError:  # the loop is closed: we are quitting
                return
            if line is EOF:
                return

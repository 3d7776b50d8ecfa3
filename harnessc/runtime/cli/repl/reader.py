"""Reading the user's lines for the interactive mode, in a thread, one read at a time.

A read is either a line (``input()`` with readline, asked for by ``request``) or, while
a run goes on a terminal, type-ahead (``collect``): keys read with the echo off, so
nothing lands on the spinner line; Enter still hands the line over (steering) and the
unfinished text pre-fills the next ``request(..., prefill=True)``.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from typing import Any

from harnessc.runtime.cli.repl.history import add as add_to_history
from harnessc.runtime.cli.repl.typeahead import TypeAhead, prefill_supported

__all__ = ["EOF", "INTERRUPT", "LineReader"]

EOF = object()  # Ctrl-D
INTERRUPT = object()  # Ctrl-C while a question waits for its answer


class LineReader:
    """Reads in a thread; each read starts only when the loop asks for it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> None:
        self._loop = loop
        self._queue = queue
        self._go = threading.Event()
        self._lock = threading.Lock()
        # The read asked for and not started yet: ("line", prompt, prefill) or ("collect",).
        self._job: tuple[Any, ...] | None = None
        self._reading = False  # inside input()
        self._collecting = False  # inside TypeAhead.collect()
        self._collected = threading.Event()  # set when no collection runs
        self._collected.set()
        self._prompt = ""  # the prompt input() showed
        self._ahead: TypeAhead | None = None
        if prefill_supported(sys.stdin, sys.stdout):
            encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
            self._ahead = TypeAhead(sys.stdin.fileno(), encoding)
        self._thread = threading.Thread(target=self._run, name="repl-input", daemon=True)

    @property
    def types_ahead(self) -> bool:
        """Whether keys typed during a run are collected quietly (a terminal with readline)."""
        return self._ahead is not None

    def start(self) -> None:
        self._thread.start()

    def request(self, prompt: str, *, prefill: bool = False) -> bool:
        """Ask for the next line, shown with ``prompt`` (and, with ``prefill``, the text
        typed ahead during the last run already in the line). False when a read is
        already going (it will deliver the line; the caller prints the prompt itself)."""
        self.stop_collecting()
        with self._lock:
            if self._reading:
                return False
            self._job = ("line", prompt, prefill)  # a read not started yet: the latest
            self._go.set()
            return True

    def collect(self) -> None:
        """While a run goes: gather typed keys quietly; Enter delivers the line. Without
        type-ahead support, an ordinary read with no prompt (as before)."""
        if self._ahead is None:
            self.request("")
            return
        with self._lock:
            if self._reading or self._collecting or self._job is not None:
                return
            self._job = ("collect",)
            self._collected.clear()
            self._go.set()

    def stop_collecting(self) -> None:
        """End a type-ahead collection; returns once the terminal's modes are back."""
        if self._ahead is None:
            return
        with self._lock:
            if self._job is not None and self._job[0] == "collect":
                self._job = None  # asked for but not started
                self._go.clear()
                self._collected.set()
            collecting = self._collecting
        if collecting:
            self._ahead.stop()
            self._collected.wait(timeout=2.0)

    def close(self) -> None:
        """The REPL is leaving: no collection runs any more, its pipe is closed."""
        self.stop_collecting()
        if self._ahead is not None:
            with self._lock:
                idle = not self._collecting
            if idle:
                self._ahead.close()
                self._ahead = None  # later reads are ordinary ones

    def showing(self) -> str | None:
        """The prompt on screen while a read waits for typing (None: not reading)."""
        with self._lock:
            return self._prompt if self._reading else None

    def _run(self) -> None:
        while True:
            self._go.wait()
            with self._lock:
                self._go.clear()
                job, self._job = self._job, None
                if job is None:
                    continue
                if job[0] == "collect":
                    assert self._ahead is not None
                    self._ahead.arm()
                    self._collecting = True
                else:
                    self._reading = True
                    self._prompt = job[1]
            if job[0] == "collect":
                line = self._collect()
                if line is None:  # stopped: nothing to deliver
                    continue
            else:
                line = self._input(job[1], job[2])
                with self._lock:
                    self._reading = False
            try:
                self._loop.call_soon_threadsafe(self._queue.put_nowait, line)
            except RuntimeError:  # the loop is closed: we are quitting
                return
            if line is EOF and job[0] == "line":
                return

    def _collect(self) -> Any:
        assert self._ahead is not None
        try:
            line = self._ahead.collect()
            if line:
                add_to_history(line)  # as input() does
            return line
        except EOFError:
            return EOF
        finally:
            with self._lock:
                self._collecting = False
                self._collected.set()

    def _input(self, prompt: str, prefill: bool) -> Any:
        text = ""
        if prefill and self._ahead is not None:
            text, self._ahead.text = self._ahead.text, ""
        unhook = _prefill(text) if text else None
        try:
            return input(prompt)
        except EOFError:
            return EOF
        except Exception:  # a closed stdin
            return EOF
        finally:
            if unhook is not None:
                unhook()


def _prefill(text: str) -> Callable[[], None]:
    """Start the next readline line with ``text`` (as if typed); returns the undo."""
    import readline

    def insert() -> None:
        readline.insert_text(text)
        readline.redisplay()

    readline.set_pre_input_hook(insert)
    return lambda: readline.set_pre_input_hook(None)

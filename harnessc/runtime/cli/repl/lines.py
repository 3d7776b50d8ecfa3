"""Lines piped into the interactive mode (``printf 'hi\\n/status\\n' | agent -i``).

Without a terminal the REPL reads its script with plain ``readline()`` calls in a thread,
one read at a time when the loop asks for it; prompt_toolkit is not loaded. The ``> ``
prompt is still written, so a program driving the REPL sees when it is idle.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any, TextIO

__all__ = ["EOF", "INTERRUPT", "ScriptReader"]

EOF = object()  # Ctrl-D, or the end of the input
INTERRUPT = object()  # Ctrl-C while a question waits for its answer


class ScriptReader:
    """Reads stdin's lines in a thread; each read starts only when ``request`` asks."""

    def __init__(self, lines: asyncio.Queue[Any], out: TextIO) -> None:
        self._lines = lines
        self._out = out
        self._lock = threading.Lock()
        self._reading = False
        self._ended = False

    def start(self) -> None:
        pass

    def request(self, prompt: str, *, question: bool = False) -> bool:
        """Write ``prompt`` and read the next line; False when a read is already going
        (it will deliver the line; the caller writes the prompt itself)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._reading:
                return False
            self._reading = True
        if self._ended:
            self._deliver(loop, EOF)
            return True
        self._out.write(prompt)
        self._out.flush()
        threading.Thread(target=self._read, args=(loop,), name="repl-input", daemon=True).start()
        return True

    def collect(self) -> None:
        """A script's next line waits for the run: nothing to read meanwhile."""

    def showing(self) -> str | None:
        return None

    async def aclose(self) -> None:
        pass

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            line: Any = sys.stdin.readline()
        except (OSError, ValueError):  # a closed stdin
            line = ""
        if not line:
            self._ended = True
            line = EOF
        else:
            line = line.rstrip("\n")
        self._deliver(loop, line)

    def _deliver(self, loop: asyncio.AbstractEventLoop, line: Any) -> None:
        with self._lock:
            self._reading = False
        try:
            loop.call_soon_threadsafe(self._lines.put_nowait, line)
        except RuntimeError:  # the loop is closed: we are quitting
            pass

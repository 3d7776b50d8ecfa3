"""Type-ahead: keys typed while a run goes, read with the terminal's echo off.

While the agent works, the reader thread does not sit in ``input()`` (readline would
echo every key onto the spinner line). It reads the keys itself, with the tty's
``ECHO`` and ``ICANON`` off and ``ISIG`` on (Ctrl-C still sends SIGINT), keeps the
text typed so far, and hands back a whole line when Enter is pressed (steering) or
an end of input for Ctrl-D on an empty line. When the run ends, what was typed pre-fills the
next prompt (readline's pre-input hook). The terminal's modes are put back when the
collection stops; ``terminal_restored`` in ``reader`` covers every other way out.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import select
import threading
from collections import deque
from typing import Any

__all__ = ["TypeAhead", "prefill_supported"]

_ESC = "\x1b"
_END = object()  # Ctrl-D on an empty line, or the end of the input


def prefill_supported(stdin: Any, stdout: Any) -> bool:
    """Whether typed-ahead text can be put back at the prompt: both ends are a terminal
    (``input()`` then uses readline), readline has a pre-input hook, termios exists."""
    try:
        if not (stdin.isatty() and stdout.isatty()):
            return False
        import readline
        import termios  # noqa: F401
    except (ImportError, AttributeError, ValueError, OSError):
        return False
    return hasattr(readline, "set_pre_input_hook") and hasattr(readline, "insert_text")


class TypeAhead:
    """Collects keys from the terminal ``fd`` in the reader thread until ``stop()``."""

    def __init__(self, fd: int, encoding: str = "utf-8") -> None:
        self.fd = fd
        self.text = ""  # typed so far, for the next prompt
        self._encoding = encoding or "utf-8"
        self._wake_r, self._wake_w = os.pipe()
        self._stop = threading.Event()
        self._escape = ""  # an escape sequence being skipped (arrow keys and the like)
        self._done: deque[str | object] = deque()  # whole lines (and EOF) not handed back yet

    def close(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def arm(self) -> None:
        """Before a ``collect``: forget the ``stop()`` of the previous one."""
        self._stop.clear()
        with contextlib.suppress(OSError):
            while select.select([self._wake_r], [], [], 0)[0]:
                os.read(self._wake_r, 64)

    def stop(self) -> None:
        """Make a running ``collect`` return None (from any thread)."""
        self._stop.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def collect(self) -> str | None:
        """Read keys until Enter (returns the line) or ``stop()`` (returns None); raises
        EOFError on Ctrl-D at an empty line or at the end of the input, as ``input()``.
        ``self.text`` keeps a partial line; further lines of a paste come from the next
        calls."""
        import termios

        if self._done:
            return self._next_done()
        try:
            saved = termios.tcgetattr(self.fd)
        except (termios.error, OSError):
            return None
        quiet = list(saved)
        quiet[3] &= ~(termios.ECHO | termios.ICANON)  # lflag: no echo, key by key
        # Ctrl-C stays SIGINT (the REPL aborts the run) without dropping keys not read yet.
        quiet[3] |= termios.ISIG | termios.NOFLSH
        chars = list(saved[6])
        chars[termios.VMIN] = 1
        chars[termios.VTIME] = 0
        quiet[6] = chars
        controls = _Controls(saved[6])
        decoder = codecs.getincrementaldecoder(self._encoding)(errors="replace")
        try:
            termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
            while not self._stop.is_set():
                try:
                    ready, _, _ = select.select([self.fd, self._wake_r], [], [])
                    if self._wake_r in ready or self._stop.is_set():
                        continue
                    data = os.read(self.fd, 1024)
                except (OSError, ValueError):  # the terminal went away
                    data = b""
                if not data:
                    raise EOFError
                self._keys(decoder.decode(data), controls)
                if self._done:
                    return self._next_done()
            return None
        finally:
            # TCSANOW: keys typed meanwhile stay queued for readline.
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    def _next_done(self) -> str:
        done = self._done.popleft()
        if done is _END:
            raise EOFError
        return str(done)

    def _keys(self, keys: str, controls: _Controls) -> None:
        for key in keys:
            if self._escape:
                self._escape = _skip_escape(self._escape + key)
            elif key == _ESC:
                self._escape = _ESC
            elif key in ("\r", "\n"):
                self._done.append(self.text)
                self.text = ""
            elif key in controls.erase:
                self.text = self.text[:-1]
            elif key == controls.kill:
                self.text = ""
            elif key == controls.werase:
                self.text = self.text.rstrip()
                self.text = self.text[: max(self.text.rfind(" "), self.text.rfind("\t")) + 1]
            elif key == controls.eof:
                if not self.text:
                    self._done.append(_END)
            elif key >= " ":
                self.text += key


class _Controls:
    """The terminal's editing keys (erase, kill, word erase, end of file)."""

    __slots__ = ("eof", "erase", "kill", "werase")

    def __init__(self, chars: list[Any]) -> None:
        import termios

        def char(index: int, default: str) -> str:
            value = chars[index]
            if isinstance(value, bytes):
                value = value.decode("latin-1")
            elif isinstance(value, int):
                value = chr(value)
            return value if value and value != "\x00" else default

        self.erase = char(termios.VERASE, "\x7f") + "\x7f\x08"
        self.kill = char(termios.VKILL, "\x15")
        self.werase = char(termios.VWERASE, "\x17")
        self.eof = char(termios.VEOF, "\x04")


def _skip_escape(sequence: str) -> str:
    """The rest of an escape sequence still to skip ('' once it is complete)."""
    if len(sequence) == 2:
        return sequence if sequence[1] in "[O" else ""  # CSI / SS3 go on; Alt+key ends
    if sequence[1] == "O":
        return ""  # SS3: one final character
    return "" if "@" <= sequence[-1] <= "~" else sequence  # CSI ends at a final byte

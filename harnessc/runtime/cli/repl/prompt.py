"""The interactive mode's input on a terminal: prompt_toolkit.

Imported only when the REPL runs on a terminal (``run_repl``), never for one-shot runs,
piped input, ``--help`` or ``--json``. One ``PromptSession`` reads every line: history
in the session directory's ``.history``, completion of ``/commands``, skills, templates
and file paths (Tab), multi-line input (Alt-Enter or a line ending in ``\\``), bracketed
paste. Output written while a prompt is on screen goes above it (``patch_stdout``);
while a run works, the status line and a ``steer>`` prompt stand below the output: a line
entered there is steering, text left unentered moves on to the next ``>`` prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import ANSI, AnyFormattedText
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import create_input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from harnessc.runtime.cli.output import format_duration
from harnessc.runtime.cli.repl.lines import EOF, INTERRUPT
from harnessc.runtime.support.data_folder import make_folder

__all__ = ["AboveThePrompt", "StatusLine", "TerminalReader", "raw_terminal"]

STEER_PROMPT = "steer> "
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|[\r\x07]")  # styles, cursor codes
_RESTART = object()  # the prompt on screen gives way to another one (its text carried over)


def raw_terminal() -> contextlib.AbstractContextManager[None]:
    """stdin's terminal in prompt_toolkit's raw mode (the modes back at the end)."""
    return create_input().raw_mode()


class AboveThePrompt(io.TextIOBase):
    """A stream for the REPL's output on a terminal: while a prompt is on screen, whole
    lines are printed above it (``run_in_terminal``) and an unfinished line (a reply
    still streaming) is drawn at the top of the prompt's area until its line ends;
    otherwise the text goes straight to ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream
        self._pending = ""  # written, not printed yet
        self.redraw: Callable[[], None] = lambda: None

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self._stream, "encoding", None) or "utf-8")

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in text:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if not self._pending:
            return
        app = get_app_or_none()
        if app is None or not app.is_running:
            text, self._pending = self._pending, ""
            self._print(text)
            return
        lines, newline, rest = self._pending.rpartition("\n")
        self._pending = rest
        if newline:
            # The prompt's area is erased, the lines written where it began, and the
            # prompt drawn again below them; the terminal stays raw (run_in_terminal's
            # cooked mode would let the tty echo keys typed meanwhile, or eat Ctrl-D).
            app.renderer.erase()
            self._print(lines + newline)
        self.redraw()

    def unfinished(self) -> str:
        """The line being written, not ended yet (drawn above the prompt)."""
        return self._pending

    def _print(self, text: str) -> None:
        self._stream.write(text)
        self._stream.flush()


class StatusLine:
    """The spinner of a run, drawn as the line above the ``steer>`` prompt (the printer's
    ``Spinner``, for the interactive mode on a terminal)."""

    def __init__(self, ascii_only: bool) -> None:
        self._frames = "|/-\\" if ascii_only else "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
        self._label: str | None = None
        self._since = 0.0
        self.suffix: Callable[[], str] | None = None  # live figures after the label

    def set(self, label: str) -> None:
        if label != self._label:
            self._since = time.monotonic()
            self._label = label

    def hide(self) -> None:
        self._label = None

    def clear(self) -> None:
        """Nothing to erase: the prompt's area is redrawn below any output."""

    def close(self) -> None:
        self.hide()

    def text(self) -> str | None:
        if self._label is None:
            return None
        elapsed = time.monotonic() - self._since
        frame = self._frames[int(elapsed * 10) % len(self._frames)]
        extra = self.suffix() if self.suffix is not None else ""
        return f"{frame} {self._label} {format_duration(elapsed)}{extra}"


class CommandCompleter(Completer):
    """``/commands`` (built-in, skills, templates, an extension's) at the start of the
    input; file paths (relative to ``cwd``) for any other word."""

    def __init__(self, commands: Callable[[], Iterable[str]], cwd: str) -> None:
        self._commands = commands
        self._paths = PathCompleter(expanduser=True, get_paths=lambda: [cwd])
        self._cwd = cwd

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        before = document.text_before_cursor
        if before.startswith("/") and not any(c.isspace() for c in before):
            for name in sorted(set(self._commands())):
                if name.startswith(before):
                    yield Completion(name, start_position=-len(before))
            return
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if word.startswith("/") and not os.path.isabs(word):
            return
        yield from self._paths.get_completions(Document(word, len(word)), complete_event)


class TerminalReader:
    """Reads lines with prompt_toolkit; one prompt at a time, started by ``request`` (a
    question or the ``>`` prompt) or ``collect`` (during a run), each entered line put on
    ``lines``. ``interrupt`` is called for Ctrl-C and returns True when it aborted a run."""

    def __init__(
        self,
        lines: asyncio.Queue[Any],
        *,
        history_dir: str | os.PathLike[str] | None,
        commands: Callable[[], Iterable[str]],
        cwd: str,
        status: StatusLine,
        streams: list[AboveThePrompt],
        interrupt: Callable[[], bool],
        hint: Callable[[str], None],
    ) -> None:
        self._lines = lines
        self._status = status
        self._streams = streams
        for stream in streams:
            stream.redraw = self._redraw
        self._interrupt = interrupt
        self._hint = hint
        self._message: str | None = None  # the prompt wanted (None: no read asked for)
        self._question = False  # the wanted prompt asks a question (Ctrl-C answers it)
        self._showing: str | None = None  # the prompt on screen
        self._asking = False  # the prompt on screen asks a question
        self._carry = ""  # text typed at a prompt that gave way to another
        self._eof_pending = False  # Ctrl-D reached a prompt that was already going
        self._line_pending: str | None = None  # so did Enter, with this text
        self._wanted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._session: PromptSession[Any] = PromptSession(
            history=_history(history_dir),
            completer=CommandCompleter(commands, cwd),
            complete_while_typing=False,
            multiline=True,  # Enter accepts (bound below); Alt-Enter adds a line
            prompt_continuation=lambda width, line, soft: " " * width,
            key_bindings=self._bindings(),
            enable_suspend=True,
        )

    # -- what the REPL calls ---------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    def request(self, prompt: str, *, question: bool = False) -> bool:
        """Show ``prompt`` and read the next line (the text of a prompt on screen goes on
        at this one)."""
        self._want(prompt, question)
        return True

    def collect(self) -> None:
        """While a run works: the status line and the ``steer>`` prompt."""
        self._want(STEER_PROMPT, False)

    def showing(self) -> str | None:
        return self._showing

    def close(self) -> None:
        self._message = None
        app = self._session.app
        if app.is_running:
            with contextlib.suppress(Exception):
                app.erase_when_done = True
                app.exit(result=_RESTART)
        if self._task is not None:
            self._task.cancel()

    async def aclose(self) -> None:
        self.close()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    # -- the prompt --------------------------------------------------------------

    def _want(self, prompt: str, question: bool) -> None:
        self._message, self._question = prompt, question
        self._wanted.set()
        app = self._session.app
        if self._showing is not None and self._showing != prompt and _accepts(app):
            app.erase_when_done = True  # the prompt that gives way leaves no line behind
            app.exit(result=_RESTART)

    async def _loop(self) -> None:
        while True:
            await self._wanted.wait()
            message = self._message
            if message is None:
                self._wanted.clear()
                continue
            carry = ""
            if not self._question:
                carry, self._carry = self._carry, ""
            busy = message == STEER_PROMPT
            self._showing, self._asking = message, self._question
            # The steer> prompt and its status line leave nothing in the scrollback (a
            # line entered there is noted as steering); a line entered elsewhere stays.
            self._session.app.erase_when_done = busy
            try:
                line = await self._session.prompt_async(
                    self._render(message, busy),
                    default=carry,
                    refresh_interval=0.1 if busy else 0,
                    handle_sigint=False,
                    set_exception_handler=False,
                )
            except EOFError:
                line = EOF
            except KeyboardInterrupt:
                line = INTERRUPT
            finally:
                self._showing = None
            if line is _RESTART:
                if not self._asking:  # an answer does not take the text typed for the agent
                    # (read now: keys typed until the prompt was gone are in it)
                    self._carry = self._session.default_buffer.text
                if self._line_pending is not None:
                    line, self._carry = self._line_pending, ""
                elif self._eof_pending:
                    line = EOF  # Ctrl-D pressed while the prompt was giving way
                else:
                    continue
            self._eof_pending, self._line_pending = False, None
            self._message = None
            self._wanted.clear()
            await self._lines.put(line)

    def _render(self, message: str, busy: bool) -> Callable[[], AnyFormattedText]:
        """Above the prompt: the line being written, and during a run the status line."""

        def text() -> AnyFormattedText:
            above = [s.unfinished() for s in self._streams]
            above = [text for text in above if _CONTROL.sub("", text).strip()]
            status = self._status.text() if busy else None
            if status is not None:
                above.append(status)
            shown = _fit(message, self._session.app.output.get_size().columns)
            if not above:
                return shown
            return ANSI("\n".join(above) + "\x1b[0m\n" + shown.replace("\x1b", "?"))

        return text

    def _redraw(self) -> None:
        app = self._session.app
        if app.is_running:
            app.invalidate()

    def _bindings(self) -> KeyBindings:
        keys = KeyBindings()

        @keys.add("enter", eager=True)
        def _enter(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if (
                buffer.document.text_before_cursor.endswith("\\")
                and buffer.document.is_cursor_at_the_end
            ):
                buffer.delete_before_cursor(1)
                buffer.insert_text("\n")  # a line ending in \ goes on at the next one
                return
            if _accepts(event.app):
                buffer.validate_and_handle()
            else:  # Enter reached a prompt that was already going: the next one takes it
                self._line_pending = buffer.text

        @keys.add("escape", "enter")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("c-d", eager=True)
        def _end(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.delete(1)
            elif _accepts(event.app):
                event.app.exit(exception=EOFError)
            else:
                self._eof_pending = True

        @keys.add("c-c")
        def _interrupt(event: KeyPressEvent) -> None:
            if self._interrupt():
                return  # the run is aborted; what was typed stays
            buffer = event.current_buffer
            if self._asking:
                if _accepts(event.app):
                    event.app.exit(result=INTERRUPT)
            elif buffer.text:
                buffer.reset()  # Ctrl-C at the prompt clears the line
            else:
                self._hint("(Ctrl-D or /quit to quit)")

        return keys


def _accepts(app: Any) -> bool:
    """The prompt is running and has no result yet (``exit`` may be called)."""
    return bool(app.is_running and not app.is_done)


def _history(directory: str | os.PathLike[str] | None) -> History:
    """The lines entered, kept in ``directory/.history`` (in memory without a directory)."""
    if directory is None:
        return InMemoryHistory()
    try:
        make_folder(directory)
    except OSError:
        return InMemoryHistory()
    return FileHistory(os.path.join(os.fspath(directory), ".history"))


def _fit(message: str, columns: int) -> str:
    """A prompt wider than the terminal, wrapped: prompt_toolkit draws nothing of a
    prompt line longer than the screen is wide (a long permission question)."""
    if len(message) < columns or columns < 20:
        return message
    import textwrap

    lines = textwrap.wrap(message, columns - 1, break_on_hyphens=False)
    trailing = message[len(message.rstrip()) :]  # the space the answer is typed after
    return "\n".join(lines) + trailing

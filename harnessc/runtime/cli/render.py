"""Replies rendered on a terminal: Markdown with highlighted code, dimmed tool lines and a
diff view for ``edit``. Uses rich (the ``render`` extra), chosen only when
``make_printer`` finds stdout is a terminal, ``NO_COLOR`` unset and ``TERM`` not
``dumb``: piped and ``--json`` runs never load it.

What a terminal run imports is what its replies need: rich's console when the first
line or reply is printed (not when the printer is made, before the first request), and
the Markdown stack (markdown-it-py, pygments through ``rich.syntax``) only once a reply
shows Markdown syntax. A reply of plain text is drawn as rich ``Text`` and never loads
it. Each reply is drawn at most every ``_REFRESH_S`` while it streams, and once at its
end.
"""

from __future__ import annotations

import re
import time
from typing import Any, TextIO

from harnessc.runtime.cli.output import TextPrinter
from harnessc.runtime.core.messages import AssistantMessage, ToolResultMessage

__all__ = ["RichPrinter", "looks_like_markdown", "make_printer"]

_REFRESH_S = 0.08  # redraw the streaming reply at most this often

# Anything Markdown could render differently from the text as written: emphasis, code,
# links, HTML, escapes, tables, headings, entities, and lines starting a list, a quote,
# a rule, a setext heading or an indented code block. Cautious: a false alarm only
# costs the Markdown import, a miss would show markup.
_MARKDOWN = re.compile(
    r"[`*_\[\]<>\\|~#]|&#?\w+;"
    r"|^ {0,3}(?:[-+](?:\s|$)|\d{1,9}[.)](?:\s|$)|[-=]{2,}[ \t]*$)"
    r"|^(?: {4}|\t)",
    re.MULTILINE,
)


_CODE_THEME = "monokai"


def looks_like_markdown(text: str) -> bool:
    """Whether ``text`` has Markdown syntax (rendering it as Markdown could differ)."""
    return _MARKDOWN.search(text) is not None


class RichPrinter(TextPrinter):
    """A TextPrinter whose reply text is shown as Markdown while it streams."""

    def __init__(self, out: TextIO, err: TextIO, *, show_thinking: bool = False) -> None:
        super().__init__(out, err, show_thinking=show_thinking)
        self._consoles: tuple[Any, Any] | None = None  # stdout's and stderr's, made on use
        self._live: Any = None
        self._text = ""
        self._is_markdown = False  # the reply streaming now has Markdown syntax
        self._drawn_at = 0.0

    # -- rich, loaded when needed ------------------------------------------------------

    def _console_pair(self) -> tuple[Any, Any]:
        if self._consoles is None:
            from rich.console import Console

            self._consoles = (
                Console(file=self.out, soft_wrap=False),
                Console(file=self.err, soft_wrap=True, highlight=False),
            )
        return self._consoles

    @property
    def _console(self) -> Any:
        return self._console_pair()[0]

    @property
    def _err_console(self) -> Any:
        return self._console_pair()[1]

    # -- the streaming reply -----------------------------------------------------

    def _renderable(self) -> Any:
        """The reply so far: Markdown when it has Markdown syntax, plain text otherwise."""
        if self._is_markdown:
            try:
                from rich.markdown import Markdown
            except ImportError:  # a broken install (markdown-it-py missing): plain text
                self._is_markdown = False
            else:
                return Markdown(self._text, code_theme=_CODE_THEME)
        from rich.text import Text

        return Text(self._text.rstrip("\n"))

    def write_reply_text(self, delta: str) -> None:
        line_start = self._text.rfind("\n") + 1  # the delta may finish this line's syntax
        self._text += delta
        if not self._is_markdown and looks_like_markdown(self._text[line_start:]):
            self._is_markdown = True
        now = time.monotonic()
        if self._live is None:
            self._start_live(self._renderable()).refresh()
            self._drawn_at = now
        elif now - self._drawn_at >= _REFRESH_S:
            self._live.update(self._renderable(), refresh=True)
            self._drawn_at = now

    def _start_live(self, renderable: Any) -> Any:
        console = self._console
        from rich.live import Live

        live = Live(renderable, console=console, auto_refresh=False, vertical_overflow="visible")
        live.start()
        self._live = live
        return live

    def _end_reply_line(self) -> None:
        live = self._live
        if live is not None:
            live.update(self._renderable())
            live.stop()  # draws it one last time
            self._live = None
            self._text = ""
            self._is_markdown = False
            self.out.flush()
        super()._end_reply_line()

    def reply(self, text: str) -> None:
        self._end_reply_line()
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()

    # -- lines on stderr --------------------------------------------------------------

    def line(self, text: str) -> None:
        if self.spinner is not None:
            self.spinner.clear()
        self._end_reply_line()
        style = "red" if text.startswith("error:") else "dim"
        self._err_console.print(text, style=style, markup=False, highlight=False)
        self.err.flush()

    def thinking_text(self, text: str) -> None:
        self._err_console.print(text, style="dim italic", markup=False, highlight=False, end="")

    def _on_tool_execution_end(self, event: Any) -> None:
        super()._on_tool_execution_end(event)
        result = event.result
        if event.is_error or not isinstance(result, ToolResultMessage):
            return
        details = result.details if isinstance(result.details, dict) else {}
        diff = details.get("diff")
        if isinstance(diff, str) and diff.strip():
            self.diff(diff)

    def diff(self, text: str) -> None:
        from rich.syntax import Syntax  # pygments: its diff lexer, by name

        if self.spinner is not None:
            self.spinner.clear()
        self._err_console.print(Syntax(text.rstrip("\n"), "diff", theme="ansi_dark"))

    def _on_message_end(self, event: Any) -> None:
        message = event.message
        if isinstance(message, AssistantMessage) and not self._streamed and message.text:
            self._streamed = True
            self.write_reply_text(message.text)
        super()._on_message_end(event)


def make_printer(out: TextIO, err: TextIO, *, show_thinking: bool = False) -> TextPrinter:
    """The printer of a text run: rendered Markdown on a terminal (when rich is installed,
    ``NO_COLOR`` is unset and ``TERM`` is not ``dumb``), plain text otherwise."""
    import os

    if _renders(out) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb":
        try:
            import rich  # noqa: F401 - the package only (0.5 ms): is it there?
        except ImportError:  # rich is not installed: the plain printer
            pass
        else:
            return RichPrinter(out, err, show_thinking=show_thinking)
    return TextPrinter(out, err, show_thinking=show_thinking)


def _renders(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, OSError):
        return False

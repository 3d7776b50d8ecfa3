"""Replies rendered on a terminal: Markdown with highlighted code, dimmed tool lines and a
diff view for ``edit``. Uses rich (the ``render`` extra), imported only when
``make_printer`` finds stdout is a terminal, ``NO_COLOR`` unset and ``TERM`` not
``dumb``: piped and ``--json`` runs never load it.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

from harnessc.runtime.cli.output import TextPrinter, typed_so_far
from harnessc.runtime.messages import AssistantMessage, ToolResultMessage

__all__ = ["RichPrinter", "make_printer"]

_REFRESH_S = 0.08  # redraw the streaming reply at most this often


class RichPrinter(TextPrinter):
    """A TextPrinter whose reply text is shown as Markdown while it streams."""

    def __init__(self, out: TextIO, err: TextIO, *, show_thinking: bool = False) -> None:
        super().__init__(out, err, show_thinking=show_thinking)
        from rich.console import Console

        self._console = Console(file=out, soft_wrap=False)
        self._err_console = Console(file=err, soft_wrap=True, highlight=False)
        self._live: Any = None
        self._text = ""
        self._drawn_at = 0.0

    # -- the streaming reply -----------------------------------------------------

    def _markdown(self) -> Any:
        from rich.markdown import Markdown

        return Markdown(self._text, code_theme="monokai")

    def write_reply_text(self, delta: str) -> None:
        from rich.live import Live

        self._text += delta
        if self._live is None:
            self._live = Live(
                self._markdown(),
                console=self._console,
                auto_refresh=False,
                vertical_overflow="visible",
            )
            self._live.start()
            self._drawn_at = time.monotonic()
            self._live.refresh()
            return
        now = time.monotonic()
        if now - self._drawn_at >= _REFRESH_S:
            self._live.update(self._markdown(), refresh=True)
            self._drawn_at = now

    def _end_reply_line(self) -> None:
        if self._live is not None:
            self._live.update(self._markdown(), refresh=True)
            self._live.stop()
            self._live = None
            self._text = ""
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
        prompt = self.prompt_on_screen() if self.prompt_on_screen is not None else None
        if prompt is not None:
            self.err.write("\r\033[K")
        style = "red" if text.startswith("error:") else "dim"
        self._err_console.print(text, style=style, markup=False, highlight=False)
        self.err.flush()
        if prompt is not None:
            self.out.write(prompt + typed_so_far())
            self.out.flush()

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
            from rich.syntax import Syntax

            if self.spinner is not None:
                self.spinner.clear()
            self._err_console.print(Syntax(diff.rstrip("\n"), "diff", theme="ansi_dark"))

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
            return RichPrinter(out, err, show_thinking=show_thinking)
        except ImportError:  # rich is not installed: the plain printer
            pass
    return TextPrinter(out, err, show_thinking=show_thinking)


def _renders(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, OSError):
        return False

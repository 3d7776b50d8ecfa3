"""What a run shows: reply text on stdout, short activity lines on stderr, or JSON events.

``TextPrinter`` and ``JsonPrinter`` are harness subscribers. The spinner only runs
when stderr is a terminal; it is hidden while reply text streams.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, TextIO

from harnessc.runtime.core.events import Event
from harnessc.runtime.core.handovers import HandoverTracker
from harnessc.runtime.core.messages import AssistantMessage, ToolResultMessage

__all__ = [
    "JsonPrinter",
    "Spinner",
    "TextPrinter",
    "format_duration",
    "format_number",
    "key_argument",
    "one_line",
]

# Tool arguments worth showing, most telling first.
_KEY_ARGS = ("command", "path", "file_path", "pattern", "query", "url", "name", "op", "status")


def format_number(value: float) -> str:
    """An integer as such, a fraction with the digits that matter (0.0002, not 0.00)."""
    if float(value).is_integer():
        return str(int(value))
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.2g}"


def one_line(text: str, limit: int = 80) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def key_argument(args: Any, limit: int = 60) -> str:
    """The one argument of a tool call that says what it does (the command, the path...)."""
    if not isinstance(args, dict) or not args:
        return ""
    for key in _KEY_ARGS:
        value = args.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return one_line(str(value), limit)
    for value in args.values():
        if isinstance(value, str):
            return one_line(value, limit)
    for key, value in args.items():
        if isinstance(value, int | float | bool):
            return one_line(f"{key}={json.dumps(value)}", limit)
    return one_line(json.dumps(args, ensure_ascii=False, default=str), limit)


def format_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def _wants_unicode(stream: TextIO) -> bool:
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
    return encoding in ("utf8", "utf8sig")


class Spinner:
    """A one-line progress indicator on a terminal: frame, label, elapsed seconds."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏" if _wants_unicode(stream) else "|/-\\"
        self._label: str | None = None
        self._since = 0.0
        self._task: asyncio.Task[None] | None = None
        self._shown = False
        self._tick = 0
        self.suffix: Callable[[], str] | None = None  # live figures after the label

    def set(self, label: str) -> None:
        """Show ``label`` (the elapsed time restarts when the label changes)."""
        if self._task is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._task = loop.create_task(self._spin())
        if label != self._label or not self._shown:
            if label != self._label:
                self._since = time.monotonic()
            self._label = label
            self._draw()

    def hide(self) -> None:
        self._label = None
        self.clear()

    def clear(self) -> None:
        """Erase the spinner line (before other output); it comes back at the next tick."""
        if self._shown:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._shown = False

    def close(self) -> None:
        self.hide()
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def _draw(self) -> None:
        if self._label is None:
            return
        frame = self._frames[self._tick % len(self._frames)]
        elapsed = time.monotonic() - self._since
        extra = self.suffix() if self.suffix is not None else ""
        line = f"{frame} {self._label} {format_duration(elapsed)}{extra}"
        self._stream.write(f"\r\033[K{line}")
        self._stream.flush()
        self._shown = True

    async def _spin(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            self._tick += 1
            self._draw()


class TextPrinter:
    """Streams reply text to ``out``; tool activity, retries, warnings to ``err``."""

    def __init__(
        self,
        out: TextIO,
        err: TextIO,
        *,
        spinner: bool | None = None,
        show_thinking: bool = False,
    ) -> None:
        self.out = out
        self.err = err
        self.show_thinking = show_thinking
        self._thinking_open = False
        use_spinner = err.isatty() if spinner is None else spinner
        self.spinner: Spinner | None = Spinner(err) if use_spinner else None
        self._line_open = False  # reply text written without its final newline
        self._streamed = False  # this message's text came as deltas
        self._running: dict[str, tuple[str, str, float]] = {}  # call id -> name, arg, start
        self._calls: dict[str, str] = {}  # call id -> key argument, from the model's reply
        self._handovers = HandoverTracker()  # the hand-overs working now
        self._errors: set[str] = set()
        self.muted: set[str] = set()  # event types not shown for now

    # -- output helpers -------------------------------------------------------

    def line(self, text: str) -> None:
        """One line on stderr (the spinner is redrawn after it)."""
        if self.spinner is not None:
            self.spinner.clear()
        self._end_reply_line()
        self.err.write(text + "\n")
        self.err.flush()

    def error(self, text: str) -> None:
        """An error line, printed once even when several events carry the same text."""
        if text in self._errors:
            return
        self._errors.add(text)
        self.line(f"error: {text}")

    def diff(self, text: str) -> None:
        """A unified diff on stderr (coloured by the rich printer)."""
        self._end_reply_line()
        self.err.write(text if text.endswith("\n") else text + "\n")
        self.err.flush()

    def reply(self, text: str) -> None:
        """Text for stdout outside the stream (a /command's answer)."""
        self._end_reply_line()
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()

    def know_calls(self, calls: list[Any]) -> None:
        """Tool calls made before this process started (a resumed pull point)."""
        for call in calls:
            self._calls[call.id] = key_argument(call.arguments)

    def _end_reply_line(self) -> None:
        if self._line_open:
            self.out.write("\n")
            self.out.flush()
            self._line_open = False

    def _status(self, label: str) -> None:
        if self.spinner is not None:
            self.spinner.set(label)

    def _idle(self) -> None:
        if self.spinner is not None:
            self.spinner.hide()

    def close(self) -> None:
        if self.spinner is not None:
            self.spinner.close()
        self._end_reply_line()

    # -- events ---------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        if event.type in self.muted:
            return
        handler = getattr(self, "_on_" + event.type, None)
        if handler is not None:
            handler(event)

    def _on_turn_start(self, event: Any) -> None:
        self._status("waiting for the model")

    def _on_message_start(self, event: Any) -> None:
        if isinstance(event.message, AssistantMessage):
            self._streamed = False
            self._status("waiting for the model")

    def _on_message_update(self, event: Any) -> None:
        kind = event.delta_type
        if kind == "text_delta" and event.delta:
            if self.spinner is not None:
                self.spinner.hide()
            self._end_thinking()
            self.write_reply_text(event.delta)
            self._streamed = True
        elif kind == "thinking_delta" and self.show_thinking and event.delta:
            if self.spinner is not None:
                self.spinner.hide()
            self.thinking_text(event.delta)
            self._thinking_open = not event.delta.endswith("\n")
        elif kind.startswith("thinking"):
            self._status("thinking")
        elif kind.startswith("toolcall"):
            self._status("preparing a tool call")

    def write_reply_text(self, delta: str) -> None:
        """A piece of the streaming reply, on stdout."""
        self.out.write(delta)
        self.out.flush()
        self._line_open = not delta.endswith("\n")

    def thinking_text(self, text: str) -> None:
        """A piece of the model's thinking (--show-thinking), on stderr."""
        self.err.write(text)
        self.err.flush()

    def _end_thinking(self) -> None:
        if self._thinking_open:
            self.thinking_text("\n")
            self._thinking_open = False

    def _on_message_end(self, event: Any) -> None:
        message = event.message
        if not isinstance(message, AssistantMessage):
            return
        self._end_thinking()
        if not self._streamed and message.text:
            # A provider that sent no deltas: print the whole reply now.
            if self.spinner is not None:
                self.spinner.hide()
            self.out.write(message.text)
            self._line_open = not message.text.endswith("\n")
        self._end_reply_line()
        self.out.flush()
        if message.stop_reason == "error" and message.error_message:
            self.error(message.error_message)
        for call in message.tool_calls:
            self._calls[call.id] = key_argument(call.arguments)
        if message.tool_calls:
            self._status("running tools")
        else:
            self._idle()

    def _on_tool_execution_start(self, event: Any) -> None:
        arg = key_argument(event.args)
        self._running[event.tool_call_id] = (event.tool_name, arg, time.monotonic())
        self._show_running()

    def _show_running(self) -> None:
        if self._handovers.working:  # sub-agents at work: each one's path, turn and tokens
            self._status(self.handovers_label())
            return
        if not self._running:
            self._status("waiting for the model")
            return
        if len(self._running) == 1:
            name, arg, _ = next(iter(self._running.values()))
            self._status(f"{name} {arg}".strip())
        else:
            self._status(f"{len(self._running)} tools running")

    def _on_tool_execution_end(self, event: Any) -> None:
        running = self._running.pop(event.tool_call_id, None)
        if running is None:  # started before a pause: an approved call ran, or a result given
            arg = self._calls.get(event.tool_call_id, "")
            ran = f"  {format_duration(event.duration_ms / 1000)}" if event.duration_ms else ""
            text = f"[{event.tool_name}] {arg}".rstrip() + (ran or "  (result given)")
        else:
            name, arg, started = running
            seconds = event.duration_ms / 1000 if event.duration_ms else time.monotonic() - started
            text = f"[{name}] {arg}".rstrip() + f"  {format_duration(seconds)}"
        if event.is_error:
            result = event.result
            detail = result.text if isinstance(result, ToolResultMessage) else ""
            text += f"  error: {one_line(detail, 120) or 'failed'}"
        self.line(text)
        self._show_running()

    def handovers_label(self) -> str:
        """The status line while hand-overs work: ``lead > worker: turn 2, 1,200 tokens``
        for each (the deepest last)."""
        return "; ".join(
            f"{' > '.join(p.agent_path)}: turn {p.turn}, {format_number(p.tokens)} tokens"
            for p in self._handovers.working.values()
        )

    def _track_handover(self, event: Any) -> None:
        """Follow a working sub-agent's turn and tokens (its own events, any depth), as
        its parent counts them for the ``handover_progress`` events."""
        if self._handovers.see(event) is not None:
            self._show_running()

    def _on_subagent(self, event: Any) -> None:
        """A sub-agent's start and tool calls, indented under the hand-over by depth;
        the status line names the hand-overs working, with their turn and tokens."""
        inner = event.event
        path = list(event.agent_path)
        depth = max(1, len(path) - 1)
        key = f"{' > '.join(path)}/{getattr(inner, 'tool_call_id', '')}"
        if inner is None:
            return
        self._track_handover(event)
        if inner.type == "agent_start":
            self.line("  " * (depth - 1) + f"> {' > '.join(path)}: {one_line(inner.prompt, 70)}")
        elif inner.type == "tool_execution_start":
            self._calls[key] = key_argument(inner.args)
        elif inner.type == "tool_execution_end":
            arg = self._calls.pop(key, "")
            ran = f"  {format_duration(inner.duration_ms / 1000)}" if inner.duration_ms else ""
            text = "  " * depth + f"[{inner.tool_name}] {arg}".rstrip() + ran
            if inner.is_error:
                detail = inner.result.text if isinstance(inner.result, ToolResultMessage) else ""
                text += f"  error: {one_line(detail, 120) or 'failed'}"
            self.line(text)

    def _on_retry(self, event: Any) -> None:
        status = f"HTTP {event.status}: " if event.status else ""
        self.line(
            f"[retry] attempt {event.attempt}/{event.max_retries} in "
            f"{event.delay_ms / 1000:.1f}s: {status}{one_line(event.error, 120)}"
        )

    def _on_model_fallback(self, event: Any) -> None:
        self.line(
            f"[fallback] {event.from_model} failed ({event.reason}): "
            f"{one_line(event.error, 120)}; trying {event.to_model}"
        )

    def _on_budget_warn(self, event: Any) -> None:
        used = format_number(event.used)
        maximum = format_number(event.maximum)
        if event.level == "hard":
            self.line(f"[budget] limit hit: {event.limit} {used} of {maximum}")
        elif event.limit in ("turns", "tool_calls") and event.used >= event.maximum:
            self.line(f"[budget] {event.limit}: {used} of {maximum} used, the last one allowed")
        else:
            self.line(f"[budget] {event.limit}: {used} of {maximum} used, nearing the limit")

    def _on_notice(self, event: Any) -> None:
        if event.level == "progress":  # what the agent is waiting for: the status line
            self._status(event.message)
            return
        prefix = "warning" if event.level == "warning" else "notice"
        self.line(f"[{prefix}] {event.message}")

    def _on_error(self, event: Any) -> None:
        self.error(event.message)

    def _on_session_compact(self, event: Any) -> None:
        tokens = event.compaction_entry.get("tokensBefore")
        self.line(f"[compact] context compacted ({tokens} tokens before)")

    def _on_resources_update(self, event: Any) -> None:
        self.line(
            f"[resources] {len(event.skills)} skills, {len(event.prompt_templates)} prompt "
            f"templates, {len(event.context_files)} context files"
        )
        for problem in event.diagnostics:
            self.line(f"[resources] {problem}")

    def _on_agent_pause(self, event: Any) -> None:
        self._idle()

    def _on_agent_end(self, event: Any) -> None:
        self._idle()
        self._running.clear()


class JsonPrinter:
    """Every event as one JSON object per line (flushed, so a reader sees it at once)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: Event) -> None:
        self.write(event.to_dict())

    def write(self, obj: dict[str, Any]) -> None:
        self.out.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

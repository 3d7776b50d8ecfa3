"""Builds the streamed AssistantMessage block by block and records its events.

Every wire protocol decodes its own frames and calls these few methods; the builder
keeps the event order of ``providers/base.py`` (a block's start, deltas, end; one
block open at a time) and appends the events to ``out`` for the driver to yield.
End events carry the block's whole text (or the raw argument JSON) as ``delta``.

A frame's fields are read through ``object_or_skip``, ``text_field`` and
``token_count``: a piece of the wrong type is skipped with a warning, and the reply goes
on. The reply ends with ``done``, ``failed`` or ``aborted``: the final event, the
message settled, its usage totalled and priced.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from harnessc.runtime.core.messages import (
    NO_COST,
    AssistantMessage,
    Cost,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from harnessc.runtime.core.options import Model
from harnessc.runtime.providers.base import AssistantMessageEvent
from harnessc.runtime.providers.errors import MAX_ERROR_CHARS, ProviderError, cut_text, redact
from harnessc.runtime.providers.text import SurrogateJoiner

__all__ = ["MAX_NAME_CHARS", "MessageBuilder", "compute_cost", "cut_name", "finalize_usage"]

# Tool names and call ids longer than this are cut (a 1 MB name is a broken server).
MAX_NAME_CHARS = 256


def cut_name(name: str) -> str:
    """A tool name or call id as kept, printed and stored: at most MAX_NAME_CHARS."""
    if len(name) <= MAX_NAME_CHARS:
        return name
    return f"{name[:MAX_NAME_CHARS]}...({len(name):,} characters)"


_END = {"text": "text_end", "thinking": "thinking_end", "toolcall": "toolcall_end"}


class MessageBuilder:
    """Mutates ``partial`` in place and queues AssistantMessageEvents in ``out``."""

    __slots__ = (
        "partial",
        "out",
        "stop_reason",
        "_index",
        "_kind",
        "_block",
        "_args",
        "_late",
        "_join",
        "warnings",
    )

    def __init__(self, partial: AssistantMessage) -> None:
        self.partial = partial
        self.out: list[AssistantMessageEvent] = []
        self.stop_reason: StopReason | None = None
        self._index = -1
        self._kind = ""
        self._block: Any = None
        self._args: dict[int, list[str]] = {}
        self._late: dict[int, None] = {}  # tool calls to parse again at finish
        # A surrogate pair split over two deltas: made by the first delta outside ASCII.
        self._join: SurrogateJoiner | None = None
        # What the reply's stream got wrong without spoiling it (a malformed chunk
        # skipped, a usage count that is not a number): told to the harness at the end.
        self.warnings: list[str] | None = None

    def warn(self, text: str) -> None:
        """Record ``text`` once (the same fault in every chunk is one warning)."""
        if self.warnings is None:
            self.warnings = []
        if text not in self.warnings and len(self.warnings) < 10:
            self.warnings.append(text)

    @property
    def has_content(self) -> bool:
        return bool(self.partial.content)

    def reset(self) -> None:
        """Forget everything built (before a retry, when nothing was yielded yet)."""
        self.partial.content.clear()
        self.partial.usage = Usage()
        self.out.clear()
        self.stop_reason = None
        self._index = -1
        self._kind = ""
        self._block = None
        self._args.clear()
        self._late.clear()
        self._join = None
        self.warnings = None

    def _joined(self, delta: str) -> str:
        """``delta`` with surrogate pairs joined (a high half is held for the next)."""
        if self._join is None:
            self._join = SurrogateJoiner()
        return self._join.feed(delta)

    def _open(self, kind: str, block: Any) -> None:
        if self._kind:
            self.end_block()
        content = self.partial.content
        content.append(block)
        self._index = len(content) - 1
        self._kind = kind
        self._block = block
        self.out.append(AssistantMessageEvent(kind + "_start", self.partial, self._index))  # type: ignore[arg-type]

    def start_text(self) -> None:
        """Open a new text block even if one is open (explicit block boundaries)."""
        self._open("text", TextContent(""))

    def text(self, delta: str) -> None:
        if self._kind != "text":
            self._open("text", TextContent(""))
        if not delta.isascii() or (self._join is not None and self._join.held):
            delta = self._joined(delta)
            if not delta:
                return
        self._block.text += delta
        self.out.append(AssistantMessageEvent("text_delta", self.partial, self._index, delta))

    def thinking(self, delta: str) -> None:
        if self._kind != "thinking":
            self._open("thinking", ThinkingContent(""))
        if not delta.isascii() or (self._join is not None and self._join.held):
            delta = self._joined(delta)
            if not delta:
                return
        self._block.thinking += delta
        self.out.append(AssistantMessageEvent("thinking_delta", self.partial, self._index, delta))

    def start_thinking(self, redacted: bool = False, signature: str | None = None) -> None:
        """Open a thinking block explicitly (a redacted one carries only a signature)."""
        self._open("thinking", ThinkingContent("", thinking_signature=signature, redacted=redacted))

    def thinking_signature(self, signature: str, replace: bool = False) -> None:
        """Add to (or replace) the signature of the open thinking block."""
        if self._kind != "thinking":
            self._open("thinking", ThinkingContent(""))
        block: ThinkingContent = self._block
        if replace or block.thinking_signature is None:
            block.thinking_signature = signature
        else:
            block.thinking_signature += signature

    def text_signature(self, signature: str) -> None:
        if self._kind == "text":
            self._block.text_signature = signature

    def start_tool(self, call_id: str, name: str) -> int:
        """Open a tool-call block; returns its content index.

        Ids are kept as the model sent them; the harness makes empty or repeated ones
        unique (for every provider) before the reply is recorded.
        """
        # A tool's name is one string however many calls name it (a process running a
        # thousand sessions keeps one "read", not one per call).
        tool = sys.intern(cut_name(name))
        self._open("toolcall", ToolCall(id=cut_name(call_id), name=tool, arguments={}))
        self._args[self._index] = []
        return self._index

    def tool_delta(self, index: int, fragment: str) -> None:
        """Append argument JSON to the tool call at content ``index``."""
        if not fragment:
            return
        parts = self._args.get(index)
        if parts is None:
            return
        parts.append(fragment)
        if index != self._index:
            self._late[index] = None  # its block already ended: parse again at finish
        self.out.append(AssistantMessageEvent("toolcall_delta", self.partial, index, fragment))

    def end_block(self) -> None:
        kind = self._kind
        if not kind:
            return
        block = self._block
        if self._join is not None and self._join.held:  # the stream ended inside a pair
            rest = self._join.flush()
            if kind == "text":
                block.text += rest
            elif kind == "thinking":
                block.thinking += rest
            self.out.append(AssistantMessageEvent(kind + "_delta", self.partial, self._index, rest))  # type: ignore[arg-type]
        delta = ""
        if kind == "text":
            delta = block.text
        elif kind == "thinking":
            delta = block.thinking
        else:
            delta = self._parse_tool(self._index)
        self.out.append(AssistantMessageEvent(_END[kind], self.partial, self._index, delta))  # type: ignore[arg-type]
        self._kind = ""
        self._block = None

    def _parse_tool(self, index: int) -> str:
        call = self.partial.content[index]
        raw = "".join(self._args.get(index, ()))
        if isinstance(call, ToolCall):
            from harnessc.runtime.providers.tool_args import parse_tool_arguments

            call.arguments, call.parse_error = parse_tool_arguments(raw, call.name)
        return raw

    def finish(self) -> None:
        """Close the open block, settle late tool fragments and the stop reason."""
        self.end_block()
        for index in sorted(self._late):
            self._parse_tool(index)
        self._late.clear()
        reason = self.stop_reason or "stop"
        if reason == "stop" and any(isinstance(c, ToolCall) for c in self.partial.content):
            reason = "toolUse"
        self.partial.stop_reason = reason

    # -- the reply's end ----------------------------------------------------------

    def done(self, model: Model) -> AssistantMessageEvent:
        """The ``done`` event: the message settled, its usage totalled and priced, and
        marked as a context overflow when its prompt did not fit ``model``'s window."""
        partial = self.partial
        usage = partial.usage
        finalize_usage(usage, model)
        self.finish()
        prompt = usage.input + usage.cache_read + usage.cache_write
        if model.context_window and prompt > model.context_window:
            partial.context_overflow = True
        return AssistantMessageEvent("done", partial)

    def failed(
        self, model: Model, error: ProviderError, secrets: list[str | None]
    ) -> AssistantMessageEvent:
        """The ``error`` event of a failed request: its message redacted of ``secrets``."""
        self._settle(model)
        partial = self.partial
        partial.stop_reason = "error"
        partial.error_message = cut_text(redact(error.message, secrets), 2 * MAX_ERROR_CHARS)
        partial.context_overflow = error.context_overflow
        return AssistantMessageEvent("error", partial, error_kind=error.kind)

    def aborted(self, model: Model, reason: str) -> AssistantMessageEvent:
        """The ``error`` event of an aborted request (stop reason ``aborted``)."""
        self._settle(model)
        partial = self.partial
        partial.stop_reason = "aborted"
        partial.error_message = reason or "aborted"
        return AssistantMessageEvent("error", partial)

    def _settle(self, model: Model) -> None:
        self.finish()
        self.out.clear()
        finalize_usage(self.partial.usage, model)

    # -- reading a frame's fields -------------------------------------------------

    def object_or_skip(self, value: Any, what: str, item: bool = False) -> dict[str, Any] | None:
        """``value`` when it is a JSON object; None when absent (null, unless it is an
        ``item`` of a list); for anything else a warning (the piece is skipped, the
        reply goes on) and None."""
        if type(value) is dict:
            return value
        if value is not None or item:
            self.warn(f"the provider sent {what} that is not an object ({_shown(value)}); skipped")
        return None

    def text_field(self, raw: Mapping[str, Any], name: str) -> str:
        """``raw[name]`` when it is a string, else "" (with a warning when it is something
        else: the piece is skipped, the reply goes on)."""
        value = raw.get(name)
        if type(value) is str:
            return value
        if value is not None:
            self.warn(f"the provider sent a {name} that is not a string ({_shown(value)}); skipped")
        return ""

    def token_count(self, raw: Mapping[str, Any], name: str) -> int | None:
        """``raw[name]`` as a token count, None when absent. Usage is advisory: a value
        that is not a count is a warning (and None), never a failed reply."""
        value = raw.get(name)
        if value is None:
            return None
        if type(value) is int and value >= 0:
            return value
        if type(value) is float and value >= 0 and value.is_integer():
            return int(value)
        if type(value) is str and value.isdigit() and len(value) < 20:
            return int(value)
        self.warn(
            f"the provider's usage report gives {name} as {_shown(value)}, not a token count; "
            "the reply is kept, its token counts may be wrong"
        )
        return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def _dollars(tokens: int, price: float) -> float:
    # A zero stays the shared constant 0.0: a reply of a model without prices (or one
    # that used nothing) holds no float objects of its own.
    return tokens * price / 1_000_000 if tokens and price else 0.0


def compute_cost(usage: Usage, model: Model) -> None:
    """Set ``usage.cost`` from the model's dollars-per-million-token prices (the shared
    ``NO_COST`` when nothing was spent)."""
    price = model.cost
    spent = (
        _dollars(usage.input, price.input),
        _dollars(usage.output, price.output),
        _dollars(usage.cache_read, price.cache_read),
        _dollars(usage.cache_write, price.cache_write),
    )
    if not any(spent):
        usage.cost = NO_COST
        return
    usage.cost = Cost(*spent, total=sum(spent))


def finalize_usage(usage: Usage, model: Model) -> None:
    """Total tokens and cost from the four counts."""
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    compute_cost(usage, model)

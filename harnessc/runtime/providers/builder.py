"""Builds the streamed AssistantMessage block by block and records its events.

Every wire protocol decodes its own frames and calls these few methods; the builder
keeps the event order of ``providers/base.py`` (a block's start, deltas, end; one
block open at a time) and appends the events to ``out`` for the driver to yield.
End events carry the block's whole text (or the raw argument JSON) as ``delta``.
"""

from __future__ import annotations

import sys
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
from harnessc.runtime.providers.text import SurrogateJoiner
from harnessc.runtime.providers.tool_args import parse_tool_arguments

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
        self._join = SurrogateJoiner()  # a surrogate pair split over two deltas
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
        self._join = SurrogateJoiner()
        self.warnings = None

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
        if self._join.held or not delta.isascii():
            delta = self._join.feed(delta)
            if not delta:
                return
        self._block.text += delta
        self.out.append(AssistantMessageEvent("text_delta", self.partial, self._index, delta))

    def thinking(self, delta: str) -> None:
        if self._kind != "thinking":
            self._open("thinking", ThinkingContent(""))
        if self._join.held or not delta.isascii():
            delta = self._join.feed(delta)
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
        if self._join.held:  # the stream ended half way through a surrogate pair
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

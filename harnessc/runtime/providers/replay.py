"""ReplayProvider: serves recorded assistant replies so a run re-executes offline.

The replies come from a pi v3 session file (every ``message`` entry whose message is
an assistant one, in file order) or from a list. Each request gets the next reply,
streamed as deltas. When the run leaves the recording (it answers a tool call the
recording did not make, or asks for more replies than were recorded) the stream ends
with an error naming the position.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    message_from_dict,
)
from harnessc.runtime.providers.base import AssistantMessageEvent, ProviderRequest

__all__ = ["ReplayProvider", "load_recorded_replies"]

_PIECE = re.compile(r"\s*\S+\s*|\s+")


def load_recorded_replies(path: str | Path) -> list[AssistantMessage]:
    """The assistant messages of a pi v3 session file, in file order.

    Unreadable lines (a torn last line) are skipped; a missing file raises OSError.
    """
    replies: list[AssistantMessage] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("type") != "message":
                continue
            raw = entry.get("message")
            if not isinstance(raw, dict) or raw.get("role") != "assistant":
                continue
            try:
                message = message_from_dict(raw)
            except ValueError:
                continue
            if isinstance(message, AssistantMessage):
                replies.append(message)
    return replies


def _copy(message: AssistantMessage) -> AssistantMessage:
    copy = message_from_dict(message.to_dict())
    assert isinstance(copy, AssistantMessage)
    return copy


def _pieces(text: str, size: int) -> list[str]:
    """``text`` cut into word-aligned deltas of about ``size`` characters."""
    if len(text) <= size:
        return [text] if text else []
    out: list[str] = []
    current = ""
    for piece in _PIECE.findall(text):
        if current and len(current) + len(piece) > size:
            out.append(current)
            current = ""
        current += piece
    if current:
        out.append(current)
    return out


class ReplayProvider:
    """Serves recorded replies, one per request, in order."""

    def __init__(
        self,
        replies: Iterable[AssistantMessage],
        *,
        source: str = "the recording",
        chunk_chars: int = 24,
    ) -> None:
        self._replies = [_copy(m) for m in replies]
        self._position = 0
        self._source = source
        self._chunk_chars = max(1, chunk_chars)

    @classmethod
    def from_session_file(cls, path: str | Path, *, chunk_chars: int = 24) -> ReplayProvider:
        """A provider for the assistant replies recorded in a pi v3 session file."""
        return cls(load_recorded_replies(path), source=str(path), chunk_chars=chunk_chars)

    @property
    def position(self) -> int:
        """How many replies were served so far."""
        return self._position

    @property
    def remaining(self) -> int:
        return len(self._replies) - self._position

    def reset(self) -> None:
        self._position = 0

    def _divergence(self, request: ProviderRequest) -> str | None:
        total = len(self._replies)
        number = self._position + 1
        if self._position >= total:
            return (
                f"replay diverged at request #{number}: {self._source} has only "
                f"{total} recorded repl{'y' if total == 1 else 'ies'}, none is left"
            )
        answered: list[str] = []
        for message in reversed(request.context.messages):
            if not isinstance(message, ToolResultMessage):
                break
            answered.append(message.tool_call_id)
        if not answered:
            return None
        previous = self._replies[self._position - 1] if self._position else None
        made = [c.id for c in previous.tool_calls] if previous else []
        for call_id in reversed(answered):
            if call_id not in made:
                where = f"recorded reply #{self._position}" if previous else "no earlier reply"
                return (
                    f"replay diverged at reply #{number} of {total} ({self._source}): the "
                    f"request answers tool call {call_id!r}, but {where} made "
                    f"{made if made else 'no tool calls'}"
                )
        return None

    def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        return self._stream(request)

    async def _stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        problem = self._divergence(request)
        if problem is not None:
            failed = AssistantMessage(
                api="replay",
                provider="replay",
                model=request.model.id,
                stop_reason="error",
                error_message=problem,
            )
            yield AssistantMessageEvent("start", failed)
            yield AssistantMessageEvent("error", failed)
            return
        recorded = _copy(self._replies[self._position])
        self._position += 1
        blocks = recorded.content
        recorded.content = []
        partial = recorded
        signal = request.signal
        yield AssistantMessageEvent("start", partial)
        size = self._chunk_chars
        for block in blocks:
            if signal.aborted:
                partial.stop_reason = "aborted"
                partial.error_message = signal.reason or "aborted"
                yield AssistantMessageEvent("error", partial)
                return
            index = len(partial.content)
            if isinstance(block, TextContent):
                live = TextContent("", text_signature=block.text_signature)
                partial.content.append(live)
                yield AssistantMessageEvent("text_start", partial, index)
                for piece in _pieces(block.text, size):
                    live.text += piece
                    yield AssistantMessageEvent("text_delta", partial, index, piece)
                yield AssistantMessageEvent("text_end", partial, index, live.text)
            elif isinstance(block, ThinkingContent):
                thought = ThinkingContent(
                    "", thinking_signature=block.thinking_signature, redacted=block.redacted
                )
                partial.content.append(thought)
                yield AssistantMessageEvent("thinking_start", partial, index)
                for piece in _pieces(block.thinking, size):
                    thought.thinking += piece
                    yield AssistantMessageEvent("thinking_delta", partial, index, piece)
                yield AssistantMessageEvent("thinking_end", partial, index, thought.thinking)
            elif isinstance(block, ToolCall):
                call = ToolCall(id=block.id, name=block.name, arguments={})
                partial.content.append(call)
                yield AssistantMessageEvent("toolcall_start", partial, index)
                raw = json.dumps(block.arguments, ensure_ascii=False)
                yield AssistantMessageEvent("toolcall_delta", partial, index, raw)
                call.arguments = block.arguments
                call.parse_error = block.parse_error
                yield AssistantMessageEvent("toolcall_end", partial, index, raw)
        ended_badly = partial.stop_reason in ("error", "aborted")
        yield AssistantMessageEvent("error" if ended_badly else "done", partial)

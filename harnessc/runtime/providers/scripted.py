"""A scripted in-process provider (like pi's faux provider) for tests and examples.

Each reply is an AssistantMessage, a string (a text reply), or a callable taking the
request Context and returning either; replies are streamed as deltas so a harness
sees exactly the events a real provider would produce.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any, TypeAlias

from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from harnessc.runtime.providers.base import AssistantMessageEvent, Context, ProviderRequest

__all__ = ["ScriptedProvider", "ScriptedReply", "reply_text", "reply_tool_calls"]

ScriptedReply: TypeAlias = "AssistantMessage | str | Callable[[Context], AssistantMessage | str]"

_ids = itertools.count(1)


def reply_text(text: str, *, usage: Usage | None = None) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text)], stop_reason="stop", usage=usage or Usage())


def reply_tool_calls(
    calls: Iterable[tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]],
    *,
    text: str = "",
    usage: Usage | None = None,
) -> AssistantMessage:
    content: list[Any] = [TextContent(text)] if text else []
    for call in calls:
        name, args = call[0], call[1]
        call_id = call[2] if len(call) > 2 else f"call_{next(_ids)}"  # type: ignore[misc]
        content.append(ToolCall(id=call_id, name=name, arguments=args))
    return AssistantMessage(content=content, stop_reason="toolUse", usage=usage or Usage())


class ScriptedProvider:
    """Serves the given replies in order; ``requests`` records every Context it saw."""

    def __init__(
        self,
        replies: Sequence[ScriptedReply] | Callable[[Context], AssistantMessage | str] = (),
        *,
        chunk_size: int = 8,
        delay_s: float = 0.0,
    ) -> None:
        self._replies = list(replies) if not callable(replies) else []
        self._function = replies if callable(replies) else None
        self._index = 0
        self.chunk_size = chunk_size
        self.delay_s = delay_s
        self.requests: list[ProviderRequest] = []

    @property
    def remaining(self) -> int:
        return len(self._replies) - self._index

    def _next(self, context: Context) -> AssistantMessage:
        if self._function is not None:
            reply: Any = self._function(context)
        else:
            if self._index >= len(self._replies):
                return AssistantMessage(
                    stop_reason="error",
                    error_message=f"scripted provider has no reply left (request {self._index + 1})",
                )
            reply = self._replies[self._index]
            self._index += 1
            if callable(reply):
                reply = reply(context)
        if isinstance(reply, str):
            return reply_text(reply)
        return _clone(reply)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        self.requests.append(request)
        if request.on_payload is not None:
            await request.on_payload(
                {"model": request.model.id, "messages": len(request.context.messages)}
            )
        final = self._next(request.context)
        final.api = final.api or request.model.api
        final.provider = final.provider or request.model.provider
        final.model = final.model or request.model.id
        partial = AssistantMessage(api=final.api, provider=final.provider, model=final.model)
        yield AssistantMessageEvent("start", partial)
        for index, block in enumerate(final.content):
            if request.signal.aborted:
                break
            async for event in self._stream_block(partial, index, block):
                yield event
        if request.signal.aborted:
            partial.stop_reason = "aborted"
            partial.error_message = "aborted"
            yield AssistantMessageEvent("error", partial)
            return
        final.timestamp = partial.timestamp
        yield AssistantMessageEvent(
            "error" if final.stop_reason in ("error", "aborted") else "done", final
        )

    async def _stream_block(
        self, partial: AssistantMessage, index: int, block: Any
    ) -> AsyncIterator[AssistantMessageEvent]:
        size = max(1, self.chunk_size)
        if isinstance(block, TextContent):
            current = TextContent("")
            partial.content.append(current)
            yield AssistantMessageEvent("text_start", partial, index)
            for i in range(0, len(block.text), size):
                piece = block.text[i : i + size]
                current.text += piece
                await self._pause()
                yield AssistantMessageEvent("text_delta", partial, index, piece)
            yield AssistantMessageEvent("text_end", partial, index)
        elif isinstance(block, ThinkingContent):
            thinking = ThinkingContent("")
            partial.content.append(thinking)
            yield AssistantMessageEvent("thinking_start", partial, index)
            for i in range(0, len(block.thinking), size):
                piece = block.thinking[i : i + size]
                thinking.thinking += piece
                await self._pause()
                yield AssistantMessageEvent("thinking_delta", partial, index, piece)
            yield AssistantMessageEvent("thinking_end", partial, index)
        elif isinstance(block, ToolCall):
            call = ToolCall(id=block.id, name=block.name, arguments={})
            partial.content.append(call)
            yield AssistantMessageEvent("toolcall_start", partial, index)
            args = json.dumps(block.arguments)
            for i in range(0, len(args), size * 4):
                await self._pause()
                yield AssistantMessageEvent(
                    "toolcall_delta", partial, index, args[i : i + size * 4]
                )
            call.arguments = block.arguments
            call.parse_error = block.parse_error
            yield AssistantMessageEvent("toolcall_end", partial, index)

    async def _pause(self) -> None:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)


def _clone(message: AssistantMessage) -> AssistantMessage:
    """A copy of a scripted reply, so serving it twice never shares state."""
    content: list[Any] = []
    for block in message.content:
        if isinstance(block, ToolCall):
            content.append(
                ToolCall(block.id, block.name, copy.deepcopy(block.arguments), block.parse_error)
            )
        else:
            content.append(copy.copy(block))
    clone = copy.copy(message)
    clone.content = content
    clone.usage = copy.deepcopy(message.usage)
    return clone

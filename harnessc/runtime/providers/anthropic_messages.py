"""The ``anthropic-messages`` wire API: POST {base_url}/v1/messages, streamed."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from harnessc.runtime.core.messages import (
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
)
from harnessc.runtime.core.options import THINKING_BUDGETS, Model, ThinkingLevel
from harnessc.runtime.providers.base import ProviderRequest
from harnessc.runtime.providers.builder import MessageBuilder
from harnessc.runtime.providers.convert import (
    EncodedTurns,
    WireMessage,
    image_placeholder,
    turn_list,
    turns_json,
    wire_sequence,
)
from harnessc.runtime.providers.errors import ProviderError
from harnessc.runtime.providers.http import HttpProvider
from harnessc.runtime.providers.sse import json_data
from harnessc.runtime.providers.text import payload_bytes
from harnessc.runtime.providers.wire import join_url

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicMessagesProvider",
    "AnthropicStreamState",
    "AnthropicWireCache",
    "DEFAULT_ANTHROPIC_BASE_URL",
    "anthropic_body",
    "anthropic_messages",
    "build_anthropic_payload",
    "cache_control",
]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"

_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}
_RETRYABLE_STREAM_ERRORS = {"overloaded_error", "api_error", "rate_limit_error"}
_STREAM_ERROR_KINDS = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "api_error": "server_error",
}
_BAD_ID = re.compile(r"[^a-zA-Z0-9_-]")
# The usage report's counts, and the Usage fields they set when present.
_USAGE_FIELDS = (
    ("input_tokens", "input"),
    ("output_tokens", "output"),
    ("cache_read_input_tokens", "cache_read"),
    ("cache_creation_input_tokens", "cache_write"),
)


def _tool_id(call_id: str) -> str:
    """Anthropic accepts tool ids of [a-zA-Z0-9_-] only (ids from other APIs vary)."""
    return _BAD_ID.sub("_", call_id)[:64] or "call"


def cache_control(retention: str | None) -> dict[str, Any] | None:
    """The cache marker for a ``cache_retention`` (None means "short")."""
    if retention == "none":
        return None
    if retention == "long":
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}


def _blocks(content: str | list[UserContent], images_ok: bool) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text:
                out.append({"type": "text", "text": block.text})
        elif images_ok:
            out.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
                }
            )
        else:
            out.append({"type": "text", "text": image_placeholder().text})
    return out


def _assistant_blocks(message: AssistantMessage, same_api: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:
                out.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            # Thinking goes back only with the signature Anthropic gave it.
            if not same_api or not block.thinking_signature:
                continue
            if block.redacted:
                out.append({"type": "redacted_thinking", "data": block.thinking_signature})
            else:
                out.append(
                    {
                        "type": "thinking",
                        "thinking": block.thinking,
                        "signature": block.thinking_signature,
                    }
                )
        elif isinstance(block, ToolCall):
            out.append(
                {
                    "type": "tool_use",
                    "id": _tool_id(block.id),
                    "name": block.name,
                    "input": block.arguments,
                }
            )
    return out


def _tool_result(message: ToolResultMessage, images_ok: bool) -> dict[str, Any]:
    content = _blocks(message.content, images_ok) or [{"type": "text", "text": "(no output)"}]
    out: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": _tool_id(message.tool_call_id),
        "content": content,
    }
    if message.is_error:
        out["is_error"] = True
    return out


def anthropic_messages(request: ProviderRequest) -> list[dict[str, Any]]:
    """The ``messages`` array; consecutive same-role turns are merged."""
    return _turns(request, wire_sequence(request.context.messages))


def _turns(request: ProviderRequest, history: Iterable[WireMessage]) -> list[dict[str, Any]]:
    images_ok, api = "image" in request.model.input, request.model.api
    return turn_list((_message(message, images_ok, api) for message in history), "content")


def _message(message: WireMessage, images_ok: bool, api: str) -> tuple[str, list[dict[str, Any]]]:
    """One message's role and content blocks (merged with its neighbours' of that role)."""
    if isinstance(message, AssistantMessage):
        return "assistant", _assistant_blocks(message, message.api == api)
    if isinstance(message, ToolResultMessage):
        return "user", [_tool_result(message, images_ok)]
    return "user", _blocks(message.content, images_ok)


_MESSAGES_SLOT = b'"messages": []'


class AnthropicWireCache(EncodedTurns):
    """The encoded content blocks of one provider's requests (``EncodedTurns``)."""

    __slots__ = ()

    def body(self, request: ProviderRequest) -> bytes:
        return anthropic_body(request, self)

    def encoded(self, request: ProviderRequest, cache: dict[str, Any] | None) -> bytes:
        """``anthropic_messages(request)`` as UTF-8 JSON, with the cache marker on the
        last user block as ``build_anthropic_payload`` sets it."""
        model = request.model
        images_ok = "image" in model.input

        def message(wire_message: WireMessage) -> tuple[str, list[dict[str, Any]]]:
            return _message(wire_message, images_ok, model.api)

        turns = self.turns(request.context.messages, message, (images_ok, model.api))
        if cache and turns and turns[-1][0] == "user":
            last = turns[-1][1]  # the block's JSON object, the marker as its last key
            last[-1] = last[-1][:-1] + b', "cache_control": ' + payload_bytes(cache) + b"}"
        return turns_json(turns, "content")


def build_anthropic_payload(request: ProviderRequest) -> dict[str, Any]:
    """The JSON body of a streamed messages request."""
    return _payload(request, anthropic_messages(request))


def anthropic_body(request: ProviderRequest, wire: AnthropicWireCache) -> bytes:
    """``build_anthropic_payload(request)`` as UTF-8 JSON (the same bytes
    ``payload_bytes`` makes of it), the history's messages taken from ``wire``."""
    body = payload_bytes(_payload(request, []))
    messages = wire.encoded(request, cache_control(request.stream_options.cache_retention))
    # The first "messages" key is the payload's own: it comes before the fields that
    # hold text of the user's (the model id before it is a JSON string, its quotes
    # escaped).
    return body.replace(_MESSAGES_SLOT, b'"messages": ' + messages, 1)


def _payload(request: ProviderRequest, messages: list[dict[str, Any]]) -> dict[str, Any]:
    model = request.model
    options = request.stream_options
    cache = cache_control(options.cache_retention)
    max_tokens = model.max_tokens or 4096
    payload: dict[str, Any] = {
        "model": model.id,
        "max_tokens": max_tokens,
        "stream": True,
        "messages": messages,
    }
    system = request.context.system_prompt
    if system:
        block: dict[str, Any] = {"type": "text", "text": system}
        if cache:
            block["cache_control"] = cache
        payload["system"] = [block]
    if cache and messages and messages[-1]["role"] == "user" and messages[-1]["content"]:
        last = dict(messages[-1]["content"][-1])
        last["cache_control"] = cache
        messages[-1]["content"][-1] = last
    if request.context.tools:
        payload["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.context.tools
        ]
    choice = request.context.tool_choice
    if choice is not None and request.context.tools:  # a typed result asks for a tool call
        payload["tool_choice"] = (
            {"type": "any"}
            if choice == "required"
            else {
                "type": "tool",
                "name": choice,
            }
        )
    wanted = request.context.response_schema
    if wanted is not None:  # structured output: the reply's text matches the schema
        payload["output_config"] = {"format": {"type": "json_schema", "schema": wanted.schema}}
    level = ThinkingLevel(request.thinking_level)
    if level != ThinkingLevel.OFF and model.reasoning:
        budget = THINKING_BUDGETS[level]
        if budget >= max_tokens:  # the budget must leave room for the answer
            budget = max(1024, max_tokens - 1024)
            if budget >= max_tokens:
                payload["max_tokens"] = budget + 1024
        payload["thinking"] = {"type": "enabled", "budget_tokens": budget}
    metadata = options.metadata or {}
    user_id = metadata.get("user_id")
    if user_id is not None:
        payload["metadata"] = {"user_id": str(user_id)}
    return payload


class AnthropicStreamState:
    """Reads message_start, content_block_*, message_delta, message_stop, ping, error."""

    __slots__ = ("builder", "done", "_tool", "_skip")

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self.done = False
        self._tool = -1  # content index of the open tool_use block
        self._skip = False  # inside a block type we do not keep

    def handle(self, event: str, data: str) -> None:
        builder = self.builder
        msg = builder.object_or_skip(json_data(data), "an event")
        if msg is None:
            return
        kind = msg.get("type") or event
        if kind == "content_block_delta":
            if self._skip:
                return
            delta = builder.object_or_skip(msg.get("delta"), "a delta") or {}
            dkind = delta.get("type")
            if dkind == "text_delta":
                text = builder.text_field(delta, "text")
                if text:
                    builder.text(text)
            elif dkind == "input_json_delta":
                builder.tool_delta(self._tool, builder.text_field(delta, "partial_json"))
            elif dkind == "thinking_delta":
                thinking = builder.text_field(delta, "thinking")
                if thinking:
                    builder.thinking(thinking)
            elif dkind == "signature_delta":
                signature = builder.text_field(delta, "signature")
                if signature:
                    builder.thinking_signature(signature)
        elif kind == "content_block_start":
            self._start(builder.object_or_skip(msg.get("content_block"), "a content block") or {})
        elif kind == "content_block_stop":
            if self._skip:
                self._skip = False
            else:
                builder.end_block()
                self._tool = -1
        elif kind == "message_start":
            message = builder.object_or_skip(msg.get("message"), "a message") or {}
            self._usage(message.get("usage"))
        elif kind == "message_delta":
            delta = builder.object_or_skip(msg.get("delta"), "a delta") or {}
            reason = delta.get("stop_reason")
            if reason and type(reason) is not str:
                builder.warn("the provider sent a stop_reason that is not a string; skipped")
            elif reason:
                mapped = _STOP.get(reason)
                if mapped is None:
                    raise ProviderError(f"the model stopped the reply (stop_reason {reason!r})")
                builder.stop_reason = mapped
            self._usage(msg.get("usage"))
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            raw = msg.get("error")
            error: dict[str, Any] = raw if type(raw) is dict else {"message": raw}
            etype = builder.text_field(error, "type") or "error"
            text = builder.text_field(error, "message") or json.dumps(error)
            raise ProviderError(
                f"{etype}: {text}",
                status=529 if etype == "overloaded_error" else None,
                retryable=etype in _RETRYABLE_STREAM_ERRORS,
                kind=_STREAM_ERROR_KINDS.get(etype),
            )
        # "ping" and unknown event types are ignored.

    def _start(self, block: dict[str, Any]) -> None:
        builder = self.builder
        btype = block.get("type")
        self._skip = False
        if btype == "text":
            builder.start_text()
            text = builder.text_field(block, "text")
            if text:
                builder.text(text)
        elif btype == "thinking":
            builder.start_thinking(signature=builder.text_field(block, "signature") or None)
            thinking = builder.text_field(block, "thinking")
            if thinking:
                builder.thinking(thinking)
        elif btype == "redacted_thinking":
            builder.start_thinking(
                redacted=True, signature=builder.text_field(block, "data") or None
            )
        elif btype == "tool_use":
            self._tool = builder.start_tool(
                builder.text_field(block, "id"), builder.text_field(block, "name")
            )
            initial = block.get("input")
            if initial:
                builder.tool_delta(self._tool, json.dumps(initial))
        else:  # server tools and other blocks this runtime does not model
            self._skip = True

    def _usage(self, raw: Any) -> None:
        builder = self.builder
        found = builder.object_or_skip(raw, "a usage report")
        if found is None:
            return
        usage = builder.partial.usage
        for name, field in _USAGE_FIELDS:
            count = builder.token_count(found, name)
            if count is not None:
                setattr(usage, field, count)

    def end(self) -> None:
        pass


class AnthropicMessagesProvider(HttpProvider):
    """Streams Anthropic messages."""

    __slots__ = ()

    api = "anthropic-messages"
    default_provider = "anthropic"
    base_url_hint = "is the server root (/v1/messages is added)"
    default_base_url = DEFAULT_ANTHROPIC_BASE_URL
    extra_headers = {"anthropic-version": ANTHROPIC_VERSION}
    wire_cache = AnthropicWireCache
    stream_state = AnthropicStreamState

    def url(self, model: Model) -> str:
        base = (model.base_url or DEFAULT_ANTHROPIC_BASE_URL).rstrip("/")
        return join_url(base.removesuffix("/v1"), "v1/messages")

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key}

    def payload(self, request: ProviderRequest, messages: list[WireMessage]) -> dict[str, Any]:
        return _payload(request, _turns(request, messages))

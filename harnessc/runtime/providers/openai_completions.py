"""The ``openai-completions`` wire API: POST {base_url}/chat/completions, streamed.

Serves OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp server,
LM Studio, ...) picked by ``Model.base_url``. Fields some servers reject are
governed by ``Model.compat`` (see ``openai_compat``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from harnessc.runtime.core.messages import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
)
from harnessc.runtime.core.options import Model, ThinkingLevel
from harnessc.runtime.providers.base import ProviderRequest
from harnessc.runtime.providers.builder import MessageBuilder, cut_name
from harnessc.runtime.providers.convert import (
    EncodedMessages,
    WireMessage,
    image_placeholder,
    wire_sequence,
)
from harnessc.runtime.providers.errors import ProviderError, error_text_from_body
from harnessc.runtime.providers.http import HttpProvider
from harnessc.runtime.providers.sse import json_data
from harnessc.runtime.providers.text import json_text, payload_bytes
from harnessc.runtime.providers.wire import join_url

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "OpenAICompletionsProvider",
    "OpenAIStreamState",
    "OpenAIWireCache",
    "build_openai_payload",
    "openai_compat",
    "openai_body",
    "openai_messages",
]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

_EFFORT = {
    ThinkingLevel.MINIMAL: "minimal",
    ThinkingLevel.LOW: "low",
    ThinkingLevel.MEDIUM: "medium",
    ThinkingLevel.HIGH: "high",
    ThinkingLevel.XHIGH: "high",
}

_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
}


def openai_compat(model: Model) -> dict[str, Any]:
    """The server switches for ``model``: defaults by server, then ``Model.compat``.

    Keys: supports_usage_in_streaming, supports_reasoning_effort, max_tokens_field
    ("max_completion_tokens" | "max_tokens" | None), supports_developer_role,
    supports_store, supports_metadata (OpenAI accepts metadata only with store=true,
    so it is off unless turned on), supports_prompt_cache_key, supports_xhigh,
    reasoning_effort_map (level name -> value).
    """
    base = model.base_url or DEFAULT_OPENAI_BASE_URL
    official = "api.openai.com" in base
    compat: dict[str, Any] = {
        "supports_usage_in_streaming": True,
        "supports_reasoning_effort": model.reasoning,
        "max_tokens_field": "max_completion_tokens" if official else "max_tokens",
        "supports_developer_role": official and model.reasoning,
        "supports_store": official,
        "supports_metadata": False,
        "supports_prompt_cache_key": official,
        "supports_xhigh": False,
        "reasoning_effort_map": {},
    }
    compat.update(model.compat)
    return compat


def _image_part(image: ImageContent) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"},
    }


def _user_content(content: str | list[UserContent], images_ok: bool) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif images_ok:
            parts.append(_image_part(block))
        else:
            parts.append({"type": "text", "text": image_placeholder().text})
    if all(p["type"] == "text" for p in parts):
        return "\n".join(p["text"] for p in parts)
    return parts


def _assistant(message: AssistantMessage) -> dict[str, Any] | None:
    text = "".join(c.text for c in message.content if isinstance(c, TextContent))
    calls = [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": json_text(c.arguments)},
        }
        for c in message.content
        if isinstance(c, ToolCall)
    ]
    if not text and not calls:
        return None
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def _tool_message(
    message: ToolResultMessage, images_ok: bool
) -> tuple[dict[str, Any], list[ImageContent]]:
    """A tool result's message, and the images it returned (they go in a user message)."""
    text = "\n".join(c.text for c in message.content if isinstance(c, TextContent))
    images = [c for c in message.content if isinstance(c, ImageContent)]
    if images and images_ok:
        text = text or "(see the attached image)"
    elif images:
        text = (text + "\n" if text else "") + image_placeholder().text
        images = []
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": text}, images


def _message(
    message: WireMessage, images_ok: bool
) -> tuple[dict[str, Any] | None, list[ImageContent]]:
    """One message's chat-completions form (None: nothing to send) and its images."""
    if isinstance(message, ToolResultMessage):
        return _tool_message(message, images_ok)
    if isinstance(message, AssistantMessage):
        return _assistant(message), []
    return {"role": "user", "content": _user_content(message.content, images_ok)}, []


def _images_message(images: list[ImageContent]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {"type": "text", "text": "Images returned by the tool calls above:"}
    ]
    parts.extend(_image_part(image) for image in images)
    return {"role": "user", "content": parts}


def _system_message(request: ProviderRequest, compat: dict[str, Any]) -> dict[str, Any] | None:
    system = request.context.system_prompt
    if not system:
        return None
    role = "developer" if compat.get("supports_developer_role") else "system"
    return {"role": role, "content": system}


def openai_messages(request: ProviderRequest, compat: dict[str, Any]) -> list[dict[str, Any]]:
    """The chat-completions ``messages`` for a request's system prompt and history."""
    return _messages(request, compat, wire_sequence(request.context.messages))


def _messages(
    request: ProviderRequest, compat: dict[str, Any], history: Iterable[WireMessage]
) -> list[dict[str, Any]]:
    images_ok = "image" in request.model.input
    out: list[dict[str, Any]] = []
    system = _system_message(request, compat)
    if system is not None:
        out.append(system)
    result_images: list[ImageContent] = []
    for message in history:
        if result_images and not isinstance(message, ToolResultMessage):
            out.append(_images_message(result_images))
            result_images.clear()
        mapped, images = _message(message, images_ok)
        if mapped is not None:
            out.append(mapped)
        result_images.extend(images)
    if result_images:
        out.append(_images_message(result_images))
    return out


# A message's encoded form: its JSON (b"" when nothing is sent), the images of a tool
# result (sent in a user message after the results), whether it is a tool result.
_Form = tuple[bytes, tuple[ImageContent, ...], bool]


class OpenAIWireCache:
    """The encoded chat-completions messages of one provider's requests.

    Each history message is encoded once (``EncodedMessages``: again only when it
    changed) and the request body is joined from the pieces; the system message is
    kept while its text and role stay the same.
    """

    __slots__ = ("messages", "_system")

    def __init__(self) -> None:
        self.messages: EncodedMessages[_Form] = EncodedMessages()
        self._system: tuple[str, str, bytes] | None = None

    def _system_bytes(self, message: dict[str, Any]) -> bytes:
        kept = self._system
        if kept is not None and kept[0] is message["content"] and kept[1] == message["role"]:
            return kept[2]
        encoded = payload_bytes(message)
        self._system = (message["content"], message["role"], encoded)
        return encoded

    def body(self, request: ProviderRequest) -> bytes:
        return openai_body(request, self)

    def encoded(self, request: ProviderRequest, compat: dict[str, Any]) -> list[bytes]:
        """``openai_messages(request, compat)``, each message UTF-8 JSON."""
        images_ok = "image" in request.model.input
        cache = self.messages

        def encode(message: WireMessage) -> _Form:
            mapped, images = _message(message, images_ok)
            body = b"" if mapped is None else payload_bytes(mapped)
            return body, tuple(images), isinstance(message, ToolResultMessage)

        out: list[bytes] = []
        system = _system_message(request, compat)
        if system is not None:
            out.append(self._system_bytes(system))
        result_images: list[ImageContent] = []
        for body, images, tool in cache.forms(request.context.messages, encode, images_ok):
            if result_images and not tool:
                out.append(payload_bytes(_images_message(result_images)))
                result_images.clear()
            if body:
                out.append(body)
            if images:
                result_images.extend(images)
        if result_images:
            out.append(payload_bytes(_images_message(result_images)))
        return out


def _payload_fields(request: ProviderRequest, compat: dict[str, Any]) -> dict[str, Any]:
    """The body's fields after ``model`` and ``messages``."""
    model = request.model
    options = request.stream_options
    payload: dict[str, Any] = {"stream": True}
    if compat.get("supports_usage_in_streaming"):
        payload["stream_options"] = {"include_usage": True}
    field = compat.get("max_tokens_field")
    if field and model.max_tokens:
        payload[field] = model.max_tokens
    if request.context.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in request.context.tools
        ]
    choice = request.context.tool_choice
    if choice is not None and request.context.tools:  # a typed result asks for a tool call
        payload["tool_choice"] = (
            choice if choice == "required" else {"type": "function", "function": {"name": choice}}
        )
    wanted = request.context.response_schema
    if wanted is not None:  # structured output: the reply's text matches the schema
        payload["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": wanted.name, "schema": wanted.schema, "strict": wanted.strict},
        }
    level = ThinkingLevel(request.thinking_level)
    if level != ThinkingLevel.OFF and model.reasoning and compat.get("supports_reasoning_effort"):
        effort_map = compat.get("reasoning_effort_map") or {}
        effort = effort_map.get(level.value)
        if effort is None:
            effort = (
                "xhigh"
                if level == ThinkingLevel.XHIGH and compat.get("supports_xhigh")
                else _EFFORT[level]
            )
        payload["reasoning_effort"] = effort
    metadata = options.metadata
    if metadata and compat.get("supports_metadata"):
        payload["metadata"] = {str(k): str(v) for k, v in metadata.items()}
        payload["store"] = True
    elif compat.get("supports_store"):
        payload["store"] = False
    retention = options.cache_retention or "short"
    if compat.get("supports_prompt_cache_key") and retention != "none" and request.session_id:
        payload["prompt_cache_key"] = request.session_id
        if retention == "long":
            payload["prompt_cache_retention"] = "24h"
    return payload


def build_openai_payload(request: ProviderRequest) -> dict[str, Any]:
    """The JSON body of a streamed chat-completions request."""
    return _payload(request, wire_sequence(request.context.messages))


def _payload(request: ProviderRequest, history: Iterable[WireMessage]) -> dict[str, Any]:
    compat = openai_compat(request.model)
    return {
        "model": request.model.id,
        "messages": _messages(request, compat, history),
        **_payload_fields(request, compat),
    }


def openai_body(request: ProviderRequest, cache: OpenAIWireCache) -> bytes:
    """``build_openai_payload(request)`` as UTF-8 JSON (the same bytes ``payload_bytes``
    makes of it), the history's messages taken from ``cache``."""
    compat = openai_compat(request.model)
    messages = cache.encoded(request, compat)
    rest = payload_bytes(_payload_fields(request, compat))  # '{"stream": true, ...}'
    head = payload_bytes({"model": request.model.id})[:-1]  # '{"model": "..."'
    head += b', "messages": ['
    tail = b"], " + rest[1:]
    if not messages:
        return head + tail
    # One join of the whole body: the head and the tail ride on the first and last piece.
    messages[0] = head + messages[0]
    messages[-1] += tail
    return b", ".join(messages)


class OpenAIStreamState:
    """Reads chat-completion chunks: text, reasoning, indexed tool-call fragments, usage."""

    __slots__ = ("builder", "done", "_tools", "_last_key", "_finish", "_filtered")

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self.done = False
        self._tools: dict[Any, int] = {}  # tool-call index (or id) -> content index
        self._last_key: Any = None
        self._finish = False
        self._filtered: str | None = None

    def handle(self, event: str, data: str) -> None:
        if data[:1] == "[" and data.strip() == "[DONE]":
            self._finish = True
            self.end()  # the reply is complete here, even if the connection stays open
            self.done = True
            return
        chunk = json_data(data)
        if type(chunk) is not dict:
            return
        if "error" in chunk and chunk["error"]:
            # Cut only after the driver redacted it (a key must not straddle the cut).
            text = error_text_from_body(data, limit=1 << 20) or "the server reported an error"
            raise ProviderError(text, retryable=not self.builder.has_content)
        builder = self.builder
        choices = chunk.get("choices")
        if choices:
            if type(choices) is not list:
                builder.warn("the provider sent choices that are not a list; skipped")
                choices = None
            choice = builder.object_or_skip(choices[0], "a choice", item=True) if choices else None
            if choice is not None:
                self._choice(choice)
        usage = chunk.get("usage")
        if usage:
            raw = builder.object_or_skip(usage, "a usage report")
            if raw is not None:
                self._usage(raw)

    def _choice(self, choice: dict[str, Any]) -> None:
        builder = self.builder
        delta = builder.object_or_skip(choice.get("delta"), "a delta")
        if delta:
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if reasoning and type(reasoning) is str:
                builder.thinking(reasoning)
            content = delta.get("content")
            if content:
                if type(content) is str:
                    builder.text(content)
                else:
                    builder.warn("the provider sent content that is not a string; skipped")
            calls = delta.get("tool_calls")
            if calls:
                if type(calls) is list:
                    self._tool_calls(calls)
                else:
                    builder.warn("the provider sent tool_calls that are not a list; skipped")
        finish = choice.get("finish_reason")
        if finish and type(finish) is not str:
            builder.warn("the provider sent a finish_reason that is not a string; skipped")
        elif finish:
            self._finish = True
            reason = _FINISH.get(finish)
            if reason is None:
                self._filtered = finish
            else:
                builder.stop_reason = reason

    def _tool_calls(self, calls: list[Any]) -> None:
        builder = self.builder
        for raw in calls:
            call = builder.object_or_skip(raw, "a tool call", item=True)
            if call is None:
                continue
            key = call.get("index")
            call_id = builder.text_field(call, "id")
            function = builder.object_or_skip(call.get("function"), "a tool call's function")
            function = function or {}
            name = builder.text_field(function, "name")
            if key is None or type(key) not in (int, str):  # whole calls without an index
                if call_id:
                    key = call_id
                elif name or self._last_key is None:
                    key = ("unindexed", len(self._tools))  # a name starts a new call
                else:
                    key = self._last_key  # more arguments of the call before
            self._last_key = key
            index = self._tools.get(key)
            if index is None:
                index = builder.start_tool(call_id or f"call_{len(self._tools)}", name or "")
                self._tools[key] = index
            else:
                block = builder.partial.content[index]
                if isinstance(block, ToolCall):
                    if call_id and not block.id:
                        block.id = cut_name(call_id)
                    if name and not block.name:
                        block.name = cut_name(name)
            arguments = function.get("arguments")
            if arguments:
                if type(arguments) is not str:
                    arguments = json.dumps(arguments)
                builder.tool_delta(index, arguments)

    def _usage(self, raw: dict[str, Any]) -> None:
        builder = self.builder
        usage = builder.partial.usage
        prompt = builder.token_count(raw, "prompt_tokens") or 0
        details = raw.get("prompt_tokens_details")
        cached = 0
        if type(details) is dict:
            cached = builder.token_count(details, "cached_tokens") or 0
        usage.input = max(0, prompt - cached)
        usage.cache_read = cached
        usage.output = builder.token_count(raw, "completion_tokens") or 0

    def end(self) -> None:
        if self._filtered is not None:
            raise ProviderError(
                f"the provider stopped the reply (finish_reason {self._filtered!r})"
            )
        if self._finish:
            self.done = True


class OpenAICompletionsProvider(HttpProvider):
    """Streams OpenAI chat completions (and OpenAI-compatible servers)."""

    __slots__ = ()

    api = "openai-completions"
    default_provider = "openai"
    base_url_hint = "ends with /v1"
    default_base_url = DEFAULT_OPENAI_BASE_URL
    wire_cache = OpenAIWireCache
    stream_state = OpenAIStreamState

    def url(self, model: Model) -> str:
        return join_url(model.base_url or DEFAULT_OPENAI_BASE_URL, "chat/completions")

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def payload(self, request: ProviderRequest, messages: list[WireMessage]) -> dict[str, Any]:
        return _payload(request, messages)

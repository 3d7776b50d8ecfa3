"""The ``google-generative-ai`` wire API (Gemini):
POST {base_url}/models/{id}:streamGenerateContent?alt=sse."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable
from typing import Any

from harnessc.runtime.core.messages import (
    AssistantMessage,
    ImageContent,
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
from harnessc.runtime.providers.errors import ProviderError, error_text_from_body
from harnessc.runtime.providers.http import HttpProvider
from harnessc.runtime.providers.retry import is_retryable_status
from harnessc.runtime.providers.sse import json_data
from harnessc.runtime.providers.text import payload_bytes
from harnessc.runtime.providers.wire import join_url

__all__ = [
    "DEFAULT_GOOGLE_BASE_URL",
    "GoogleGenerativeAIProvider",
    "GoogleStreamState",
    "GoogleWireCache",
    "build_google_payload",
    "google_body",
    "google_contents",
]

DEFAULT_GOOGLE_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"

_FINISH: dict[str, StopReason] = {"STOP": "stop", "MAX_TOKENS": "length"}


def _parts(content: str | list[UserContent], images_ok: bool) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    out: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            if block.text:
                out.append({"text": block.text})
        elif images_ok:
            out.append({"inlineData": {"mimeType": block.mime_type, "data": block.data}})
        else:
            out.append({"text": image_placeholder().text})
    return out


def _model_parts(message: AssistantMessage, same_api: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:
                part: dict[str, Any] = {"text": block.text}
                if same_api and block.text_signature:
                    part["thoughtSignature"] = block.text_signature
                out.append(part)
        elif isinstance(block, ThinkingContent):
            if same_api and block.thinking_signature and not block.redacted:
                out.append(
                    {
                        "text": block.thinking,
                        "thought": True,
                        "thoughtSignature": block.thinking_signature,
                    }
                )
        elif isinstance(block, ToolCall):
            out.append({"functionCall": {"name": block.name, "args": block.arguments}})
    return out


def google_contents(request: ProviderRequest) -> list[dict[str, Any]]:
    """The ``contents`` array; consecutive same-role turns are merged."""
    return _contents(request, wire_sequence(request.context.messages))


def _contents(request: ProviderRequest, history: Iterable[WireMessage]) -> list[dict[str, Any]]:
    images_ok, api = "image" in request.model.input, request.model.api
    return turn_list((_message(message, images_ok, api) for message in history), "parts")


def _message(message: WireMessage, images_ok: bool, api: str) -> tuple[str, list[dict[str, Any]]]:
    """One message's role and parts (merged with its neighbours' of that role)."""
    if isinstance(message, AssistantMessage):
        return "model", _model_parts(message, message.api == api)
    if isinstance(message, ToolResultMessage):
        text = "\n".join(c.text for c in message.content if isinstance(c, TextContent))
        key = "error" if message.is_error else "output"
        parts: list[dict[str, Any]] = [
            {"functionResponse": {"name": message.tool_name, "response": {key: text}}}
        ]
        images = [c for c in message.content if isinstance(c, ImageContent)]
        parts.extend(_parts(list(images), images_ok))
        return "user", parts
    return "user", _parts(message.content, images_ok)


_CONTENTS_SLOT = b'{"contents": []'


class GoogleWireCache(EncodedTurns):
    """The encoded parts of one provider's requests (``EncodedTurns``)."""

    __slots__ = ()

    def body(self, request: ProviderRequest) -> bytes:
        return google_body(request, self)

    def encoded(self, request: ProviderRequest) -> bytes:
        """``google_contents(request)`` as UTF-8 JSON."""
        model = request.model
        images_ok = "image" in model.input

        def message(wire_message: WireMessage) -> tuple[str, list[dict[str, Any]]]:
            return _message(wire_message, images_ok, model.api)

        turns = self.turns(request.context.messages, message, (images_ok, model.api))
        return turns_json(turns, "parts")


def google_body(request: ProviderRequest, wire: GoogleWireCache) -> bytes:
    """``build_google_payload(request)`` as UTF-8 JSON (the same bytes ``payload_bytes``
    makes of it), the history's contents taken from ``wire``."""
    body = payload_bytes(_payload(request, []))  # starts with its first key, "contents"
    return b'{"contents": ' + wire.encoded(request) + body[len(_CONTENTS_SLOT) :]


def build_google_payload(request: ProviderRequest) -> dict[str, Any]:
    """The JSON body of a streamGenerateContent request."""
    return _payload(request, google_contents(request))


def _payload(request: ProviderRequest, contents: list[dict[str, Any]]) -> dict[str, Any]:
    model = request.model
    payload: dict[str, Any] = {"contents": contents}
    system = request.context.system_prompt
    if system:
        payload["systemInstruction"] = {"parts": [{"text": system}]}
    if request.context.tools:
        # "parametersJsonSchema" takes full JSON Schema; endpoints that know only the
        # OpenAPI subset want "parameters" (Model.compat["tool_schema_field"]).
        schema_field = str(model.compat.get("tool_schema_field") or "parametersJsonSchema")
        payload["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": t.name,
                        "description": t.description,
                        schema_field: t.parameters,
                    }
                    for t in request.context.tools
                ]
            }
        ]
    choice = request.context.tool_choice
    if choice is not None and request.context.tools:  # a typed result asks for a tool call
        calling: dict[str, Any] = {"mode": "ANY"}
        if choice != "required":
            calling["allowedFunctionNames"] = [choice]
        payload["toolConfig"] = {"functionCallingConfig": calling}
    config: dict[str, Any] = {}
    wanted = request.context.response_schema
    if wanted is not None:  # structured output: the reply's text matches the schema
        config["responseMimeType"] = "application/json"
        # "responseJsonSchema" takes full JSON Schema; "responseSchema" the OpenAPI subset
        field = str(model.compat.get("response_schema_field") or "responseJsonSchema")
        config[field] = wanted.schema
    if model.max_tokens:
        config["maxOutputTokens"] = model.max_tokens
    level = ThinkingLevel(request.thinking_level)
    if model.reasoning and level != ThinkingLevel.OFF:
        config["thinkingConfig"] = {
            "thinkingBudget": THINKING_BUDGETS[level],
            "includeThoughts": True,
        }
    if config:
        payload["generationConfig"] = config
    return payload


class GoogleStreamState:
    """Reads GenerateContentResponse chunks: text, thoughts, function calls, usage."""

    __slots__ = ("builder", "done", "_finish", "_calls", "_blocked")

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self.done = False
        self._finish: str | None = None
        self._calls = 0
        self._blocked: str | None = None

    def handle(self, event: str, data: str) -> None:
        chunk = json_data(data)
        if type(chunk) is not dict:
            return
        error = chunk.get("error")
        if error:
            # An error frame carries the HTTP code it stands for (429, 503, ...): retried
            # like that status, as long as nothing of the reply was received.
            code = error.get("code") if isinstance(error, dict) else None
            status = code if type(code) is int else None
            text = error_text_from_body(data, limit=1 << 20) or "the server reported an error"
            raise ProviderError(
                f"HTTP {status}: {text}" if status else text,
                status=status,
                retryable=status is not None
                and is_retryable_status(status)
                and not self.builder.has_content,
            )
        builder = self.builder
        candidates = chunk.get("candidates")
        if candidates:
            if type(candidates) is not list:
                builder.warn("the provider sent candidates that are not a list; skipped")
                candidates = None
            candidate = (
                builder.object_or_skip(candidates[0], "a candidate", item=True)
                if candidates
                else None
            )
            if candidate is not None:
                self._candidate(candidate)
        feedback = builder.object_or_skip(chunk.get("promptFeedback"), "a promptFeedback")
        if feedback and feedback.get("blockReason"):
            self._blocked = str(feedback["blockReason"])[:100]
        usage = builder.object_or_skip(chunk.get("usageMetadata"), "a usage report")
        if usage:
            self._usage(usage)

    def _candidate(self, candidate: dict[str, Any]) -> None:
        builder = self.builder
        content = builder.object_or_skip(candidate.get("content"), "a candidate's content")
        parts = content.get("parts") if content else None
        if parts:
            if type(parts) is not list:
                builder.warn("the provider sent parts that are not a list; skipped")
                parts = []
            for raw in parts:
                part = builder.object_or_skip(raw, "a part", item=True)
                if part is not None:
                    self._part(part)
        finish = candidate.get("finishReason")
        if finish and type(finish) is not str:
            builder.warn("the provider sent a finishReason that is not a string; skipped")
        elif finish:
            self._finish = finish
            reason = _FINISH.get(finish)
            if reason is not None:
                builder.stop_reason = reason

    def _part(self, part: dict[str, Any]) -> None:
        builder = self.builder
        call = builder.object_or_skip(part.get("functionCall"), "a functionCall")
        if call is not None:
            self._calls += 1
            name = builder.text_field(call, "name")
            call_id = builder.text_field(call, "id") or f"call_{secrets.token_hex(6)}"
            index = builder.start_tool(call_id, name)
            args = call.get("args")
            arguments = args if isinstance(args, dict) else {}
            builder.tool_delta(index, json.dumps(arguments, ensure_ascii=False))
            builder.end_block()
            return
        text = part.get("text")
        if text is not None and type(text) is not str:
            text = builder.text_field(part, "text") or None
        signature = builder.text_field(part, "thoughtSignature")
        if part.get("thought"):
            if text:
                builder.thinking(text)
            if signature:
                builder.thinking_signature(signature, replace=True)
        elif text is not None:
            if text:
                builder.text(text)
            if signature:
                builder.text_signature(signature)

    def _usage(self, raw: dict[str, Any]) -> None:
        builder = self.builder
        usage = builder.partial.usage
        prompt = builder.token_count(raw, "promptTokenCount") or 0
        cached = builder.token_count(raw, "cachedContentTokenCount") or 0
        usage.input = max(0, prompt - cached)
        usage.cache_read = cached
        usage.output = (builder.token_count(raw, "candidatesTokenCount") or 0) + (
            builder.token_count(raw, "thoughtsTokenCount") or 0
        )

    def end(self) -> None:
        if self._blocked is not None:
            raise ProviderError(f"the prompt was blocked (blockReason {self._blocked})")
        if self._finish is None:
            return
        if self._finish not in _FINISH:
            raise ProviderError(f"the model stopped the reply (finishReason {self._finish})")
        self.done = True


class GoogleGenerativeAIProvider(HttpProvider):
    """Streams Gemini generateContent."""

    __slots__ = ()

    api = "google-generative-ai"
    default_provider = "google"
    base_url_hint = "ends with /v1beta"
    default_base_url = DEFAULT_GOOGLE_BASE_URL
    wire_cache = GoogleWireCache
    stream_state = GoogleStreamState

    def url(self, model: Model) -> str:
        base = model.base_url or DEFAULT_GOOGLE_BASE_URL
        return join_url(base, f"models/{model.id}:streamGenerateContent?alt=sse")

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key}

    def payload(self, request: ProviderRequest, messages: list[WireMessage]) -> dict[str, Any]:
        return _payload(request, _contents(request, messages))

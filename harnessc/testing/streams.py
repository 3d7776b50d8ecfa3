"""SSE event streams in each vendor's documented framing, for tests and benchmarks.

Every builder returns a list of encoded SSE events (``bytes``), one per event, so a
test can serve them through ``ProtocolServer`` (grouped into chunks as it likes) and
a benchmark can feed them to a parser without sockets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AnthropicBlock",
    "anthropic_event",
    "anthropic_events",
    "google_chunk",
    "google_events",
    "openai_chunk",
    "openai_completion",
    "openai_events",
    "openai_tool_call_events",
    "openai_usage",
    "sse_data",
    "split_text",
]


def sse_data(data: Any, event: str | None = None, *, crlf: bool = False) -> bytes:
    """One SSE event: optional ``event:`` line, one ``data:`` line, blank line."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    nl = "\r\n" if crlf else "\n"
    head = f"event: {event}{nl}" if event else ""
    return f"{head}data: {text}{nl}{nl}".encode()


def split_text(text: str, pieces: int) -> list[str]:
    """``text`` cut into ``pieces`` nearly equal parts (at least one character each)."""
    pieces = max(1, min(pieces, len(text))) if text else 1
    size, extra = divmod(len(text), pieces)
    out: list[str] = []
    start = 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out


# -- OpenAI chat completions --------------------------------------------------------


def openai_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = "test-model",
    choices: bool = True,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` object."""
    chunk: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": model,
        "choices": (
            [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}]
            if choices
            else []
        ),
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def openai_completion(
    model: str,
    text: str | None = None,
    call: tuple[str, str, str] | None = None,
    usage: tuple[int, int] = (10, 5),
) -> dict[str, Any]:
    """A whole (not streamed) Chat Completions reply: ``text``, or one tool ``call``
    (id, name, JSON arguments); ``usage`` is (prompt, completion) tokens."""
    message: dict[str, Any] = {"role": "assistant", "content": None if call else text}
    if call is not None:
        call_id, name, arguments = call
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ]
    prompt, completion = usage
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if call else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def openai_usage(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def openai_events(
    text: Iterable[str] = (),
    *,
    reasoning: Iterable[str] = (),
    finish_reason: str = "stop",
    usage: tuple[int, int, int] | None = (10, 5, 0),
    done: bool = True,
) -> list[bytes]:
    """A text reply (after optional ``reasoning_content`` deltas), finish, usage, [DONE]."""
    events = [sse_data(openai_chunk({"role": "assistant", "content": ""}))]
    events.extend(sse_data(openai_chunk({"reasoning_content": piece})) for piece in reasoning)
    events.extend(sse_data(openai_chunk({"content": piece})) for piece in text)
    events.append(sse_data(openai_chunk({}, finish_reason=finish_reason)))
    if usage is not None:
        events.append(sse_data(openai_chunk(usage=openai_usage(*usage), choices=False)))
    if done:
        events.append(sse_data("[DONE]"))
    return events


def openai_tool_call_events(
    calls: Sequence[tuple[str, str, str]],
    *,
    pieces: int = 5,
    text: Iterable[str] = (),
    usage: tuple[int, int, int] | None = (20, 10, 0),
) -> list[bytes]:
    """Tool calls ``(id, name, arguments_json)``, arguments split into ``pieces``."""
    events = [sse_data(openai_chunk({"role": "assistant", "content": None}))]
    events.extend(sse_data(openai_chunk({"content": piece})) for piece in text)
    for index, (call_id, name, arguments) in enumerate(calls):
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        events.append(sse_data(openai_chunk({"tool_calls": [first]})))
        for piece in split_text(arguments, pieces):
            fragment = {"index": index, "function": {"arguments": piece}}
            events.append(sse_data(openai_chunk({"tool_calls": [fragment]})))
    events.append(sse_data(openai_chunk({}, finish_reason="tool_calls")))
    if usage is not None:
        events.append(sse_data(openai_chunk(usage=openai_usage(*usage), choices=False)))
    events.append(sse_data("[DONE]"))
    return events


# -- Anthropic messages -------------------------------------------------------------


@dataclass(slots=True)
class AnthropicBlock:
    """One content block: kind "text" | "thinking" | "tool_use" | "redacted_thinking".

    ``pieces`` are the text / thinking / partial-JSON deltas; ``signature`` the
    thinking signature (sent as a signature_delta) or the redacted data.
    """

    kind: str
    pieces: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    signature: str = ""


def anthropic_event(kind: str, **fields: Any) -> bytes:
    return sse_data({"type": kind, **fields}, kind)


def anthropic_events(
    blocks: Sequence[AnthropicBlock],
    *,
    stop_reason: str = "end_turn",
    usage: tuple[int, int, int, int] = (10, 5, 0, 0),
    model: str = "claude-test",
    ping: bool = True,
    stop: bool = True,
) -> list[bytes]:
    """A whole message stream; ``usage`` is (input, output, cache_read, cache_write)."""
    input_tokens, output_tokens, cache_read, cache_write = usage
    message: dict[str, Any] = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 1,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        },
    }
    events = [anthropic_event("message_start", message=message)]
    if ping:
        events.append(anthropic_event("ping"))
    for index, block in enumerate(blocks):
        if block.kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
        elif block.kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
        elif block.kind == "redacted_thinking":
            start = {"type": "redacted_thinking", "data": block.signature}
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        events.append(anthropic_event("content_block_start", index=index, content_block=start))
        for piece in block.pieces:
            if block.kind == "text":
                delta = {"type": "text_delta", "text": piece}
            elif block.kind == "thinking":
                delta = {"type": "thinking_delta", "thinking": piece}
            else:
                delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(anthropic_event("content_block_delta", index=index, delta=delta))
        if block.kind == "thinking" and block.signature:
            delta = {"type": "signature_delta", "signature": block.signature}
            events.append(anthropic_event("content_block_delta", index=index, delta=delta))
        events.append(anthropic_event("content_block_stop", index=index))
    events.append(
        anthropic_event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        )
    )
    if stop:
        events.append(anthropic_event("message_stop"))
    return events


# -- Google generative AI -----------------------------------------------------------


def google_chunk(
    parts: list[dict[str, Any]] | None = None,
    *,
    finish_reason: str | None = None,
    usage: tuple[int, int, int, int] | None = None,
    model: str = "gemini-test",
) -> dict[str, Any]:
    """One GenerateContentResponse; ``usage`` is (prompt, candidates, thoughts, cached)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts or []}, "index": 0}
    if finish_reason:
        candidate["finishReason"] = finish_reason
    chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
    if usage is not None:
        prompt, candidates, thoughts, cached = usage
        chunk["usageMetadata"] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts,
            "cachedContentTokenCount": cached,
            "totalTokenCount": prompt + candidates + thoughts,
        }
    return chunk


def google_events(
    text: Iterable[str] = (),
    *,
    thoughts: Iterable[str] = (),
    calls: Sequence[tuple[str, dict[str, Any]]] = (),
    finish_reason: str = "STOP",
    usage: tuple[int, int, int, int] = (10, 5, 0, 0),
) -> list[bytes]:
    """Thought parts, text parts, then function calls; the last chunk finishes.

    Gemini frames its SSE with CRLF line ends, as here.
    """
    chunks = [google_chunk([{"text": piece, "thought": True}]) for piece in thoughts]
    chunks.extend(google_chunk([{"text": piece}]) for piece in text)
    if calls:
        parts = [{"functionCall": {"name": name, "args": args}} for name, args in calls]
        chunks.append(google_chunk(parts))
    chunks.append(google_chunk([], finish_reason=finish_reason, usage=usage))
    return [sse_data(chunk, crlf=True) for chunk in chunks]

from __future__ import annotations

import asyncio
import json

from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from harnessc.runtime.core.options import Model, ModelCost, ThinkingLevel
from harnessc.runtime.providers.anthropic_messages import AnthropicMessagesProvider
from harnessc.runtime.providers.base import ProviderRetry
from harnessc.testing import (
    AnthropicBlock,
    ProtocolServer,
    ScriptedResponse,
    anthropic_event,
    anthropic_events,
)

from .conftest import API_KEY, READ_TOOL


def model_for(server: ProtocolServer, **fields: object) -> Model:
    base = {
        "id": "claude-test",
        "api": "anthropic-messages",
        "base_url": server.url,
        "api_key_env": "HARNESSC_TEST_KEY",
        "max_tokens": 4096,
    }
    base.update(fields)
    return Model(**base)  # type: ignore[arg-type]


def test_thinking_text_and_tool_use(server, make_request, collect, event_types):
    blocks = [
        AnthropicBlock("thinking", ["The user ", "wants a file."], signature="c2lnbmF0dXJl"),
        AnthropicBlock("text", ["I'll ", "read it."]),
        AnthropicBlock("tool_use", ['{"pa', 'th": "RE', 'ADME.md"}'], id="toolu_01", name="read"),
    ]
    events_ = anthropic_events(blocks, stop_reason="tool_use", usage=(50, 30, 200, 10))
    server.enqueue(ScriptedResponse.sse(events_))
    model = model_for(server, reasoning=True, max_tokens=32000, cost=ModelCost(3, 15, 0.3, 3.75))
    events = collect(
        AnthropicMessagesProvider(),
        make_request(model, tools=[READ_TOOL], thinking=ThinkingLevel.MEDIUM),
    )
    assert event_types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    final = events[-1].partial
    thinking, text, call = final.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking == "The user wants a file."
    assert thinking.thinking_signature == "c2lnbmF0dXJl"
    assert isinstance(text, TextContent) and text.text == "I'll read it."
    assert isinstance(call, ToolCall)
    assert (call.id, call.name, call.arguments) == ("toolu_01", "read", {"path": "README.md"})
    assert final.stop_reason == "toolUse"
    assert final.api == "anthropic-messages" and final.provider == "anthropic"
    usage = final.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (50, 30, 200, 10)
    assert usage.total_tokens == 290
    expected = (50 * 3 + 30 * 15 + 200 * 0.3 + 10 * 3.75) / 1e6
    assert abs(usage.cost.total - expected) < 1e-12

    (request,) = server.requests
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == API_KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.json
    assert body["stream"] is True
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
        }
    ]
    assert body["tools"] == [
        {"name": "read", "description": "Read a file.", "input_schema": READ_TOOL.parameters}
    ]


def test_cache_retention_and_metadata(server, make_request, collect):
    for _ in range(2):
        server.enqueue(ScriptedResponse.sse(anthropic_events([AnthropicBlock("text", ["ok"])])))
    provider = AnthropicMessagesProvider()
    collect(provider, make_request(model_for(server), cache_retention="none"))
    collect(
        provider,
        make_request(model_for(server), cache_retention="long", metadata={"user_id": "u-7"}),
    )
    first, second = (r.json for r in server.requests)
    assert "cache_control" not in json.dumps(first)
    assert first["system"] == [{"type": "text", "text": "You are terse."}]
    assert second["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert second["messages"][-1]["content"][-1]["cache_control"] == {
        "type": "ephemeral",
        "ttl": "1h",
    }
    assert second["metadata"] == {"user_id": "u-7"}
    assert "thinking" not in second


def test_thinking_budget_fits_small_max_tokens(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(anthropic_events([AnthropicBlock("text", ["ok"])])))
    model = model_for(server, reasoning=True, max_tokens=4096)
    collect(AnthropicMessagesProvider(), make_request(model, thinking=ThinkingLevel.HIGH))
    body = server.requests[0].json
    assert body["thinking"]["budget_tokens"] < body["max_tokens"]


def test_history_mapping(server, make_request, collect):
    history = [
        UserMessage("read both"),
        AssistantMessage(
            content=[
                ThinkingContent("plan", thinking_signature="sig1"),
                ThinkingContent("", thinking_signature="opaque", redacted=True),
                TextContent("Sure."),
                ToolCall("toolu_a", "read", {"path": "a"}),
                ToolCall("functions.read:1", "read", {"path": "b"}),
            ],
            api="anthropic-messages",
            stop_reason="toolUse",
        ),
        ToolResultMessage("toolu_a", "read", [TextContent("A")]),
        ToolResultMessage("functions.read:1", "read", [TextContent("nope")], is_error=True),
        AssistantMessage(
            content=[ThinkingContent("foreign", thinking_signature="x"), TextContent("Done.")],
            api="openai-completions",
        ),
        UserMessage("thanks"),
    ]
    server.enqueue(ScriptedResponse.sse(anthropic_events([AnthropicBlock("text", ["ok"])])))
    collect(
        AnthropicMessagesProvider(),
        make_request(model_for(server), history, cache_retention="none"),
    )
    assert server.requests[0].json["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "read both"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "sig1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "toolu_a", "name": "read", "input": {"path": "a"}},
                {
                    "type": "tool_use",
                    "id": "functions_read_1",
                    "name": "read",
                    "input": {"path": "b"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": [{"type": "text", "text": "A"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "functions_read_1",
                    "content": [{"type": "text", "text": "nope"}],
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]


def test_redacted_thinking_block_is_kept(server, make_request, collect):
    blocks = [
        AnthropicBlock("redacted_thinking", signature="ENCRYPTED"),
        AnthropicBlock("text", ["hi"]),
    ]
    server.enqueue(ScriptedResponse.sse(anthropic_events(blocks)))
    events = collect(AnthropicMessagesProvider(), make_request(model_for(server)))
    thinking = events[-1].partial.content[0]
    assert isinstance(thinking, ThinkingContent)
    assert thinking.redacted and thinking.thinking_signature == "ENCRYPTED"


def test_error_event_after_output_ends_the_stream(server, make_request, collect):
    full = anthropic_events([AnthropicBlock("text", ["partial ", "answer"])], stop=False)
    # message_start, ping, block start, two deltas, then an error instead of the rest
    body = full[:5] + [
        anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})
    ]
    server.enqueue(ScriptedResponse.sse(body))
    events = collect(AnthropicMessagesProvider(), make_request(model_for(server)))
    final = events[-1].partial
    assert events[-1].type == "error"
    assert final.error_message == "overloaded_error: Overloaded"
    assert final.text == "partial answer"
    assert len(server.requests) == 1  # output was streamed: never retried


def test_error_event_before_output_is_retried(server, make_request, collect):
    early = anthropic_events([AnthropicBlock("text", ["x"])])[:1] + [
        anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})
    ]
    server.enqueue(
        ScriptedResponse.sse(early),
        ScriptedResponse.sse(anthropic_events([AnthropicBlock("text", ["fine"])])),
    )
    retries: list[ProviderRetry] = []

    async def on_retry(retry: ProviderRetry) -> None:
        retries.append(retry)

    request = make_request(model_for(server))
    request.on_retry = on_retry
    events = collect(AnthropicMessagesProvider(), request)
    assert events[-1].type == "done" and events[-1].partial.text == "fine"
    assert len(retries) == 1 and retries[0].status == 529
    assert len(server.requests) == 2


def test_prompt_too_long_is_context_overflow(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.error(
            400, "prompt is too long: 210000 tokens > 200000 maximum", kind="invalid_request_error"
        )
    )
    events = collect(AnthropicMessagesProvider(), make_request(model_for(server)))
    final = events[-1].partial
    assert final.context_overflow is True
    assert final.error_message == (
        "HTTP 400: invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum"
    )


def test_base_url_with_v1_suffix(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(anthropic_events([AnthropicBlock("text", ["ok"])])))
    collect(
        AnthropicMessagesProvider(), make_request(model_for(server, base_url=server.url + "/v1/"))
    )
    assert server.requests[0].path == "/v1/messages"


def test_events_split_at_odd_byte_boundaries(server, make_request, collect):
    data = b"".join(anthropic_events([AnthropicBlock("text", ["héllo ", "wörld ✓"])]))
    chunks = [data[i : i + 7] for i in range(0, len(data), 7)]
    server.enqueue(ScriptedResponse(chunks=chunks))
    events = collect(AnthropicMessagesProvider(), make_request(model_for(server)))
    assert events[-1].partial.text == "héllo wörld ✓"


def test_parallel_streams_share_one_client(server, make_request):
    for _ in range(4):
        server.enqueue(ScriptedResponse.sse(anthropic_events([AnthropicBlock("text", ["ok"])])))
    provider = AnthropicMessagesProvider()

    async def one() -> str:
        final = None
        async for event in provider.stream(make_request(model_for(server))):
            final = event
        assert final is not None
        return final.partial.text

    async def main() -> list[str]:
        texts = await asyncio.gather(*(one() for _ in range(4)))
        await provider.aclose()
        return list(texts)

    assert asyncio.run(main()) == ["ok"] * 4


def test_error_in_the_same_chunk_as_output_is_not_retried(server, make_request, collect):
    full = anthropic_events([AnthropicBlock("text", ["partial ", "answer"])], stop=False)
    body = full[:5] + [
        anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})
    ]
    server.enqueue(ScriptedResponse.sse(body, per_chunk=len(body)), ScriptedResponse.sse(full))
    events = collect(AnthropicMessagesProvider(), make_request(model_for(server)))
    assert events[-1].type == "error"
    assert [e.delta for e in events if e.type == "text_delta"] == ["partial ", "answer"]
    assert len(server.requests) == 1

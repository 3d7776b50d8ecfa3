from __future__ import annotations

import json

import pytest

from harnessc.runtime.core.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from harnessc.runtime.core.options import Model, ModelCost, ThinkingLevel
from harnessc.runtime.providers.openai_completions import (
    OpenAICompletionsProvider,
    openai_compat,
)
from harnessc.testing import (
    ProtocolServer,
    ScriptedResponse,
    openai_chunk,
    openai_events,
    openai_tool_call_events,
    sse_data,
)

from .conftest import API_KEY, READ_TOOL


def model_for(server: ProtocolServer, **fields: object) -> Model:
    base = {
        "id": "test-model",
        "api": "openai-completions",
        "provider": "local-vllm",
        "base_url": server.url + "/v1",
        "api_key_env": "HARNESSC_TEST_KEY",
    }
    base.update(fields)
    return Model(**base)  # type: ignore[arg-type]


def test_text_stream_usage_and_request(server, make_request, collect, event_types):
    server.enqueue(ScriptedResponse.sse(openai_events(["Hel", "lo", " there"], usage=(100, 7, 40))))
    model = model_for(server, cost=ModelCost(input=2.0, output=8.0, cache_read=0.5))
    events = collect(OpenAICompletionsProvider(), make_request(model))

    assert event_types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hel", "lo", " there"]
    final = events[-1].partial
    assert final.text == "Hello there"
    assert (final.api, final.provider, final.model) == (
        "openai-completions",
        "local-vllm",
        "test-model",
    )
    assert final.stop_reason == "stop"
    usage = final.usage
    assert (usage.input, usage.cache_read, usage.output, usage.total_tokens) == (60, 40, 7, 107)
    assert usage.cost.input == pytest.approx(60 * 2.0 / 1e6)
    assert usage.cost.output == pytest.approx(7 * 8.0 / 1e6)
    assert usage.cost.cache_read == pytest.approx(40 * 0.5 / 1e6)
    assert usage.cost.total == pytest.approx(
        usage.cost.input + usage.cost.output + usage.cost.cache_read
    )

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.json
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "test-model"
    assert body["max_tokens"] == model.max_tokens
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    assert "reasoning_effort" not in body and "store" not in body


def test_multiple_tool_calls_split_across_many_chunks(server, make_request, collect):
    calls = [
        ("call_a", "read", json.dumps({"path": "src/main.py", "offset": 10})),
        ("call_b", "bash", json.dumps({"command": "ls -la && echo 'done'"})),
    ]
    server.enqueue(
        ScriptedResponse.sse(openai_tool_call_events(calls, pieces=9, text=["Let me look."]))
    )
    events = collect(
        OpenAICompletionsProvider(), make_request(model_for(server), tools=[READ_TOOL])
    )

    final = events[-1].partial
    assert final.stop_reason == "toolUse"
    assert final.text == "Let me look."
    tool_calls = final.tool_calls
    assert [(c.id, c.name, c.arguments) for c in tool_calls] == [
        ("call_a", "read", {"path": "src/main.py", "offset": 10}),
        ("call_b", "bash", {"command": "ls -la && echo 'done'"}),
    ]
    assert all(c.parse_error is None for c in tool_calls)
    deltas = [e for e in events if e.type == "toolcall_delta"]
    assert len(deltas) == 18
    assert {e.content_index for e in deltas} == {1, 2}
    ends = [e for e in events if e.type == "toolcall_end"]
    assert [json.loads(e.delta) for e in ends] == [c.arguments for c in tool_calls]
    body = server.requests[0].json
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": READ_TOOL.parameters,
            },
        }
    ]


def test_reasoning_deltas_become_a_thinking_block(server, make_request, collect, event_types):
    server.enqueue(ScriptedResponse.sse(openai_events(["42"], reasoning=["Let me ", "think."])))
    model = model_for(server, reasoning=True)
    events = collect(OpenAICompletionsProvider(), make_request(model, thinking=ThinkingLevel.HIGH))
    assert event_types(events)[:5] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
    ]
    final = events[-1].partial
    assert isinstance(final.content[0], ThinkingContent)
    assert final.content[0].thinking == "Let me think."
    assert final.text == "42"
    assert server.requests[0].json["reasoning_effort"] == "high"


def test_compat_flags_keep_rejected_fields_out(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["ok"], usage=None)))
    model = model_for(
        server,
        reasoning=True,
        compat={
            "supports_reasoning_effort": False,
            "supports_usage_in_streaming": False,
            "max_tokens_field": None,
            "supports_developer_role": False,
        },
    )
    events = collect(OpenAICompletionsProvider(), make_request(model, thinking=ThinkingLevel.HIGH))
    assert events[-1].type == "done"
    body = server.requests[0].json
    for field in ("reasoning_effort", "stream_options", "max_tokens", "max_completion_tokens"):
        assert field not in body
    assert body["messages"][0]["role"] == "system"


def test_official_openai_defaults():
    model = Model(id="o4-mini", api="openai-completions", reasoning=True)
    compat = openai_compat(model)
    assert compat["max_tokens_field"] == "max_completion_tokens"
    assert compat["supports_developer_role"] is True
    assert compat["supports_store"] is True
    local = openai_compat(
        Model(id="llama", api="openai-completions", base_url="http://localhost:8080/v1")
    )
    assert local["max_tokens_field"] == "max_tokens"
    assert local["supports_store"] is False
    assert local["supports_developer_role"] is False


def test_developer_role_and_effort_mapping(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["ok"])))
    model = model_for(
        server,
        reasoning=True,
        compat={"supports_developer_role": True, "max_tokens_field": "max_completion_tokens"},
    )
    collect(OpenAICompletionsProvider(), make_request(model, thinking=ThinkingLevel.XHIGH))
    body = server.requests[0].json
    assert body["messages"][0] == {"role": "developer", "content": "You are terse."}
    assert body["reasoning_effort"] == "high"
    assert body["max_completion_tokens"] == model.max_tokens


def test_history_is_mapped_for_the_wire(server, make_request, collect):
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    history = [
        UserMessage([TextContent("what is in"), image]),
        AssistantMessage(
            content=[
                ThinkingContent("hmm"),
                TextContent("Reading."),
                ToolCall("call_1", "read", {"path": "a.txt"}),
                ToolCall("call_2", "read", {"path": "b.txt"}),
            ],
            stop_reason="toolUse",
        ),
        ToolResultMessage("call_1", "read", [TextContent("A"), image]),
        ToolResultMessage("call_2", "read", [TextContent("boom")], is_error=True),
        ToolResultMessage("call_zzz", "read", [TextContent("orphan")]),
        AssistantMessage(content=[TextContent("half")], stop_reason="error", error_message="x"),
        AssistantMessage(
            content=[ToolCall("call_3", "read", {"path": "c"})], stop_reason="toolUse"
        ),
        UserMessage("go on"),
    ]
    server.enqueue(ScriptedResponse.sse(openai_events(["ok"])))
    collect(OpenAICompletionsProvider(), make_request(model_for(server), history))
    messages = server.requests[0].json["messages"]
    data_url = "data:image/png;base64,aGVsbG8="
    assert messages[1:] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in"},
                {"type": "image_url", "image_url": {"url": data_url}},
            ],
        },
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "a.txt"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "b.txt"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "A"},
        {"role": "tool", "tool_call_id": "call_2", "content": "boom"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images returned by the tool calls above:"},
                {"type": "image_url", "image_url": {"url": data_url}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "c"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "No result provided"},
        {"role": "user", "content": "go on"},
    ]


def test_images_are_replaced_for_text_only_models(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["ok"])))
    model = model_for(server, input=("text",))
    message = UserMessage([TextContent("look"), ImageContent("aGk=", "image/png")])
    collect(OpenAICompletionsProvider(), make_request(model, [message]))
    content = server.requests[0].json["messages"][1]["content"]
    assert isinstance(content, str) and "image omitted" in content


def test_invalid_tool_arguments_give_parse_error(server, make_request, collect):
    calls = [
        ("call_ok", "read", '{"path": "x"}}'),  # stray closer: repaired
        ("call_bad", "read", '{"path": "x", "limit": '),  # cut after a colon: not guessed
    ]
    server.enqueue(ScriptedResponse.sse(openai_tool_call_events(calls, pieces=3)))
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    ok, bad = events[-1].partial.tool_calls
    assert ok.arguments == {"path": "x"} and ok.parse_error is None
    assert bad.arguments == {}
    assert bad.parse_error is not None
    assert "invalid JSON" in bad.parse_error and "read" in bad.parse_error
    assert events[-1].type == "done"


def test_tool_calls_without_index_and_finish_stop(server, make_request, collect):
    """Some compatible servers send whole calls without ``index`` and finish "stop"."""
    events_ = [
        sse_data(
            openai_chunk(
                {
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "read", "arguments": '{"path":"a"}'}}
                    ]
                }
            )
        ),
        sse_data(
            openai_chunk(
                {
                    "tool_calls": [
                        {"id": "c2", "function": {"name": "read", "arguments": '{"path":"b"}'}}
                    ]
                }
            )
        ),
        sse_data(openai_chunk({}, finish_reason="stop")),
        sse_data("[DONE]"),
    ]
    server.enqueue(ScriptedResponse.sse(events_))
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    final = events[-1].partial
    assert [c.arguments for c in final.tool_calls] == [{"path": "a"}, {"path": "b"}]
    assert final.stop_reason == "toolUse"


def test_length_finish_and_no_done_marker(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["cut"], finish_reason="length", done=False)))
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    assert events[-1].type == "done"
    assert events[-1].partial.stop_reason == "length"


def test_error_chunk_in_stream(server, make_request, collect):
    body = [
        sse_data(openai_chunk({"content": "par"})),
        sse_data({"error": {"message": "upstream model crashed", "type": "server_error"}}),
    ]
    server.enqueue(ScriptedResponse.sse(body))
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    final = events[-1].partial
    assert events[-1].type == "error"
    assert final.stop_reason == "error"
    assert "upstream model crashed" in (final.error_message or "")
    assert final.text == "par"
    assert len(server.requests) == 1


def test_content_filter_is_an_error(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["no"], finish_reason="content_filter")))
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    assert events[-1].type == "error"
    assert "content_filter" in (events[-1].partial.error_message or "")


def test_context_overflow_from_error_text(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            kind="invalid_request_error",
        )
    )
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    final = events[-1].partial
    assert final.stop_reason == "error"
    assert final.context_overflow is True
    assert final.error_message is not None and final.error_message.startswith("HTTP 400: ")
    assert "maximum context length" in final.error_message
    assert len(server.requests) == 1


def test_context_overflow_from_usage(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["ok"], usage=(5000, 5, 0))))
    events = collect(
        OpenAICompletionsProvider(), make_request(model_for(server, context_window=4096))
    )
    assert events[-1].type == "done"
    assert events[-1].partial.context_overflow is True


def test_missing_api_key_names_the_variable(server, make_request, collect, monkeypatch):
    monkeypatch.delenv("HARNESSC_TEST_KEY")
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    final = events[-1].partial
    assert final.stop_reason == "error"
    assert "set HARNESSC_TEST_KEY" in (final.error_message or "")
    assert server.requests == []


def test_local_server_without_key_env_needs_no_key(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["hi"])))
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server, api_key_env=None)))
    assert events[-1].type == "done"
    assert "authorization" not in server.requests[0].headers


def test_metadata_needs_compat_switch(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.sse(openai_events(["a"])), ScriptedResponse.sse(openai_events(["b"]))
    )
    provider = OpenAICompletionsProvider()
    collect(provider, make_request(model_for(server), metadata={"user_id": "u1"}))
    model = model_for(server, compat={"supports_metadata": True})
    collect(provider, make_request(model, metadata={"user_id": "u1", "run": 3}))
    first, second = (r.json for r in server.requests)
    assert "metadata" not in first
    assert second["metadata"] == {"user_id": "u1", "run": "3"}
    assert second["store"] is True


def test_repeated_call_ids_each_keep_their_result(server, make_request, collect):
    history = [
        UserMessage("twice"),
        AssistantMessage(
            content=[
                ToolCall("dup", "read", {"path": "a"}),
                ToolCall("dup", "read", {"path": "b"}),
            ],
            stop_reason="toolUse",
        ),
        ToolResultMessage("dup", "read", [TextContent("A")]),
        ToolResultMessage("dup", "read", [TextContent("B")]),
    ]
    server.enqueue(ScriptedResponse.sse(openai_events(["ok"])))
    collect(OpenAICompletionsProvider(), make_request(model_for(server), history))
    tool_messages = [m for m in server.requests[0].json["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["A", "B"]

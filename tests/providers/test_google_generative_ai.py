from __future__ import annotations

from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from harnessc.runtime.core.options import Model, ThinkingLevel
from harnessc.runtime.providers.google_generative_ai import GoogleGenerativeAIProvider
from harnessc.testing import ProtocolServer, ScriptedResponse, google_chunk, google_events, sse_data

from .conftest import API_KEY, READ_TOOL


def model_for(server: ProtocolServer, **fields: object) -> Model:
    base = {
        "id": "gemini-test",
        "api": "google-generative-ai",
        "base_url": server.url + "/v1beta",
        "api_key_env": "HARNESSC_TEST_KEY",
        "max_tokens": 2048,
    }
    base.update(fields)
    return Model(**base)  # type: ignore[arg-type]


def test_thoughts_text_calls_and_usage(server, make_request, collect, event_types):
    body = google_events(
        ["The answer ", "is here."],
        thoughts=["Thinking..."],
        calls=[("read", {"path": "a.md"}), ("read", {"path": "b.md"})],
        usage=(120, 30, 12, 100),
    )
    server.enqueue(ScriptedResponse.sse(body))
    model = model_for(server, reasoning=True)
    events = collect(
        GoogleGenerativeAIProvider(),
        make_request(model, tools=[READ_TOOL], thinking=ThinkingLevel.LOW),
    )
    assert event_types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    final = events[-1].partial
    assert final.text == "The answer is here."
    calls = final.tool_calls
    assert [c.arguments for c in calls] == [{"path": "a.md"}, {"path": "b.md"}]
    assert len({c.id for c in calls}) == 2
    assert final.stop_reason == "toolUse"
    usage = final.usage
    assert (usage.input, usage.cache_read, usage.output) == (20, 100, 42)

    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == API_KEY
    payload = request.json
    assert payload["systemInstruction"] == {"parts": [{"text": "You are terse."}]}
    assert payload["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
    assert payload["generationConfig"] == {
        "maxOutputTokens": 2048,
        "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": True},
    }
    declaration = payload["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "read"
    assert declaration["parametersJsonSchema"] == READ_TOOL.parameters


def test_history_mapping(server, make_request, collect):
    history = [
        UserMessage("go"),
        AssistantMessage(
            content=[
                ThinkingContent("t", thinking_signature="sig"),
                TextContent("ok"),
                ToolCall("c1", "read", {"path": "x"}),
            ],
            api="google-generative-ai",
            stop_reason="toolUse",
        ),
        ToolResultMessage("c1", "read", [TextContent("X")]),
    ]
    server.enqueue(ScriptedResponse.sse(google_events(["done"])))
    collect(GoogleGenerativeAIProvider(), make_request(model_for(server), history))
    assert server.requests[0].json["contents"] == [
        {"role": "user", "parts": [{"text": "go"}]},
        {
            "role": "model",
            "parts": [
                {"text": "t", "thought": True, "thoughtSignature": "sig"},
                {"text": "ok"},
                {"functionCall": {"name": "read", "args": {"path": "x"}}},
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "read", "response": {"output": "X"}}}],
        },
    ]


def test_max_tokens_and_safety(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.sse(google_events(["cut"], finish_reason="MAX_TOKENS")),
        ScriptedResponse.sse(google_events(["bad"], finish_reason="SAFETY")),
    )
    provider = GoogleGenerativeAIProvider()
    first = collect(provider, make_request(model_for(server)))
    assert first[-1].type == "done" and first[-1].partial.stop_reason == "length"
    second = collect(provider, make_request(model_for(server)))
    assert second[-1].type == "error"
    assert "SAFETY" in (second[-1].partial.error_message or "")


def test_google_error_body_retried(server, make_request, collect):
    error = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted",
            "status": "RESOURCE_EXHAUSTED",
        }
    }
    server.enqueue(
        ScriptedResponse.json_body(429, error, headers={"retry-after": "0"}),
        ScriptedResponse.sse(google_events(["ok"])),
    )
    events = collect(GoogleGenerativeAIProvider(), make_request(model_for(server)))
    assert events[-1].type == "done" and events[-1].partial.text == "ok"
    assert len(server.requests) == 2


def test_stream_without_finish_reason_is_incomplete(server, make_request, collect):
    body = [sse_data(google_chunk([{"text": "half"}]), crlf=True)]
    server.enqueue(ScriptedResponse.sse(body))
    events = collect(GoogleGenerativeAIProvider(), make_request(model_for(server)))
    assert events[-1].type == "error"
    assert "ended before" in (events[-1].partial.error_message or "")


def test_error_frames_in_the_stream(server, make_request, collect):
    overloaded = {
        "error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}
    }
    invalid = {"error": {"code": 400, "message": "Bad thing", "status": "INVALID_ARGUMENT"}}
    server.enqueue(
        ScriptedResponse.sse([sse_data(overloaded)]),  # before any output: retried
        ScriptedResponse.sse(google_events(["ok"])),
        ScriptedResponse.sse([sse_data(invalid)]),  # a final status: reported at once
        ScriptedResponse.sse(google_events(["half"])[:1] + [sse_data(overloaded)]),
    )
    provider = GoogleGenerativeAIProvider()
    first = collect(provider, make_request(model_for(server)))
    assert first[-1].type == "done" and first[-1].partial.text == "ok"
    assert len(server.requests) == 2
    second = collect(provider, make_request(model_for(server)))
    assert second[-1].type == "error" and len(server.requests) == 3
    assert second[-1].partial.error_message == "HTTP 400: INVALID_ARGUMENT: Bad thing"
    third = collect(provider, make_request(model_for(server)))  # after output: never retried
    assert third[-1].type == "error" and len(server.requests) == 4
    assert third[-1].partial.text == "half"
    assert "The model is overloaded." in (third[-1].partial.error_message or "")

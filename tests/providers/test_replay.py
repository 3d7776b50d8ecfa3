from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from harnessc.runtime.core.options import Model
from harnessc.runtime.providers.replay import ReplayProvider, load_recorded_replies

MODEL = Model(id="gpt-test", api="openai-completions")

SESSION_LINES = [
    {
        "type": "session",
        "version": 3,
        "id": "3f1c2b9e-1111-4a2b-9c3d-000000000001",
        "timestamp": "2026-01-05T10:00:00.000Z",
        "cwd": "/work/demo",
    },
    {
        "type": "message",
        "id": "a0000001",
        "parentId": None,
        "timestamp": "2026-01-05T10:00:01.000Z",
        "message": {"role": "user", "content": "What is in notes.txt?", "timestamp": 1767607201000},
    },
    {
        "type": "message",
        "id": "a0000002",
        "parentId": "a0000001",
        "timestamp": "2026-01-05T10:00:02.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should read the file first."},
                {"type": "text", "text": "Let me read it."},
                {
                    "type": "toolCall",
                    "id": "call_read_1",
                    "name": "read",
                    "arguments": {"path": "notes.txt"},
                },
            ],
            "api": "openai-completions",
            "provider": "openai",
            "model": "gpt-test",
            "usage": {
                "input": 50,
                "output": 20,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 70,
            },
            "stopReason": "toolUse",
            "timestamp": 1767607202000,
        },
    },
    {
        "type": "message",
        "id": "a0000003",
        "parentId": "a0000002",
        "timestamp": "2026-01-05T10:00:03.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "call_read_1",
            "toolName": "read",
            "content": [{"type": "text", "text": "buy milk"}],
            "isError": False,
            "timestamp": 1767607203000,
        },
    },
    {
        "type": "custom",
        "id": "a0000004",
        "parentId": "a0000003",
        "timestamp": "2026-01-05T10:00:03.500Z",
        "customType": "ui-state",
        "data": {"collapsed": True},
    },
    {
        "type": "message",
        "id": "a0000005",
        "parentId": "a0000004",
        "timestamp": "2026-01-05T10:00:04.000Z",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "The file says: buy milk. That is the whole content of the note.",
                }
            ],
            "api": "openai-completions",
            "provider": "openai",
            "model": "gpt-test",
            "usage": {
                "input": 80,
                "output": 15,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 95,
            },
            "stopReason": "stop",
            "timestamp": 1767607204000,
        },
    },
]


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "2026-01-05T10-00-00_3f1c2b9e.jsonl"
    text = "\n".join(json.dumps(line) for line in SESSION_LINES) + "\n"
    path.write_text(text + '{"type": "message", "id": "torn', encoding="utf-8")
    return path


def test_loads_assistant_messages_in_file_order(session_file):
    replies = load_recorded_replies(session_file)
    assert [r.stop_reason for r in replies] == ["toolUse", "stop"]
    assert replies[0].tool_calls[0].id == "call_read_1"


def test_replays_a_recorded_run(session_file, make_request, collect, event_types):
    provider = ReplayProvider.from_session_file(session_file, chunk_chars=10)
    prompt = UserMessage("What is in notes.txt?")

    first = collect(provider, make_request(MODEL, [prompt]))
    collapsed = [
        t for i, t in enumerate(event_types(first)) if i == 0 or t != event_types(first)[i - 1]
    ]
    assert collapsed == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    thinking = [e.delta for e in first if e.type == "thinking_delta"]
    assert len(thinking) > 1 and "".join(thinking) == "I should read the file first."
    reply = first[-1].partial
    assert reply.stop_reason == "toolUse"
    assert reply.tool_calls[0].arguments == {"path": "notes.txt"}
    assert "".join(e.delta for e in first if e.type == "text_delta") == "Let me read it."
    assert reply.usage.total_tokens == 70

    result = ToolResultMessage("call_read_1", "read", [TextContent("buy milk")])
    second = collect(provider, make_request(MODEL, [prompt, reply, result]))
    assert second[-1].type == "done"
    text_deltas = [e.delta for e in second if e.type == "text_delta"]
    assert len(text_deltas) > 3
    assert "".join(text_deltas) == second[-1].partial.text
    assert second[-1].partial.text.startswith("The file says: buy milk.")
    assert provider.remaining == 0

    third = collect(provider, make_request(MODEL, [prompt, reply, result, second[-1].partial]))
    final = third[-1].partial
    assert third[-1].type == "error"
    assert "request #3" in (final.error_message or "")
    assert "2 recorded replies" in (final.error_message or "")


def test_divergence_on_unknown_tool_result(session_file, make_request, collect):
    provider = ReplayProvider.from_session_file(session_file)
    first = collect(provider, make_request(MODEL))
    other = ToolResultMessage("call_other_9", "bash", [TextContent("?")])
    events = collect(provider, make_request(MODEL, [UserMessage("x"), first[-1].partial, other]))
    message = events[-1].partial.error_message or ""
    assert events[-1].type == "error"
    assert "reply #2 of 2" in message
    assert "'call_other_9'" in message and "call_read_1" in message
    assert provider.position == 1  # the failed request did not consume a reply


def test_tool_result_before_any_reply_diverges(make_request, collect):
    provider = ReplayProvider([AssistantMessage(content=[TextContent("hi")])])
    stray = ToolResultMessage("call_1", "read", [TextContent("x")])
    events = collect(provider, make_request(MODEL, [UserMessage("x"), stray]))
    assert "no earlier reply" in (events[-1].partial.error_message or "")


def test_from_list_and_abort(make_request, collect):
    replies = [
        AssistantMessage(
            content=[TextContent("a"), ToolCall("c1", "read", {"path": "p"})], stop_reason="toolUse"
        ),
        AssistantMessage(content=[TextContent("b")]),
    ]
    provider = ReplayProvider(replies)
    request = make_request(MODEL)
    request.signal.abort()
    events = collect(provider, request)
    assert events[-1].partial.stop_reason == "aborted"
    # the recording itself is never mutated
    assert replies[0].content[0] == TextContent("a")

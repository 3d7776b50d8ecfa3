"""A malformed chunk is skipped with a warning and never throws away a good reply; usage
is advisory; a certificate variable naming what cannot be read is named in the error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, AgentHarnessStreamOptions, Model
from harnessc.runtime.core.events import NoticeEvent
from harnessc.runtime.providers.pool import ProviderPool
from harnessc.testing import (
    AnthropicBlock,
    ProtocolServer,
    ScriptedResponse,
    anthropic_event,
    anthropic_events,
    google_events,
    openai_chunk,
    openai_events,
    sse_data,
)

from .conftest import Collect, MakeRequest

OPENAI_ODD = [
    b'data: {"choices":[null]}\n\n',
    b'data: {"choices":"nope"}\n\n',
    b'data: {"choices":[{"delta":"text?"}]}\n\n',
    b'data: {"choices":[{"delta":{"content":5}}]}\n\n',
    b'data: {"choices":[{"delta":{"tool_calls":[null, 3]}}]}\n\n',
    b'data: {"choices":[{"delta":{},"finish_reason":{"x":1}}]}\n\n',
    b'data: {"usage":"lots"}\n\n',
]


def _openai(server: ProtocolServer) -> Model:
    return Model(id="m", api="openai-completions", base_url=server.url + "/v1")


def _warnings(request: Any) -> list[str]:
    seen: list[str] = []

    async def warn(text: str) -> None:
        seen.append(text)

    request.on_warning = warn
    return seen


def test_odd_openai_chunks_are_skipped_and_the_reply_kept(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
) -> None:
    events = openai_events(["good ", "reply"])
    server.enqueue(ScriptedResponse.sse([events[0], *OPENAI_ODD, *events[1:]]))
    request = make_request(_openai(server), max_retries=0)
    seen = _warnings(request)
    final = collect(ProviderPool().get("openai-completions"), request)[-1]
    assert final.type == "done", final.partial.error_message
    assert final.partial.text == "good reply"
    assert any("a choice that is not an object (None)" in text for text in seen), seen
    assert any("content that is not a string" in text for text in seen), seen


def test_a_usage_chunk_that_is_not_numbers_keeps_the_complete_reply_with_a_warning(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
) -> None:
    events = openai_events(["complete"], usage=None, done=False)
    usage = {"prompt_tokens": "lots", "completion_tokens": 3}
    bad = sse_data(openai_chunk(choices=False, usage=usage))
    server.enqueue(ScriptedResponse.sse([*events, bad, sse_data("[DONE]")]))
    request = make_request(_openai(server), max_retries=0)
    seen = _warnings(request)
    final = collect(ProviderPool().get("openai-completions"), request)[-1]
    assert final.type == "done", final.partial.error_message
    assert final.partial.text == "complete"
    assert final.partial.usage.output == 3
    assert seen == [
        "the provider's usage report gives prompt_tokens as 'lots', not a token count; "
        "the reply is kept, its token counts may be wrong"
    ]


def test_odd_anthropic_events_are_skipped_and_the_reply_kept(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
) -> None:
    events = anthropic_events([AnthropicBlock("text", ["kept ", "text"])])
    odd = [
        b"event: ping\ndata: [1, 2]\n\n",
        anthropic_event("message_start", message="x"),
        anthropic_event("content_block_delta", index=0, delta=None),
        anthropic_event("content_block_delta", index=0, delta={"type": "text_delta", "text": 5}),
        anthropic_event("message_delta", delta={"stop_reason": ["x"]}, usage={"input_tokens": "a"}),
    ]
    server.enqueue(ScriptedResponse.sse([*events[:4], *odd, *events[4:]]))
    model = Model(id="m", api="anthropic-messages", base_url=server.url)
    request = make_request(model, max_retries=0)
    seen = _warnings(request)
    final = collect(ProviderPool().get("anthropic-messages"), request)[-1]
    assert final.type == "done", final.partial.error_message
    assert final.partial.text == "kept text"
    assert any("input_tokens as 'a'" in text for text in seen), seen


def test_odd_google_chunks_are_skipped_and_the_reply_kept(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
) -> None:
    events = google_events(["gemini ", "text"])
    odd = [
        sse_data({"candidates": [None]}, crlf=True),
        sse_data({"candidates": "x"}, crlf=True),
        sse_data({"candidates": [{"content": {"parts": [None, {"text": 7}]}}]}, crlf=True),
        sse_data({"candidates": [{"content": "x", "finishReason": {"a": 1}}]}, crlf=True),
        sse_data({"promptFeedback": "x", "usageMetadata": {"promptTokenCount": "lots"}}),
    ]
    server.enqueue(ScriptedResponse.sse([events[0], *odd, *events[1:]]))
    model = Model(id="m", api="google-generative-ai", base_url=server.url + "/v1beta")
    request = make_request(model, max_retries=0)
    seen = _warnings(request)
    final = collect(ProviderPool().get("google-generative-ai"), request)[-1]
    assert final.type == "done", final.partial.error_message
    assert final.partial.text == "gemini text"
    assert any("promptTokenCount as 'lots'" in text for text in seen), seen


def test_the_harness_reports_a_skipped_chunk_as_a_warning_notice(server: ProtocolServer) -> None:
    events = openai_events(["fine"])
    server.enqueue(ScriptedResponse.sse([events[0], b'data: {"choices":[null]}\n\n', *events[1:]]))
    harness = AgentHarness(
        AgentHarnessOptions(
            models={"main": _openai(server)},
            stream_options=AgentHarnessStreamOptions(max_retries=0),
        )
    )
    notices: list[NoticeEvent] = []
    harness.subscribe(
        lambda event: notices.append(event) if isinstance(event, NoticeEvent) else None
    )
    result = asyncio.run(harness.prompt("hi"))
    assert result.status == "done" and result.text == "fine"
    assert [(n.source, n.level) for n in notices] == [("provider", "warning")]
    assert "a choice that is not an object" in notices[0].message


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
def test_a_certificate_variable_naming_nothing_is_named_in_the_error(
    variable: str,
    server: ProtocolServer,
    make_request: MakeRequest,
    collect: Collect,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    from harnessc.runtime.providers import clients

    missing = str(tmp_path / "no-such-ca.pem")
    monkeypatch.setenv(variable, missing)
    monkeypatch.delenv("SSL_CERT_FILE" if variable == "SSL_CERT_DIR" else "SSL_CERT_DIR", False)
    clients._ssl_context.cache_clear()
    try:
        model = Model(id="m", api="openai-completions", base_url="https://127.0.0.1:9/v1")
        final = collect(ProviderPool().get("openai-completions"), make_request(model))[-1]
    finally:
        clients._ssl_context.cache_clear()
    message = final.partial.error_message or ""
    assert final.type == "error" and f"{variable} names {missing!r}" in message, message
    assert "FileNotFoundError" not in message

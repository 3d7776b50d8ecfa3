"""Retries, timeouts, abort, headers and callbacks of the shared HTTP driver."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from email.utils import formatdate
from typing import Any

import pytest

from harnessc.runtime.core.options import Model
from harnessc.runtime.providers.base import AssistantMessageEvent, ProviderRetry
from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events
from tests.timing import scaled

from .conftest import API_KEY, check_well_formed


def model_for(server: ProtocolServer, **fields: object) -> Model:
    base = {
        "id": "test-model",
        "api": "openai-completions",
        "base_url": server.url + "/v1",
        "api_key_env": "HARNESSC_TEST_KEY",
    }
    base.update(fields)
    return Model(**base)  # type: ignore[arg-type]


def record_retries(request: Any) -> list[ProviderRetry]:
    seen: list[ProviderRetry] = []

    async def on_retry(retry: ProviderRetry) -> None:
        seen.append(retry)

    request.on_retry = on_retry
    return seen


def test_429_with_retry_after_then_success(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.error(429, "Rate limit reached", headers={"Retry-After": "0"}),
        ScriptedResponse.error(429, "Rate limit reached", headers={"retry-after-ms": "3"}),
        ScriptedResponse.sse(openai_events(["finally"])),
    )
    request = make_request(model_for(server), retry_delay_ms=60_000)  # backoff: a minute
    retries = record_retries(request)
    started = time.monotonic()
    events = collect(OpenAICompletionsProvider(), request)
    assert time.monotonic() - started < scaled(2)
    assert events[-1].type == "done" and events[-1].partial.text == "finally"
    assert [(r.attempt, r.status, r.delay_ms) for r in retries] == [(1, 429, 0), (2, 429, 3)]
    assert all(r.max_retries == 2 for r in retries)
    assert "Rate limit reached" in retries[0].error
    assert len(server.requests) == 3


def test_retry_after_http_date_and_cap(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.error(
            503, "busy", headers={"Retry-After": formatdate(time.time() - 5, usegmt=True)}
        ),
        ScriptedResponse.error(503, "busy", headers={"Retry-After": "120"}),
        ScriptedResponse.sse(openai_events(["ok"])),
    )
    request = make_request(model_for(server), max_retry_delay_ms=7)
    retries = record_retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    assert events[-1].type == "done"
    assert [r.delay_ms for r in retries] == [0, 7]


def test_500_then_success_uses_backoff(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.error(500, "internal"),
        ScriptedResponse.error(502, "bad gateway"),
        ScriptedResponse.sse(openai_events(["ok"])),
    )
    request = make_request(model_for(server), retry_delay_ms=4)
    retries = record_retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    assert events[-1].type == "done"
    assert [(r.status, r.delay_ms) for r in retries] == [(500, 4), (502, 8)]


def test_400_is_not_retried(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.error(400, "Invalid 'messages': empty", kind="invalid_request_error")
    )
    request = make_request(model_for(server))
    retries = record_retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    final = events[-1].partial
    assert final.stop_reason == "error"
    assert final.error_message == (
        "HTTP 400: invalid_request_error: Invalid 'messages': empty "
        "(check the model id 'test-model' and the request options)"
    )
    assert final.context_overflow is False
    assert retries == [] and len(server.requests) == 1


def test_retries_exhausted(server, make_request, collect):
    for _ in range(3):
        server.enqueue(ScriptedResponse.error(503, "overloaded"))
    request = make_request(model_for(server), max_retries=2)
    events = collect(OpenAICompletionsProvider(), request)
    final = events[-1].partial
    assert final.error_message == "HTTP 503: error: overloaded (after 3 attempts)"
    assert len(server.requests) == 3


def test_drop_after_output_is_not_retried(server, make_request, collect):
    body = openai_events(["one ", "two ", "three"])
    server.enqueue(
        ScriptedResponse.sse(body, drop_after=3), ScriptedResponse.sse(openai_events(["x"]))
    )
    request = make_request(model_for(server))
    retries = record_retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    final = events[-1].partial
    assert events[-1].type == "error"
    assert final.stop_reason == "error"
    assert final.text == "one two "
    assert "connection" in (final.error_message or "") or "ended before" in (
        final.error_message or ""
    )
    assert retries == [] and len(server.requests) == 1


def test_drop_before_output_is_retried(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.sse(openai_events(["lost"]), drop_after=0),
        ScriptedResponse.sse(openai_events(["kept"])),
    )
    request = make_request(model_for(server))
    retries = record_retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    assert events[-1].type == "done" and events[-1].partial.text == "kept"
    assert len(retries) == 1 and retries[0].status is None
    assert len(server.requests) == 2


def test_malformed_sse_lines_are_ignored(server, make_request, collect):
    body = openai_events(["a", "b"])
    body.insert(1, b"this line is not SSE at all\n: a comment\nretry: 100\n\n")
    server.enqueue(ScriptedResponse.sse(body))
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    assert events[-1].type == "done" and events[-1].partial.text == "ab"


def test_invalid_json_data_is_an_error(server, make_request, collect):
    body = openai_events(["a", "b"])
    body.insert(2, b"data: {not json\n\n")
    server.enqueue(ScriptedResponse.sse(body))
    events = collect(OpenAICompletionsProvider(), make_request(model_for(server)))
    final = events[-1].partial
    assert events[-1].type == "error"
    assert "invalid JSON in the event stream" in (final.error_message or "")
    assert final.text == "a"


def test_slow_server_hits_timeout(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["late"]), delay_s=1.5))
    request = make_request(model_for(server), timeout_ms=150, max_retries=0)
    started = time.monotonic()
    events = collect(OpenAICompletionsProvider(), request)
    assert time.monotonic() - started < scaled(1.2)
    final = events[-1].partial
    assert final.stop_reason == "error"
    assert "timed out after 150 ms" in (final.error_message or "")


def test_stall_between_chunks_hits_timeout(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["a", "b", "c"]), chunk_delay_s=0.6))
    request = make_request(model_for(server), timeout_ms=200, max_retries=0)
    events = collect(OpenAICompletionsProvider(), request)
    assert "timed out" in (events[-1].partial.error_message or "")


def test_headers_merged_and_key_redacted(server, make_request, collect):
    echo = f"Incorrect API key provided: {API_KEY}. You can find your API key at ..."
    server.enqueue(ScriptedResponse.error(401, echo, kind="invalid_request_error"))
    model = model_for(server, headers={"X-Team": "core", "X-Override": "model", "User-Agent": "m"})
    request = make_request(model, headers={"x-override": "options", "X-Extra": "1"})
    events = collect(OpenAICompletionsProvider(), request)
    headers = server.requests[0].headers
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers["x-team"] == "core"
    assert headers["x-override"] == "options"
    assert headers["x-extra"] == "1"
    assert headers["user-agent"] == "m"
    assert headers["content-type"] == "application/json"
    message = events[-1].partial.error_message or ""
    assert message.startswith("HTTP 401: ")
    assert API_KEY not in message and "[redacted]" in message
    assert API_KEY not in repr(events[-1].partial.to_dict())


def test_payload_hook_and_response_callback(server, make_request, collect):
    server.enqueue(ScriptedResponse.sse(openai_events(["ok"]), headers={"x-request-id": "req-1"}))
    responses: list[tuple[int, dict[str, str]]] = []

    async def on_payload(payload: dict[str, Any]) -> dict[str, Any]:
        changed = dict(payload)
        changed["temperature"] = 0.25
        changed["messages"] = payload["messages"] + [{"role": "user", "content": "added"}]
        return changed

    async def on_response(status: int, headers: dict[str, str]) -> None:
        responses.append((status, headers))

    request = make_request(model_for(server))
    request.on_payload = on_payload
    request.on_response = on_response
    events = collect(OpenAICompletionsProvider(), request)
    assert events[-1].type == "done"
    body = server.requests[0].json
    assert body["temperature"] == 0.25
    assert body["messages"][-1] == {"role": "user", "content": "added"}
    assert [status for status, _ in responses] == [200]
    assert responses[0][1]["x-request-id"] == "req-1"


def test_response_callback_sees_every_attempt(server, make_request, collect):
    server.enqueue(ScriptedResponse.error(500, "x"), ScriptedResponse.sse(openai_events(["ok"])))
    statuses: list[int] = []

    async def on_response(status: int, headers: dict[str, str]) -> None:
        statuses.append(status)

    request = make_request(model_for(server))
    request.on_response = on_response
    collect(OpenAICompletionsProvider(), request)
    assert statuses == [500, 200]


def test_abort_mid_stream(server, make_request):
    pieces = [f"w{i} " for i in range(1200)]
    server.enqueue(ScriptedResponse.sse(openai_events(pieces), chunk_delay_s=0.05))
    request = make_request(model_for(server))
    provider = OpenAICompletionsProvider()

    async def run() -> list[AssistantMessageEvent]:
        events = []
        async for event in provider.stream(request):
            events.append(event)
            if sum(e.type == "text_delta" for e in events) == 3:
                request.signal.abort()
        return events

    started = time.monotonic()
    events = asyncio.run(run())
    assert time.monotonic() - started < scaled(1.5)  # the full stream would take a minute
    check_well_formed(events)
    final = events[-1].partial
    assert events[-1].type == "error"
    assert final.stop_reason == "aborted"
    assert final.text == "w0 w1 w2 "


def test_abort_from_another_thread_while_waiting(server, make_request):
    server.enqueue(ScriptedResponse.sse(openai_events(["late"]), delay_s=30.0))
    request = make_request(model_for(server))
    threading.Timer(0.2, request.signal.abort).start()

    async def run() -> list[AssistantMessageEvent]:
        return [event async for event in OpenAICompletionsProvider().stream(request)]

    started = time.monotonic()
    events = asyncio.run(run())
    assert time.monotonic() - started < scaled(1.5)
    check_well_formed(events)
    assert events[-1].partial.stop_reason == "aborted"


def test_abort_during_backoff(server, make_request):
    server.enqueue(ScriptedResponse.error(429, "slow down", headers={"retry-after": "30"}))
    request = make_request(model_for(server))

    async def on_retry(retry: ProviderRetry) -> None:
        asyncio.get_running_loop().call_later(0.1, request.signal.abort)

    request.on_retry = on_retry

    async def run() -> list[AssistantMessageEvent]:
        return [event async for event in OpenAICompletionsProvider().stream(request)]

    started = time.monotonic()
    events = asyncio.run(run())
    assert time.monotonic() - started < scaled(2)
    assert events[-1].partial.stop_reason == "aborted"
    assert len(server.requests) == 1


def test_already_aborted_signal(server, make_request, collect):
    request = make_request(model_for(server))
    request.signal.abort("user pressed escape")
    events = collect(OpenAICompletionsProvider(), request)
    assert events[-1].partial.stop_reason == "aborted"
    assert events[-1].partial.error_message == "user pressed escape"
    assert server.requests == []


def test_connection_refused_fails_fast_with_a_hint(make_request, collect):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = Model(id="m", api="openai-completions", base_url=f"http://127.0.0.1:{port}/v1")
    request = make_request(model, max_retries=2, retry_delay_ms=2000)
    retries = record_retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    final = events[-1].partial
    assert final.stop_reason == "error"
    assert final.error_message == (
        f"connection refused (http://127.0.0.1:{port}/v1/chat/completions): "
        f"is the server running at http://127.0.0.1:{port}?"
    )
    assert "All connection attempts failed" not in final.error_message
    assert retries == []


def test_connection_is_reused_across_requests(server, make_request):
    server.enqueue(*(ScriptedResponse.sse(openai_events(["ok"])) for _ in range(3)))
    provider = OpenAICompletionsProvider()

    async def run() -> None:
        for _ in range(3):
            async for _event in provider.stream(make_request(model_for(server))):
                pass
        await provider.aclose()

    asyncio.run(run())
    ports = {r.client_port for r in server.requests}
    assert len(server.requests) == 3 and len(ports) == 1


def test_provider_instance_survives_a_new_event_loop(server, make_request, collect):
    server.enqueue(
        ScriptedResponse.sse(openai_events(["one"])), ScriptedResponse.sse(openai_events(["two"]))
    )
    provider = OpenAICompletionsProvider()
    assert collect(provider, make_request(model_for(server)))[-1].partial.text == "one"
    assert collect(provider, make_request(model_for(server)))[-1].partial.text == "two"


def test_consumer_breaking_early_closes_the_exchange(server, make_request):
    server.enqueue(
        # a minute of stream: only closing the exchange ends it sooner
        ScriptedResponse.sse(openai_events([f"{i}" for i in range(3000)]), chunk_delay_s=0.02)
    )
    provider = OpenAICompletionsProvider()

    async def run() -> None:
        stream = provider.stream(make_request(model_for(server)))
        async for event in stream:
            if event.type == "text_delta":
                break
        await stream.aclose()  # type: ignore[attr-defined]
        await provider.aclose()

    started = time.monotonic()
    asyncio.run(run())
    assert time.monotonic() - started < scaled(1.0)


def test_bad_base_url_is_not_retried(make_request, collect):
    model = Model(id="m", api="openai-completions", base_url="localhost:9/v1")
    request = make_request(model, max_retries=3, retry_delay_ms=2000)
    retries = record_retries(request)
    started = time.monotonic()
    events = collect(OpenAICompletionsProvider(), request)
    assert time.monotonic() - started < scaled(1)
    assert retries == []
    assert (events[-1].partial.error_message or "").startswith("invalid base_url")


def test_payload_hook_returning_garbage(server, make_request, collect):
    async def on_payload(payload: Any) -> Any:
        return {"not": {1, 2}}

    request = make_request(model_for(server))
    request.on_payload = on_payload
    events = collect(OpenAICompletionsProvider(), request)
    assert "not valid JSON" in (events[-1].partial.error_message or "")
    assert server.requests == []


@pytest.mark.parametrize(
    "header",
    [
        ("Retry-After", "inf"),
        ("Retry-After", "-inf"),
        ("Retry-After", "NaN"),
        ("Retry-After", "-3"),
        ("retry-after-ms", "1e400"),
        ("retry-after-ms", "nan"),
        ("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"),
    ],
)
def test_a_retry_after_past_any_number_is_capped_and_retried(header, server, make_request, collect):
    server.enqueue(
        ScriptedResponse.error(429, "slow down", headers=dict([header])),
        ScriptedResponse.sse(openai_events(["after the wait"])),
    )
    request = make_request(model_for(server), max_retry_delay_ms=5, retry_delay_ms=1)
    retries = record_retries(request)
    events = collect(OpenAICompletionsProvider(), request)
    assert events[-1].type == "done", events[-1].partial.error_message
    assert events[-1].partial.text == "after the wait"
    assert len(retries) == 1 and 0 <= retries[0].delay_ms <= 5

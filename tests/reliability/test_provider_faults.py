"""Provider faults against a real local server: every run recovers or ends with a
readable error, the session file stays valid, and the next prompt works."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harnessc.testing import (
    AnthropicBlock,
    ProtocolServer,
    ScriptedResponse,
    anthropic_events,
    google_events,
    openai_chunk,
    openai_events,
    openai_tool_call_events,
    sse_data,
)
from tests.timing import scaled

from ._kit import (
    SENTINEL,
    StallingServer,
    add_tool,
    assert_session_valid,
    make_agent,
    message_roles,
)


def ok(text: str = "fine") -> ScriptedResponse:
    return ScriptedResponse.sse(openai_events([text]))


def status(code: int, **headers: str) -> ScriptedResponse:
    return ScriptedResponse.error(code, f"scripted {code}", kind="server_error", headers=headers)


@dataclass
class Fault:
    responses: list[ScriptedResponse]
    outcome: str  # "done" | "error"
    says: str = ""  # a readable fragment of the error / final text
    retries: int = 0  # RetryEvents expected
    options: dict[str, object] = field(default_factory=dict)


def _no_final_event() -> ScriptedResponse:
    events = [sse_data(openai_chunk({"role": "assistant", "content": ""}))]
    events += [sse_data(openai_chunk({"content": "half a repl"}))]
    return ScriptedResponse.sse(events)  # neither finish_reason nor [DONE]


FAULTS: dict[str, Fault] = {
    "429-retry-after": Fault(
        [status(429, **{"Retry-After": "0"}), ok("after 429")], "done", "after 429", 1
    ),
    "429-retry-after-capped": Fault(
        # the server asks for 30 s; max_retry_delay_ms caps the wait
        [status(429, **{"Retry-After": "30"}), ok("capped")],
        "done",
        "capped",
        1,
    ),
    "500": Fault([status(500), ok("after 500")], "done", "after 500", 1),
    "502": Fault([status(502), ok("after 502")], "done", "after 502", 1),
    "503-twice": Fault([status(503), status(503), ok("after 503")], "done", "after 503", 2),
    "503-exhausted": Fault(
        [status(503), status(503), status(503)], "error", "HTTP 503: server_error: scripted 503", 2
    ),
    "400-not-retried": Fault([status(400)], "error", "HTTP 400", 0),
    "reset-before-body": Fault(
        [ScriptedResponse.sse(openai_events(["x"]), drop_after=0), ok("after reset")],
        "done",
        "after reset",
        1,
    ),
    "reset-mid-stream": Fault(
        [ScriptedResponse.sse(openai_events(["par", "tial", "more"]), drop_after=3)],
        "error",
        "connection lost",
    ),
    "stream-without-final-event": Fault(
        [_no_final_event()], "error", "the stream ended before the reply was complete"
    ),
    "empty-200-body": Fault(
        [ScriptedResponse.sse([]), ok("after empty body")], "done", "after empty body", 1
    ),
    "malformed-sse-json": Fault(
        [ScriptedResponse.sse([b"data: {not json\n\n"])],
        "error",
        "invalid JSON in the event stream",
    ),
    "malformed-sse-garbage": Fault(
        [
            ScriptedResponse.sse(
                [b"\x00\xff garbage without a field\n", b"::\n\n", b"data\n\n"]
                + openai_events(["ok"])
            )
        ],
        "done",
        "ok",
    ),
    "malformed-usage-type": Fault(
        [
            ScriptedResponse.sse(
                openai_events(["u"], usage=None, done=False)
                + [sse_data(openai_chunk(usage={"prompt_tokens": "many"}, choices=False))]
                + [sse_data("[DONE]")]
            )
        ],
        "done",  # usage is advisory: the reply is kept, with a warning
        "u",
    ),
    "error-frame-in-stream": Fault(
        [ScriptedResponse.sse([sse_data({"error": {"message": "overloaded"}})]), ok("then fine")],
        "done",
        "then fine",
        1,
    ),
    "empty-reply": Fault([ScriptedResponse.sse(openai_events([]))], "done", ""),
    "slow-head-past-timeout": Fault(
        [ScriptedResponse.sse(openai_events(["late"]), delay_s=1.0), ok("in time")],
        "done",
        "in time",
        1,
        {"timeout_ms": 300},
    ),
    "slow-head-every-attempt": Fault(
        [ScriptedResponse.sse(openai_events(["late"]), delay_s=1.0)] * 3,
        "error",
        "request timed out after 300 ms",
        2,
        {"timeout_ms": 300},
    ),
}


def _final(result) -> str:
    return result.reason if result.status == "error" else result.text


@pytest.mark.parametrize("name", list(FAULTS))
def test_provider_fault(name: str, fresh_server: ProtocolServer, tmp_path: Path) -> None:
    fault = FAULTS[name]
    fresh_server.enqueue(*fault.responses)
    harness, log = make_agent(
        fresh_server.url + "/v1", tmp_path / "sessions", tools=[add_tool()], **fault.options
    )

    async def go():
        started = time.monotonic()
        first = await harness.prompt("hello")
        elapsed = time.monotonic() - started
        fresh_server.enqueue(ok("second answer"))
        second = await harness.prompt("again")
        return first, elapsed, second

    first, elapsed, second = asyncio.run(go())
    assert first.status == fault.outcome, (first.status, first.reason)
    assert fault.says in _final(first)
    if first.status == "error":
        reason = first.reason
        assert reason and "Traceback" not in reason and len(reason) < 3000
        assert SENTINEL not in reason
    assert elapsed < scaled(5.0), f"{name} took {elapsed:.1f} s"
    retries = [e for e in log if e.type == "retry"]
    assert len(retries) == fault.retries, [e.to_dict() for e in retries]
    assert second.status == "done" and second.text == "second answer"

    path = harness.session.path
    harness.session.close()
    lines = assert_session_valid(path)
    roles = message_roles(lines)
    assert roles[0] == "user" and roles[-2:] == ["user", "assistant"]
    assert roles.count("user") == 2
    for line in lines:
        message = line.get("message") or {}
        if message.get("role") == "assistant" and message.get("stopReason") == "error":
            assert message.get("errorMessage")


def test_stream_that_stalls_mid_reply_times_out(
    fresh_server: ProtocolServer, tmp_path: Path
) -> None:
    first = b"".join(openai_events(["the start of a reply"], done=False)[:2])
    stalling = StallingServer(first)
    try:
        harness, log = make_agent(stalling.url + "/v1", tmp_path / "s", timeout_ms=300)
        started = time.monotonic()
        result = asyncio.run(harness.prompt("hello"))
        elapsed = time.monotonic() - started
    finally:
        stalling.close()
    assert result.status == "error" and "timed out after 300 ms" in result.reason, result.reason
    assert elapsed < scaled(2.0)
    # content had streamed, so the request is not retried after it (the user saw a
    # partial reply); a head a loaded machine read after 300 ms is retried before it
    types = [e.type for e in log]
    assert "message_update" in types, types
    assert "retry" not in types[types.index("message_update") :], types
    harness.model.base_url = fresh_server.url + "/v1"
    fresh_server.enqueue(ok("next"))
    assert asyncio.run(harness.prompt("next")).text == "next"
    path = harness.session.path
    harness.session.close()
    lines = assert_session_valid(path)
    errored = [x["message"] for x in lines if x.get("message", {}).get("stopReason") == "error"]
    assert errored and errored[0]["content"][0]["text"] == "the start of a reply"


def test_retry_after_cap_is_the_delay(fresh_server: ProtocolServer, tmp_path: Path) -> None:
    fresh_server.enqueue(status(429, **{"Retry-After": "30"}), ok())
    harness, log = make_agent(fresh_server.url + "/v1", tmp_path / "s", max_retry_delay_ms=150)
    result = asyncio.run(harness.prompt("hi"))
    assert result.status == "done"
    (retry,) = [e for e in log if e.type == "retry"]
    assert retry.delay_ms == 150 and retry.status == 429


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_then_next_prompt(fresh_server: ProtocolServer, tmp_path: Path) -> None:
    port = _closed_port()
    harness, log = make_agent(f"http://127.0.0.1:{port}/v1", tmp_path / "s")
    first = asyncio.run(harness.prompt("hello"))
    assert first.status == "error"
    # refused is not retried (it will not pass by itself) and says what to check
    assert first.reason.startswith("connection refused") and "is the server running" in first.reason
    assert "attempts" not in first.reason
    # the server comes back (same agent, model pointed at the live server)
    harness.model.base_url = fresh_server.url + "/v1"
    fresh_server.enqueue(ok("back"))
    second = asyncio.run(harness.prompt("again"))
    assert second.status == "done" and second.text == "back"
    path = harness.session.path
    harness.session.close()
    assert message_roles(assert_session_valid(path)) == ["user", "assistant", "user", "assistant"]


TOOL_FAULTS = {
    "invalid-json-arguments": ([("call_1", "add", '{"a": 1, "b": ')], "not valid JSON"),
    "unknown-tool": ([("call_1", "does_not_exist", '{"x": 1}')], "Tool does_not_exist not found"),
    "wrong-argument-types": ([("call_1", "add", '{"a": "one", "b": null}')], "Validation failed"),
    "arguments-not-an-object": ([("call_1", "add", "[1, 2]")], "add"),
    "duplicate-call-ids": (
        [("call_1", "add", '{"a": 1, "b": 2}'), ("call_1", "add", '{"a": 3, "b": 4}')],
        "",
    ),
}


@pytest.mark.parametrize("name", list(TOOL_FAULTS))
def test_bad_tool_call_is_answered_and_run_continues(
    name: str, fresh_server: ProtocolServer, tmp_path: Path
) -> None:
    calls, says = TOOL_FAULTS[name]
    fresh_server.enqueue(
        ScriptedResponse.sse(openai_tool_call_events(calls)), ok("recovered"), ok("next")
    )
    harness, log = make_agent(fresh_server.url + "/v1", tmp_path / "s", tools=[add_tool()])

    async def go():
        return await harness.prompt("use a tool"), await harness.prompt("next")

    first, second = asyncio.run(go())
    assert first.status == "done" and first.text == "recovered", first.reason
    assert second.status == "done" and second.text == "next"
    results = [e.result for e in log if e.type == "tool_execution_end"]
    assert len(results) == len(calls)
    if says:
        assert results[0].is_error and says in results[0].content[0].text
    # the model saw a tool result for every call it made
    second_request = fresh_server.requests[1].json
    tool_messages = [m for m in second_request["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == len(calls)
    path = harness.session.path
    harness.session.close()
    assert_session_valid(path)


def test_abort_during_slow_stream(fresh_server: ProtocolServer, tmp_path: Path) -> None:
    fresh_server.enqueue(
        ScriptedResponse.sse(openai_events(["a", "b", "c", "d"]), chunk_delay_s=2.0), ok("next")
    )
    harness, _ = make_agent(fresh_server.url + "/v1", tmp_path / "s", timeout_ms=10_000)

    async def go():
        task = asyncio.create_task(harness.prompt("slow"))
        fresh_server.wait_for_requests(1, 2.0)
        await asyncio.sleep(0.3)
        started = time.monotonic()
        harness.abort()
        result = await task
        return result, time.monotonic() - started, await harness.prompt("next")

    result, latency, second = asyncio.run(go())
    assert result.status == "aborted"
    assert latency < scaled(1.0)
    assert second.status == "done" and second.text == "next"
    path = harness.session.path
    harness.session.close()
    assert_session_valid(path)


# -- the same faults on the Anthropic and Gemini wire APIs ---------------------------


def _api_model(api: str, url: str) -> dict[str, object]:
    if api == "anthropic-messages":
        return {"id": "claude-test", "api": api, "base_url": url, "max_tokens": 1024}
    return {"id": "gemini-test", "api": api, "base_url": url + "/v1beta", "max_tokens": 1024}


def _reply(api: str, text: str) -> list[bytes]:
    if api == "anthropic-messages":
        return anthropic_events([AnthropicBlock("text", [text])])
    return google_events([text])


def _call(api: str, name: str, raw_args: str) -> list[bytes]:
    if api == "anthropic-messages":
        return anthropic_events(
            [AnthropicBlock("tool_use", [raw_args], id="toolu_1", name=name)],
            stop_reason="tool_use",
        )
    return google_events(calls=[(name, json.loads(raw_args))])


def _faults(api: str) -> dict[str, tuple[list[ScriptedResponse], str, str]]:
    whole = _reply(api, "whole")
    truncated = whole[:-2] if api == "anthropic-messages" else whole[:-1]
    out = {
        "429-then-ok": (
            [status(429, **{"retry-after": "0"}), ScriptedResponse.sse(whole)],
            "done",
            "whole",
        ),
        "overloaded-then-ok": (
            [status(529 if api == "anthropic-messages" else 503), ScriptedResponse.sse(whole)],
            "done",
            "whole",
        ),
        "no-final-event": (
            [ScriptedResponse.sse(truncated)],
            "error",
            "ended before the reply was complete",
        ),
        "malformed-json": (
            [ScriptedResponse.sse(whole[:1] + [b"data: {broken\n\n"] + whole[1:])],
            "error",
            "invalid JSON",
        ),
        "reset-mid-stream": (
            [ScriptedResponse.sse(whole, drop_after=4 if api == "anthropic-messages" else 1)],
            "error",
            "connection lost",
        ),
        "unknown-tool": (
            [ScriptedResponse.sse(_call(api, "nope", '{"x": 1}')), ScriptedResponse.sse(whole)],
            "done",
            "whole",
        ),
    }
    if api == "anthropic-messages":
        out["bad-tool-json"] = (
            [ScriptedResponse.sse(_call(api, "add", '{"a": 1,')), ScriptedResponse.sse(whole)],
            "done",
            "whole",
        )
    return out


API_FAULTS = [
    (api, name) for api in ("anthropic-messages", "google-generative-ai") for name in _faults(api)
]


@pytest.mark.parametrize(("api", "name"), API_FAULTS)
def test_other_wire_apis(api: str, name: str, fresh_server: ProtocolServer, tmp_path: Path) -> None:
    responses, outcome, says = _faults(api)[name]
    fresh_server.enqueue(*responses)
    harness, _ = make_agent(fresh_server.url, tmp_path / "s", tools=[add_tool()])
    model = harness.model
    for key, value in _api_model(api, fresh_server.url).items():
        setattr(model, key, value)

    async def go():
        first = await harness.prompt("hello")
        fresh_server.enqueue(ScriptedResponse.sse(_reply(api, "second answer")))
        return first, await harness.prompt("again")

    first, second = asyncio.run(go())
    assert first.status == outcome, (first.status, first.reason)
    assert says in _final(first)
    assert SENTINEL not in first.reason
    assert second.status == "done" and second.text == "second answer", second.reason
    path = harness.session.path
    harness.session.close()
    assert_session_valid(path)

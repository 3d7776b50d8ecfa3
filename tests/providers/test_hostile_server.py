"""Every hostile server behaviour ends in time, in bounded memory, with a valid reply
or a readable error (issue 15: items 1-5, 12, 13, 15; issue 17 item 7)."""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, AgentHarnessStreamOptions, Model
from harnessc.runtime.core.messages import AssistantMessage, ToolCall, UserMessage
from harnessc.runtime.core.options import RetryOptions
from harnessc.runtime.providers.base import Context, ProviderRequest
from harnessc.runtime.providers.pool import ProviderPool
from harnessc.runtime.tools.base import Tool, ToolResult, text_result
from harnessc.testing.hostile import MODES, HostileServer
from tests.timing import scaled

TIMEOUT_MS = 1000
PEAK_MB = 64  # tracemalloc peak of one provider call, whatever the server sends


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileServer]:
    with HostileServer() as server:
        yield server


@dataclass
class Case:
    outcome: str  # "done" | "error"
    says: str  # in the final text (done) or the error message (error)
    check: Callable[[AssistantMessage], None] | None = None
    api: str = "openai-completions"
    deadline_s: float | None = None
    max_retries: int = 0


def _calls(message: AssistantMessage) -> list[ToolCall]:
    return [c for c in message.content if isinstance(c, ToolCall)]


def _two_calls(message: AssistantMessage) -> None:
    assert [c.arguments for c in _calls(message)] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def _cut_name(message: AssistantMessage) -> None:
    (call,) = _calls(message)
    assert len(call.name) < 400 and call.name.startswith("nnnn")


def _overloaded(message: AssistantMessage) -> None:
    assert (message.error_message or "").endswith(": model 'm' is overloaded, try later")


def _too_deep(message: AssistantMessage) -> None:
    (call,) = _calls(message)
    assert call.arguments == {} and "nest deeper than 100 levels" in (call.parse_error or "")


def _long_text(message: AssistantMessage) -> None:
    assert len(message.text) == 4096 * 1024


CASES: dict[str, Case] = {
    "ok": Case("done", "fine"),
    "keepalive-after-done": Case("done", "complete"),
    "open-after-done": Case("done", "complete"),
    "anthropic-open-after-stop": Case("done", "stopped", api="anthropic-messages"),
    "finished-left-open": Case("done", "finished"),
    "google-left-open": Case("done", "gemini", api="google-generative-ai"),
    "google-left-open-late": Case("done", "gemini", api="google-generative-ai"),
    "keepalives-only": Case("error", "without reply data (the server sent only keepalives)"),
    "endless-text": Case("error", "time budget ran out", deadline_s=1.5),
    "slow-drip": Case("error", f"timed out after {TIMEOUT_MS} ms without reply data"),
    "stall-before-head": Case("error", f"request timed out after {TIMEOUT_MS} ms"),
    "trickled-head": Case("error", f"timed out after {TIMEOUT_MS} ms waiting for the response"),
    "endless-processing": Case(
        "error", f"timed out after {TIMEOUT_MS} ms waiting for the response"
    ),
    "huge-line": Case("error", "a line longer than the limit of 8,388,608 characters"),
    "huge-chunks": Case("done", "yyyy", _long_text),
    "gzip-bomb": Case("error", "longer than the limit of 8,388,608 characters"),
    # 1 GB of comment lines: the size cap, or (on a loaded machine) the idle limit
    "gzip-bomb-lines": Case("error", "decoded to more than the limit of 64 MiB|only keepalives"),
    "broken-sse": Case("done", "survived"),
    "bom-cr-only": Case("done", "cr only"),
    "html-200": Case("error", "HTTP 200 without an event stream (content-type text/html)"),
    "json-error-200": Case("error", "HTTP 200 with an error from http://", _overloaded),
    "non-streamed": Case("error", "without an event stream (content-type application/json)"),
    "redirect-307": Case("error", "HTTP 307: the server redirects to http://127.0.0.1:9/elsewhere"),
    "html-501": Case("error", "HTTP 501: 501 Not Implemented", max_retries=2),
    "non-utf8": Case("done", "caf\ufffd \ufffd"),
    "split-surrogate": Case("done", "smile \U0001f600!"),
    "lone-surrogate": Case("done", "bad \ufffd byte"),
    "tool-calls-unindexed": Case("done", "", _two_calls),
    "tool-name-1mb": Case("done", "", _cut_name),
    "deep-arguments": Case("done", "", _too_deep),
    # aiohttp reports an invalid chunk size at once, or (now and then, when the bad bytes
    # come in a read of their own) only as a stall: an error either way, never a hang
    "bad-chunking": Case("error", "connection lost|timed out"),
    "close-at-once": Case("error", "connection lost"),
}


def test_every_mode_has_a_case():
    assert set(CASES) == set(MODES)


def _base(server: HostileServer, mode: str, api: str) -> str:
    return server.url_for(mode) + ("/v1" if api == "openai-completions" else "")


@pytest.mark.parametrize("mode", sorted(CASES))
def test_provider_call_against_hostile_server(hostile: HostileServer, mode: str) -> None:
    case = CASES[mode]
    model = Model(id="m", api=case.api, base_url=_base(hostile, mode, case.api))
    before = len([p for p, _ in hostile.requests if p.startswith(f"/{mode}/")])

    async def run() -> tuple[list[str], AssistantMessage]:
        pool = ProviderPool()
        request = ProviderRequest(
            model=model,
            context=Context("", [UserMessage("go")]),
            stream_options=AgentHarnessStreamOptions(
                timeout_ms=TIMEOUT_MS, max_retries=case.max_retries
            ),
            retry=RetryOptions(base_delay_ms=1, jitter=0.0),
            deadline=time.monotonic() + case.deadline_s if case.deadline_s else None,
        )
        types: list[str] = []
        final = None
        async for event in pool.get(case.api).stream(request):
            types.append(event.type)
            final = event.partial
        await pool.aclose()
        assert final is not None
        return types, final

    tracemalloc.start()
    started = time.monotonic()
    try:
        types, final = asyncio.run(run())
        elapsed = time.monotonic() - started
        peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    limit = scaled((case.deadline_s or TIMEOUT_MS / 1000) + 1)
    assert elapsed <= limit, f"{mode}: {elapsed:.2f} s > {limit} s"
    assert peak_mb < PEAK_MB, f"{mode}: peak {peak_mb:.1f} MB"
    assert types[0] == "start" and types[-1] in ("done", "error")
    assert isinstance(final, AssistantMessage)
    json.dumps(final.to_dict()).encode("utf-8")  # storable: no lone surrogates left
    if case.outcome == "done":
        assert types[-1] == "done", final.error_message
        assert case.says in final.text
    else:
        assert types[-1] == "error" and final.stop_reason == "error"
        message = final.error_message or ""
        assert any(says in message for says in case.says.split("|")), message
        assert len(message) < 1500 and "Traceback" not in message
    if case.check is not None:
        case.check(final)
    served = len([p for p, _ in hostile.requests if p.startswith(f"/{mode}/")]) - before
    if mode == "html-501":
        assert served == 1  # 501 is never retried


# -- through the harness: the session stays valid and the next prompt works ----------


async def _add(call_id: str, params: dict[str, Any], *rest: Any) -> ToolResult:
    return text_result(str(params["a"] + params["b"]))


ADD = Tool(
    "add",
    "Add two integers.",
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    _add,
)

HARNESS_MODES = [
    "keepalive-after-done",
    "split-surrogate",
    "lone-surrogate",
    "non-utf8",
    "tool-calls-unindexed",
    "tool-name-1mb",
    "deep-arguments",
    "json-error-200",
    "html-501",
    "keepalives-only",
]


# What the model reads back, per mode (the reply with its calls is recorded first).
SESSION_RESULTS = {
    "tool-calls-unindexed": ["3", "7"],  # two calls, not one merged call
    "deep-arguments": ["nest deeper than 100 levels"],
    "tool-name-1mb": ["not found"],
}


@pytest.mark.parametrize("mode", HARNESS_MODES)
def test_session_survives_hostile_server(hostile: HostileServer, mode: str, tmp_path: Path):
    from harnessc.runtime.session import JsonlSessionRepo

    repo = JsonlSessionRepo(tmp_path / "sessions")
    session = repo.create(cwd=str(tmp_path))
    model = Model(
        id="m", api="openai-completions", base_url=_base(hostile, mode, "openai-completions")
    )
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models={"main": model},
            tools=[ADD],
            stream_options=AgentHarnessStreamOptions(timeout_ms=TIMEOUT_MS, max_retries=0),
            retry=RetryOptions(base_delay_ms=1, jitter=0.0),
        )
    )

    async def run() -> tuple[Any, Any]:
        first = await harness.prompt("hostile")
        harness.model.base_url = _base(hostile, "ok", "openai-completions")
        second = await harness.prompt("and now?")
        await harness.close()
        return first, second

    started = time.monotonic()
    first, second = asyncio.run(run())
    assert time.monotonic() - started < scaled(2 * (TIMEOUT_MS / 1000 + 1))
    assert first.status in ("done", "error")
    if first.status == "error":
        assert first.reason and "Traceback" not in first.reason
    assert second.status == "done" and second.text == "fine"
    for answer in (first.text or "", second.text or ""):
        answer.encode("utf-8")  # printable: no lone surrogates reach stdout
    lines = [json.loads(line) for line in Path(session.path).read_text("utf-8").splitlines()]
    assert lines[0]["type"] == "session"
    reopened = repo.open(str(session.path), read_only=True)
    try:
        assert reopened.diagnostics == []
        reopened.context()
        stored = json.dumps(lines)
        assert "n" * 1000 not in stored  # a 1 MB tool name is cut before it is stored
    finally:
        reopened.close()
    results = [
        "".join(part.get("text", "") for part in line["message"]["content"])
        for line in lines
        if line.get("type") == "message" and line["message"]["role"] == "toolResult"
    ]
    if mode in SESSION_RESULTS:
        wanted = SESSION_RESULTS[mode]
        assert len(results) == len(wanted), results
        assert all(want in got for want, got in zip(wanted, results, strict=True)), results


def test_a_reply_left_open_ends_well_after_a_stall_of_the_loop(hostile: HostileServer) -> None:
    """A finished reply the server leaves open ends by the idle timer. When the loop
    stalls past that timer while the reply's bytes come (blocked from 0.1 s to 1.6 s;
    the body sent at 0.3 s; the timer due at about 1 s), both are due at once: the
    bytes are read first, and the reply ends as done, not as timed out."""
    mode = "google-left-open-late"
    case = CASES[mode]
    model = Model(id="m", api=case.api, base_url=_base(hostile, mode, case.api))

    async def run() -> list[str]:
        pool = ProviderPool()
        request = ProviderRequest(
            model=model,
            context=Context("", [UserMessage("go")]),
            stream_options=AgentHarnessStreamOptions(timeout_ms=TIMEOUT_MS, max_retries=0),
        )
        asyncio.get_running_loop().call_later(0.1, time.sleep, 1.5)  # the loop stalls
        types = [event.type async for event in pool.get(case.api).stream(request)]
        await pool.aclose()
        return types

    types = asyncio.run(run())
    assert types[0] == "start" and types[-1] == "done", types

"""Model fallback against two real local model servers: the first fails, the run
finishes on the second (another wire API), with events, session records, cooldown and
budget."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model
from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.model_options import ModelCost, RetryOptions
from harnessc.runtime.core.options import AgentHarnessStreamOptions
from harnessc.runtime.providers.fallback import ModelFallback
from harnessc.runtime.session import Session
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import AnthropicBlock, anthropic_events, openai_events


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ProtocolServer, ProtocolServer]]:
    with ProtocolServer() as first, ProtocolServer() as second:
        yield first, second


@pytest.fixture(autouse=True)
def _fresh(servers) -> None:
    for server in servers:
        server.reset()


def _models(first_url: str, second_url: str) -> dict[str, Model]:
    return {
        "main": Model(
            id="main-model",
            api="openai-completions",
            provider="openai",
            base_url=first_url + "/v1",
            cost=ModelCost(input=1.0, output=2.0),
        ),
        "backup": Model(
            id="backup-model",
            api="anthropic-messages",
            provider="anthropic",
            base_url=second_url,
            cost=ModelCost(input=10.0, output=20.0),
        ),
    }


def _harness(models, fallback, *, timeout_ms: int | None = None, budget=None) -> AgentHarness:
    return AgentHarness(
        AgentHarnessOptions(
            session=Session(),
            models=models,
            model="main",
            fallback=fallback,
            stream_options=AgentHarnessStreamOptions(max_retries=1, timeout_ms=timeout_ms),
            retry=RetryOptions(base_delay_ms=1, jitter=0.0),
            budget=budget,
            system_prompt="You are a test agent.",
        )
    )


def _backup_reply(text: str = "from backup") -> ScriptedResponse:
    return ScriptedResponse.sse(
        anthropic_events([AnthropicBlock("text", [text])], usage=(100, 10, 0, 0))
    )


def _main_reply(text: str = "from main") -> ScriptedResponse:
    return ScriptedResponse.sse(openai_events([text], usage=(100, 10, 0)))


async def _prompt(harness: AgentHarness, text: str = "hello"):
    log = EventLog()
    harness.subscribe(log)
    try:
        result = await harness.prompt(text)
    finally:
        await harness.close()
    return result, log


def _model_changes(session: Session) -> list[tuple[str, str]]:
    return [
        (e.data["provider"], e.data["modelId"])
        for e in session.entries()
        if e.type == "model_change"
    ]


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        (
            ScriptedResponse.error(429, "Rate limit reached", headers={"retry-after": "0"}),
            "rate_limit",
        ),
        (ScriptedResponse.error(529, "Overloaded", kind="overloaded_error"), "overloaded"),
        (ScriptedResponse.error(500, "internal error"), "server_error"),
    ],
)
def test_failure_after_retries_moves_the_run_to_the_next_model(servers, failure, kind):
    first, second = servers
    first.enqueue(failure, failure)  # the first try and its one retry
    second.enqueue(_backup_reply())
    harness = _harness(_models(first.url, second.url), ModelFallback(["backup"]))
    session = harness.session
    result, log = asyncio.run(_prompt(harness))

    assert result.status == "done" and result.text == "from backup"
    assert len(first.requests) == 2 and len(second.requests) == 1
    # the same request, converted to the Anthropic Messages API
    body = second.requests[0].json
    assert body["model"] == "backup-model" and body["system"][0]["text"].startswith("You are")
    assert body["messages"][0]["content"][0]["text"] == "hello"
    [event] = [e for e in log if e.type == "model_fallback"]
    assert (event.from_model, event.to_model, event.reason) == ("main", "backup", kind)
    assert "HTTP" in event.error
    # the failed attempt is not in the conversation; one message_start per reply
    assert [e.type for e in log].count("message_start") == 2  # the user's and the reply
    assert _model_changes(session)[-1] == ("anthropic", "backup-model")
    assert harness.model_key() == "backup"


def test_stall_and_refused_connection_fall_back(servers):
    first, second = servers
    first.enqueue(*(ScriptedResponse.sse(openai_events(["late"]), delay_s=3.0),) * 2)
    second.enqueue(_backup_reply("after the stall"))
    stalled = _harness(_models(first.url, second.url), ModelFallback(["backup"]), timeout_ms=200)
    result, log = asyncio.run(_prompt(stalled))
    assert result.text == "after the stall"
    assert [e.reason for e in log if e.type == "model_fallback"] == ["timeout"]

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    second.enqueue(_backup_reply("after the refusal"))
    refused = _harness(_models(closed, second.url), ModelFallback(["backup"]))
    result, log = asyncio.run(_prompt(refused))
    assert result.text == "after the refusal"
    assert [e.reason for e in log if e.type == "model_fallback"] == ["connection"]


@pytest.mark.parametrize("status", [400, 401])
def test_no_fallback_on_bad_request_or_auth(servers, status):
    first, second = servers
    first.enqueue(ScriptedResponse.error(status, "no"))
    harness = _harness(_models(first.url, second.url), ModelFallback(["backup"]))
    result, log = asyncio.run(_prompt(harness))
    assert f"HTTP {status}" in (harness.messages[-1].error_message or "")
    assert second.requests == []
    assert not [e for e in log if e.type == "model_fallback"]


def test_not_listed_kind_does_not_fall_back(servers):
    first, second = servers
    first.enqueue(*(ScriptedResponse.error(500, "boom"),) * 2)
    harness = _harness(
        _models(first.url, second.url), ModelFallback(["backup"], on=("rate_limit",))
    )
    asyncio.run(_prompt(harness))
    assert second.requests == []


def test_cooldown_keeps_the_failed_model_out_then_it_is_tried_again(servers):
    first, second = servers
    now = [1000.0]
    fallback = ModelFallback(["backup"], cooldown_s=60, clock=lambda: now[0])
    models = _models(first.url, second.url)
    session = Session()
    first.enqueue(*(ScriptedResponse.error(429, "slow down", headers={"retry-after": "0"}),) * 2)
    second.enqueue(_backup_reply("one"), _backup_reply("two"))
    h = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models=models,
            model="main",
            fallback=fallback,
            stream_options=AgentHarnessStreamOptions(max_retries=1),
            retry=RetryOptions(base_delay_ms=1, jitter=0.0),
        )
    )

    async def scenario():
        try:
            first_result = await h.prompt("one")
            now[0] += 30  # still cooling: straight to the backup
            second_result = await h.prompt("two")
            now[0] += 31  # the cooldown has passed: the chosen model again
            first.enqueue(_main_reply("main is back"))
            third = await h.prompt("three")
        finally:
            await h.close()
        return first_result, second_result, third

    one, two, three = asyncio.run(scenario())
    assert (one.text, two.text, three.text) == ("one", "two", "main is back")
    assert len(first.requests) == 3 and len(second.requests) == 2
    assert h.model_key() == "main"
    assert _model_changes(session)[-2:] == [
        ("anthropic", "backup-model"),
        ("openai", "main-model"),
    ]


def test_budget_counts_each_model_at_its_prices(servers):
    first, second = servers
    first.enqueue(_main_reply("first turn"))
    first.enqueue(*(ScriptedResponse.error(503, "busy"),) * 2)
    second.enqueue(_backup_reply("second turn"))
    harness = _harness(
        _models(first.url, second.url), ModelFallback(["backup"]), budget=Budget(cost_usd=100.0)
    )
    spent: list[tuple[int | None, float | None]] = []

    async def scenario():
        try:
            for text in ("one", "two"):  # a run's budget counts that run
                await harness.prompt(text)
                usage = harness.budget.usage
                spent.append((usage.tokens, usage.cost_usd))
        finally:
            await harness.close()

    asyncio.run(scenario())
    # 100 in + 10 out at main's prices, then (after the failed tries) at the backup's
    assert spent[0] == (110, pytest.approx((100 * 1.0 + 10 * 2.0) / 1e6))
    assert spent[1] == (110, pytest.approx((100 * 10.0 + 10 * 20.0) / 1e6))


def test_model_command_still_picks_the_first(servers):
    first, second = servers
    first.enqueue(*(ScriptedResponse.error(429, "x", headers={"retry-after": "0"}),) * 2)
    second.enqueue(_backup_reply("b"))
    harness = _harness(_models(first.url, second.url), ModelFallback(["backup"], cooldown_s=0))

    async def scenario():
        try:
            await harness.prompt("one")
            assert harness.model_key() == "backup"
            await harness.set_model("main")  # /model main
            first.enqueue(_main_reply("main again"))
            return await harness.prompt("two")
        finally:
            await harness.close()

    result = asyncio.run(scenario())
    assert result.text == "main again"

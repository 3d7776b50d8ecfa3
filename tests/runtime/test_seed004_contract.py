"""The seed-004 loop contract end to end: topics, pull points, blocked steps, budgets."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessc.runtime import (
    AgentHarness,
    AgentHarnessOptions,
    Budget,
    EventLog,
    Model,
    Usage,
)
from harnessc.runtime.core.events import EVENT_ALIASES
from harnessc.runtime.core.hooks import SEED_004_TOPICS
from harnessc.runtime.core.messages import Cost
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_tool_calls
from harnessc.runtime.tools.base import ExternalTool, Tool, text_result
from tests.timing import scaled

MODELS = {"main": Model(id="scripted-1", api="scripted", provider="test")}
OBJ = {"type": "object", "properties": {}}
DOTTED = [name for name in EVENT_ALIASES if "." in name]


async def _noop(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
    return text_result("ok")


async def _slow(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
    await asyncio.sleep(0.3)
    return text_result("slow ok")


def tools() -> list[Any]:
    return [
        Tool("noop", "No-op.", OBJ, _noop),
        Tool("slow", "Slow.", OBJ, _slow),
        ExternalTool("approve", "Approval.", OBJ),
    ]


def make(replies: Any, **options: Any) -> tuple[AgentHarness, EventLog, list[str]]:
    provider = replies if isinstance(replies, ScriptedProvider) else ScriptedProvider(replies)
    harness = AgentHarness(
        AgentHarnessOptions(models=MODELS, tools=tools(), provider=provider, **options)
    )
    log = EventLog()
    harness.subscribe(log)
    fired: list[str] = []
    for topic in (*SEED_004_TOPICS, *DOTTED):
        harness.on(topic, lambda e, t=topic: fired.append(t))
    return harness, log, fired


def test_linear_run_fires_topics_and_dotted_events_in_contract_order() -> None:
    harness, _, fired = make([reply_tool_calls([("noop", {}, "c1")]), "done"])
    result = harness.prompt_sync("go")
    assert (result.status, result.reason) == ("done", "goal_met")
    assert fired == [
        "before_plan",
        "session.start",
        "step.start",
        "before_step",
        "plan.draft",
        "after_plan",
        "plan.commit",
        "tool.call",
        "before_tool_call",
        "after_tool_call",
        "tool.result",
        "after_step",
        "step.end",
        "step.start",
        "before_step",
        "plan.draft",
        "after_plan",
        "plan.commit",
        "after_step",
        "step.end",
        "on_complete",
        "session.complete",
    ]


def test_two_external_tool_steps_are_hooked_counted_and_resumed() -> None:
    harness, log, fired = make(
        [reply_tool_calls([("approve", {}, "a1")]), reply_tool_calls([("approve", {}, "a2")]), "ok"]
    )
    result = harness.prompt_sync("go")
    assert result.status == "awaiting_tool" and [c.id for c in result.pending_tool_calls] == ["a1"]
    assert fired.count("before_tool_call") == 1 and fired.count("tool.call") == 1
    assert fired[-2:] == ["on_pause", "session.pause"]
    result = harness.resume_sync({"a1": "yes"})
    assert result.status == "awaiting_tool" and [c.id for c in result.pending_tool_calls] == ["a2"]
    result = harness.resume_sync({"a2": "yes again"})
    assert result.status == "done"
    assert fired.count("before_tool_call") == 2
    assert fired.count("tool.call") == fired.count("tool.result") == 2
    assert harness.budget.usage.tool_calls == 2


def test_a_blocked_tool_step_becomes_a_recorded_error_and_the_run_goes_on() -> None:
    harness, log, fired = make([reply_tool_calls([("noop", {}, "c1")]), "recovered"])
    harness.on("before_tool_call", lambda e: {"block": True, "reason": "not allowed"})
    result = harness.prompt_sync("go")
    assert (result.status, result.reason) == ("done", "goal_met")
    assert "tool.error" in fired and "tool.result" not in fired
    [message] = [m for m in harness.messages if m.role == "toolResult"]
    assert message.is_error and "not allowed" in message.text
    assert harness.session.context().messages[-1].text == "recovered"


def test_the_ten_topics_all_fire() -> None:
    harness, _, fired = make(
        [reply_tool_calls([("noop", {}, "c1")]), reply_tool_calls([("noop", {}, "c2")])],
        budget=Budget(turns=1),
    )
    harness.on("after_tool_call", lambda e: (_ for _ in ()).throw(RuntimeError("boom")))
    assert harness.prompt_sync("go").reason == "budget_exceeded:turns"
    harness.set_budget(Budget())
    harness.options.provider = ScriptedProvider(["done"])
    assert harness.prompt_sync("again").status == "done"
    assert set(SEED_004_TOPICS) <= set(fired)


@pytest.mark.parametrize(
    ("budget", "limit"),
    [
        (Budget(turns=2), "turns"),
        (Budget(tool_calls=3), "tool_calls"),
        (Budget(tokens=250), "tokens"),
        (Budget(cost_usd=0.025), "cost_usd"),
        (Budget(wall_clock_s=0.2), "wall_clock_s"),
    ],
)
def test_each_budget_limit_pauses_with_its_reason(budget: Budget, limit: str) -> None:
    usage = Usage(input=50, output=50, total_tokens=100, cost=Cost(total=0.01))
    tool = "slow" if limit == "wall_clock_s" else "noop"
    replies = [
        reply_tool_calls([(tool, {}, f"c{i}a"), (tool, {}, f"c{i}b")], usage=usage)
        for i in range(6)
    ]
    harness, log, fired = make(replies, budget=budget, sequential_tools=True)
    result = harness.prompt_sync("go")
    assert (result.status, result.reason) == ("paused", f"budget_exceeded:{limit}")
    assert fired[-2:] == ["on_pause", "session.pause"]
    # the handler is asked first, then the hard warning is reported (a tool_calls limit
    # still runs the calls that fit before pausing)
    assert fired.index("on_budget_exceeded") < len(fired) - 1 - fired[::-1].index("budget.warn")
    hard = [e for e in log if e.type == "budget_warn" and e.level == "hard"]
    assert hard and hard[-1].limit == limit
    if limit in ("turns", "tool_calls"):
        assert getattr(harness.budget.usage, limit) == getattr(budget, limit)


def test_the_wall_clock_budget_stops_a_slow_stream() -> None:
    provider = ScriptedProvider(["x" * 400], chunk_size=1, delay_s=0.01)  # about 4 s
    harness, log, _ = make(provider, budget=Budget(wall_clock_s=0.3))
    result = asyncio.run(asyncio.wait_for(harness.prompt("go"), 3))
    assert (result.status, result.reason) == ("paused", "budget_exceeded:wall_clock_s")
    assert harness.budget.usage.wall_clock_s < scaled(1.5)


def test_same_inputs_give_the_same_event_types() -> None:
    def once() -> list[str]:
        harness, log, _ = make(
            [
                reply_tool_calls([("noop", {}, "c1"), ("noop", {}, "c2")]),
                reply_tool_calls([("approve", {}, "a1")]),
                "done",
            ]
        )
        assert harness.prompt_sync("go").status == "awaiting_tool"
        assert harness.resume_sync({"a1": "ok"}).status == "done"
        return [e.type for e in log]

    assert once() == once()

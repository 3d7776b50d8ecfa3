"""Regression tests for the loop defects of issue 13 (each failed on the old harness)."""

from __future__ import annotations

import asyncio
from pathlib import Path
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
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools.base import ExternalTool, Tool, ToolResult, text_result

MODELS = {"main": Model(id="scripted-1", api="scripted", provider="test")}
OBJ = {"type": "object", "properties": {}}


class Counter:
    """A local tool with a side effect we can count (across harnesses)."""

    def __init__(self, name: str = "bash") -> None:
        self.name = name
        self.runs = 0

    def tool(self) -> Tool:
        async def run(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
            self.runs += 1
            return text_result(f"{self.name} ran {self.runs}")

        return Tool(self.name, "Count.", OBJ, run)


def approve_tool() -> ExternalTool:
    return ExternalTool("approve", "Ask for approval.", OBJ)


def open_harness(
    path: str, provider: ScriptedProvider, tools: list[Any], **options: Any
) -> tuple[AgentHarness, EventLog]:
    session = JsonlSessionRepo(Path(path).parent.parent).open(path)
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session, models=MODELS, tools=tools, provider=provider, **options
        )
    )
    log = EventLog()
    harness.subscribe(log)
    return harness, log


def new_file_harness(
    tmp_path: Path, provider: ScriptedProvider, tools: list[Any], **options: Any
) -> tuple[AgentHarness, EventLog, str]:
    session = JsonlSessionRepo(tmp_path / "sessions").create(cwd=str(tmp_path))
    assert session.path is not None
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session, models=MODELS, tools=tools, provider=provider, **options
        )
    )
    log = EventLog()
    harness.subscribe(log)
    return harness, log, session.path


def make(replies: Any, tools: Any = (), **options: Any) -> tuple[AgentHarness, EventLog]:
    provider = replies if isinstance(replies, ScriptedProvider) else ScriptedProvider(replies)
    harness = AgentHarness(
        AgentHarnessOptions(models=MODELS, tools=list(tools), provider=provider, **options)
    )
    log = EventLog()
    harness.subscribe(log)
    return harness, log


def kinds(log: EventLog) -> list[str]:
    return [e.type for e in log if e.type not in ("message_update", "state_change")]


# 1 ---------------------------------------------------------------------------------


def test_1_budget_handler_with_too_small_limit_is_asked_once_and_the_run_pauses() -> None:
    counter = Counter("add")
    harness, _ = make(
        [reply_tool_calls([("add", {}), ("add", {})]), "done"],
        tools=[counter.tool()],
        budget=Budget(tool_calls=1),
    )
    asked: list[str] = []

    def extend(event: Any) -> Any:
        asked.append(event.limit)
        return None if len(asked) > 20 else Budget(tool_calls=1)  # the old loop never ends

    harness.on("on_budget_exceeded", extend)
    result = harness.prompt_sync("go")
    assert result.status == "paused" and result.reason == "budget_exceeded:tool_calls"
    assert asked == ["tool_calls"]
    assert counter.runs == 1


# 2 ---------------------------------------------------------------------------------


def test_2_turn_budget_holds_across_a_restart(tmp_path: Path) -> None:
    counter = Counter()
    replies = [reply_tool_calls([("bash", {})]) for _ in range(10)]
    provider = ScriptedProvider(replies)
    harness, _, path = new_file_harness(
        tmp_path, provider, [counter.tool()], budget=Budget(turns=3)
    )
    result = harness.prompt_sync("go")
    assert result.status == "paused" and result.reason == "budget_exceeded:turns"
    assert len(provider.requests) == 3 and counter.runs == 3
    asyncio.run(harness.close())
    for _ in range(2):  # every --continue without a larger budget pauses again at once
        again, log = open_harness(path, provider, [counter.tool()], budget=Budget(turns=3))
        assert again.budget.usage.turns == 3
        result = again.resume_sync()
        assert result.status == "paused" and result.reason == "budget_exceeded:turns"
        assert len(provider.requests) == 3 and counter.runs == 3
        assert "turn_end" not in kinds(log)
        asyncio.run(again.close())
    # raising the limit allows exactly one more turn, opened with turn_start
    again, log = open_harness(path, provider, [counter.tool()], budget=Budget(turns=3))
    result = again.resume_sync(budget=Budget(turns=4))
    assert result.reason == "budget_exceeded:turns"
    assert len(provider.requests) == 4
    starts = [e.turn for e in log if e.type == "turn_start"]
    ends = [e.turn for e in log if e.type == "turn_end"]
    assert starts == ends == [4]
    asyncio.run(again.close())


# 3 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [("approve", "bash"), ("bash", "approve")])
def test_3_local_result_before_a_pull_point_is_recorded_and_never_rerun(
    tmp_path: Path, order: tuple[str, str]
) -> None:
    counter = Counter()
    reply = reply_tool_calls([(name, {}, f"c_{name}") for name in order])
    provider = ScriptedProvider([reply, "done"])
    tools = [approve_tool(), counter.tool()]
    harness, _, path = new_file_harness(tmp_path, provider, tools)
    result = harness.prompt_sync("go")
    assert result.status == "awaiting_tool"
    assert [c.id for c in result.pending_tool_calls] == ["c_approve"]
    assert counter.runs == 1
    asyncio.run(harness.close())
    again, _ = open_harness(path, provider, [approve_tool(), counter.tool()])
    result = again.resume_sync({"c_approve": "yes"})
    assert result.status == "done"
    assert counter.runs == 1
    results = [m for m in again.messages if m.role == "toolResult"]
    assert [m.tool_call_id for m in results] == [f"c_{name}" for name in order]
    asyncio.run(again.close())


# 4 ---------------------------------------------------------------------------------


def test_4_external_calls_pass_tool_call_hooks_events_and_budget() -> None:
    harness, log = make([reply_tool_calls([("approve", {}, "c1")]), "done"], tools=[approve_tool()])
    seen: list[str] = []
    harness.on("before_tool_call", lambda e: seen.append(e.tool_name))
    result = harness.prompt_sync("go")
    assert result.status == "awaiting_tool"
    assert seen == ["approve"]
    assert "tool_execution_start" in kinds(log)
    assert harness.budget.usage.tool_calls == 1
    result = harness.resume_sync({"c1": "ok"})
    assert result.status == "done"
    assert harness.budget.usage.tool_calls == 1


def test_4_a_block_rule_refuses_an_external_call_and_the_run_goes_on() -> None:
    harness, _ = make([reply_tool_calls([("approve", {}, "c1")]), "done"], tools=[approve_tool()])
    harness.on("tool_call", lambda e: {"block": True, "reason": "no approvals today"})
    result = harness.prompt_sync("go")
    assert result.status == "done"
    tool_results = [m for m in harness.messages if m.role == "toolResult"]
    assert tool_results[0].is_error and "no approvals today" in tool_results[0].text


def test_4_external_calls_count_toward_the_tool_call_budget() -> None:
    harness, _ = make(
        [reply_tool_calls([("approve", {}, "c1")]), reply_tool_calls([("approve", {}, "c2")])],
        tools=[approve_tool()],
        budget=Budget(tool_calls=1),
    )
    assert harness.prompt_sync("go").status == "awaiting_tool"
    result = harness.resume_sync({"c1": "ok"})
    assert result.status == "paused" and result.reason == "budget_exceeded:tool_calls"


# 5 ---------------------------------------------------------------------------------


def test_5_navigate_tree_settles_a_paused_run(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [reply_tool_calls([("approve", {}, "c1")]), "fresh answer", "later"]
    )
    harness, _, path = new_file_harness(tmp_path, provider, [approve_tool()])
    first = harness.prompt_sync("first")
    assert first.status == "awaiting_tool"
    user_entry = next(e for e in harness.session.branch() if e.role == "user")
    asyncio.run(harness.navigate_tree(user_entry.parent_id))
    assert harness.pending_tool_calls == [] and harness.paused_reason is None
    with pytest.raises(RuntimeError):
        harness.resume_sync({"c1": "late"})
    assert harness.prompt_sync("again").status == "done"
    assert not any(m.role == "toolResult" for m in harness.messages)
    asyncio.run(harness.close())
    again, _ = open_harness(path, provider, [approve_tool()])
    assert again.paused_reason is None
    asyncio.run(again.close())


def test_5_a_cancelled_tree_move_keeps_the_run_paused(tmp_path: Path) -> None:
    provider = ScriptedProvider([reply_tool_calls([("approve", {}, "c1")]), "after approval"])
    harness, _, path = new_file_harness(tmp_path, provider, [approve_tool()])
    assert harness.prompt_sync("first").status == "awaiting_tool"
    harness.on("session_before_tree", lambda e: {"cancel": True})
    user_entry = next(e for e in harness.session.branch() if e.role == "user")
    asyncio.run(harness.navigate_tree(user_entry.parent_id))
    assert harness.paused_reason == "awaiting_tool"
    asyncio.run(harness.close())
    again, _ = open_harness(path, provider, [approve_tool()])
    assert [c.id for c in again.pending_tool_calls] == ["c1"]
    assert again.resume_sync({"c1": "yes"}).status == "done"
    asyncio.run(again.close())


# 6 ---------------------------------------------------------------------------------


def test_6_tool_updates_arrive_while_the_tool_runs() -> None:
    seen_update = asyncio.Event()

    async def slow(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        on_update(text_result("half way"))
        try:
            await asyncio.wait_for(seen_update.wait(), 2)
        except TimeoutError:
            return text_result("no progress shown")
        return text_result("progress shown")

    harness, log = make(
        [reply_tool_calls([("slow", {})]), "done"], tools=[Tool("slow", "", OBJ, slow)]
    )
    harness.subscribe(lambda e: seen_update.set() if e.type == "tool_execution_update" else None)
    harness.prompt_sync("go")
    result = next(m for m in harness.messages if m.role == "toolResult")
    assert result.text == "progress shown"


# 7 ---------------------------------------------------------------------------------


def test_7_parallel_batch_hooks_run_in_call_order() -> None:
    order: list[str] = []

    async def work(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        order.append(f"run {params['n']}")
        await asyncio.sleep(0.01 if params["n"] == "a" else 0)
        return text_result(params["n"])

    tool = Tool("work", "", {"type": "object", "properties": {"n": {"type": "string"}}}, work)
    harness, _ = make(
        [reply_tool_calls([("work", {"n": "a"}), ("work", {"n": "b"})]), "done"], tools=[tool]
    )

    async def before(event: Any) -> None:
        order.append(f"{event.input['n']} begin")
        await asyncio.sleep(0)
        order.append(f"{event.input['n']} end")

    async def after(event: Any) -> None:
        await asyncio.sleep(0)
        order.append(f"result {event.input['n']}")

    harness.on("tool_call", before)
    harness.on("tool_result", after)
    harness.prompt_sync("go")
    assert order[:4] == ["a begin", "a end", "b begin", "b end"]
    assert sorted(order[4:6]) == ["run a", "run b"]
    assert order[6:] == ["result a", "result b"]


# 8 ---------------------------------------------------------------------------------


def test_8_token_budget_counts_the_usage_total() -> None:
    usage = Usage(input=100, output=10, cache_read=1000, total_tokens=1110)
    harness, _ = make(
        [reply_tool_calls([("bash", {})], usage=usage), "done"],
        tools=[Counter().tool()],
        budget=Budget(tokens=500),
    )
    result = harness.prompt_sync("go")
    assert harness.budget.usage.tokens == 1110
    assert result.status == "paused" and result.reason == "budget_exceeded:tokens"


# 9 ---------------------------------------------------------------------------------


def test_9_abort_during_a_stream_reports_no_unstarted_calls() -> None:
    provider = ScriptedProvider(
        [reply_tool_calls([("bash", {"x": "y" * 50}), ("bash", {"x": "z" * 50})])],
        chunk_size=1,
        delay_s=0.002,
    )
    counter = Counter()
    harness, log = make(provider, tools=[counter.tool()])
    results: list[str] = []
    harness.on("tool_result", lambda e: results.append(e.tool_call_id))

    def watch(event: Any) -> None:
        if event.type == "message_update" and event.delta_type == "toolcall_delta":
            harness.abort()

    harness.subscribe(watch)
    result = harness.prompt_sync("go")
    assert result.status == "aborted"
    assert counter.runs == 0 and results == []
    started = {e.tool_call_id for e in log if e.type == "tool_execution_start"}
    ended = {e.tool_call_id for e in log if e.type == "tool_execution_end"}
    assert ended <= started


# 10 --------------------------------------------------------------------------------


def test_10_every_finish_has_a_reason() -> None:
    harness, log = make(["the answer"])
    result = harness.prompt_sync("go")
    assert result.status == "done" and result.reason == "goal_met"
    end = next(e for e in log if e.type == "agent_end")
    assert end.reason == "goal_met"
    empty = reply_text("")
    harness, _ = make([empty])
    assert harness.prompt_sync("go").reason == "no_plan"


def test_10_finish_reasons_of_terminating_tools_and_hooks() -> None:
    async def finish(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        return ToolResult(content=[], terminate=True)

    harness, _ = make([reply_tool_calls([("stop", {})])], tools=[Tool("stop", "", OBJ, finish)])
    assert harness.prompt_sync("go").reason == "tool_terminated"
    harness, _ = make([reply_tool_calls([("bash", {})])], tools=[Counter().tool()])
    harness.on("tool_result", lambda e: {"terminate": True})
    assert harness.prompt_sync("go").reason == "hook_terminated"


# 11 --------------------------------------------------------------------------------


def test_11_plan_commit_fires_for_a_text_reply() -> None:
    harness, log = make(["just text"])
    plans: list[int] = []
    harness.on("after_plan", lambda e: plans.append(len(e.tool_calls)))
    harness.prompt_sync("go")
    assert plans == [0]
    assert kinds(log).count("plan_commit") == 1


# 12 --------------------------------------------------------------------------------


def test_12_replay_rejects_transitions_that_do_not_chain() -> None:
    from harnessc.runtime.core.replay import ReplayError, replay_events

    events = [
        {"type": "state_change", "seq": 1, "from_state": "IDLE", "to_state": "PLANNING"},
        {"type": "state_change", "seq": 2, "from_state": "PLANNING", "to_state": "EXECUTING"},
        {"type": "state_change", "seq": 3, "from_state": "REFLECTING", "to_state": "DONE"},
    ]
    with pytest.raises(ReplayError, match="seq 3"):
        replay_events(events)

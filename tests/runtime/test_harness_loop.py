"""The agent loop: event order, tool batches, errors, queues, abort, determinism."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from harnessc.runtime import (
    AgentHarness,
    AssistantMessage,
    HarnessBusyError,
    LoopState,
    QueueMode,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from harnessc.runtime.core.hooks import UnknownHookError
from harnessc.runtime.core.replay import replay_events
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.tools.base import Tool, ToolResult, text_result
from tests.timing import scaled


def test_two_turn_tool_run_event_order(make_harness: Any, kit: Any) -> None:
    harness, log = make_harness(
        [reply_tool_calls([("add", {"a": 1, "b": 2}, "c1")]), reply_text("It is 3.")],
        tools=[kit.add_tool()],
    )
    result = harness.prompt_sync("what is 1+2?")
    assert result.status == "done"
    assert result.text == "It is 3."
    assert kit.types(log) == [
        "agent_start",
        "turn_start",
        "message_start",  # the prompt
        "message_end",
        "message_start",  # assistant reply with the tool call
        "message_end",
        "plan_commit",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",  # tool result
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "plan_commit",  # a text reply commits an empty plan
        "turn_end",
        "agent_end",
    ]
    updates = [e for e in log if e.type == "message_update"]
    assert any(e.delta_type == "text_delta" and e.delta for e in updates)
    states = [(e.from_state, e.to_state) for e in log if e.type == "state_change"]
    assert states == [
        ("IDLE", "PLANNING"),
        ("PLANNING", "EXECUTING"),
        ("EXECUTING", "REFLECTING"),
        ("REFLECTING", "PLANNING"),
        ("PLANNING", "EXECUTING"),
        ("EXECUTING", "REFLECTING"),
        ("REFLECTING", "DONE"),
    ]
    assert harness.state is LoopState.DONE
    roles = [m.role for m in harness.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    tool_result = harness.messages[2]
    assert isinstance(tool_result, ToolResultMessage) and tool_result.text == "3"
    seqs = [e.seq for e in log]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for event in log:  # every event is JSON-serialisable
        json.dumps(event.to_dict())


def test_messages_are_persisted_in_the_session(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("add", {"a": 2, "b": 2})]), reply_text("4")], tools=[kit.add_tool()]
    )
    harness.prompt_sync("2+2")
    kinds = [e.type for e in harness.session.entries()]
    assert kinds[:2] == ["model_change", "thinking_level_change"]
    assert kinds.count("message") == 4
    assert [m.role for m in harness.session.context().messages] == [
        m.role for m in harness.messages
    ]


def test_parallel_batch_runs_concurrently_and_keeps_call_order(make_harness: Any) -> None:
    order: list[str] = []

    def slow(name: str, delay: float) -> Tool:
        async def run(cid: str, params: Any, signal: Any, upd: Any, ctx: Any) -> ToolResult:
            await asyncio.sleep(delay)
            order.append(name)
            return text_result(name)

        return Tool(name, name, {"type": "object", "properties": {}}, run)

    harness, log = make_harness(
        [reply_tool_calls([("slow", {}), ("fast", {})]), reply_text("ok")],
        tools=[slow("slow", 0.2), slow("fast", 0.01)],
    )
    harness.prompt_sync("go")
    assert order == ["fast", "slow"]  # ran at the same time (one after the other: slow first)
    results = [m.tool_name for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert results == ["slow", "fast"]  # appended in call order


def test_sequential_tool_forces_sequential_batch(make_harness: Any) -> None:
    running = 0
    peak = 0

    async def run(cid: str, params: Any, signal: Any, upd: Any, ctx: Any) -> ToolResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return text_result("x")

    tools = [
        Tool("a", "a", {"type": "object"}, run),
        Tool("b", "b", {"type": "object"}, run, execution_mode="sequential"),
    ]
    harness, _ = make_harness(
        [reply_tool_calls([("a", {}), ("b", {}), ("a", {})]), "done"], tools=tools
    )
    harness.prompt_sync("go")
    assert peak == 1


def test_unknown_tool_invalid_arguments_and_broken_json_become_error_results(
    make_harness: Any, kit: Any
) -> None:
    broken = AssistantMessage(
        content=[
            ToolCall("c1", "nope", {}),
            ToolCall("c2", "add", {"a": "x"}),
            ToolCall("c3", "add", {}, parse_error="Expecting ',' delimiter at char 9"),
            ToolCall("c4", "add", {"a": "5", "b": 1}),  # numeric string is coerced
        ],
        stop_reason="toolUse",
    )
    harness, _ = make_harness([broken, "fine"], tools=[kit.add_tool()])
    result = harness.prompt_sync("go")
    assert result.status == "done"
    results = {m.tool_call_id: m for m in harness.messages if isinstance(m, ToolResultMessage)}
    assert results["c1"].is_error and "Tool nope not found" in results["c1"].text
    assert results["c2"].is_error and "Validation failed for tool add" in results["c2"].text
    assert "b: required property is missing" in results["c2"].text
    assert results["c3"].is_error and "not valid JSON" in results["c3"].text
    assert not results["c4"].is_error and results["c4"].text == "6"


def test_a_raising_tool_becomes_an_error_result(make_harness: Any) -> None:
    async def boom(cid: str, params: Any, signal: Any, upd: Any, ctx: Any) -> ToolResult:
        raise RuntimeError("disk on fire")

    harness, _ = make_harness(
        [reply_tool_calls([("boom", {})]), "sorry"],
        tools=[Tool("boom", "b", {"type": "object"}, boom)],
    )
    assert harness.prompt_sync("go").status == "done"
    result = next(m for m in harness.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and "RuntimeError: disk on fire" in result.text


def test_length_stop_reason_does_not_execute_tool_calls(make_harness: Any, kit: Any) -> None:
    calls: list[str] = []

    async def record(cid: str, params: Any, signal: Any, upd: Any, ctx: Any) -> ToolResult:
        calls.append(cid)
        return text_result("ran")

    cut = reply_tool_calls([("rec", {})])
    cut.stop_reason = "length"
    harness, _ = make_harness([cut, "ok"], tools=[Tool("rec", "r", {"type": "object"}, record)])
    harness.prompt_sync("go")
    assert calls == []
    result = next(m for m in harness.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and "output token limit" in result.text


def test_terminate_stops_after_the_batch(make_harness: Any) -> None:
    async def stop(cid: str, params: Any, signal: Any, upd: Any, ctx: Any) -> ToolResult:
        return ToolResult([TextContent("bye")], terminate=True)

    provider = ScriptedProvider([reply_tool_calls([("stop", {})]), "never sent"])
    harness, _ = make_harness(provider, tools=[Tool("stop", "s", {"type": "object"}, stop)])
    result = harness.prompt_sync("go")
    assert result.status == "done" and result.reason == "tool_terminated"
    assert provider.remaining == 1


def test_provider_error_ends_the_run_with_error_status(make_harness: Any) -> None:
    failing = AssistantMessage(stop_reason="error", error_message="HTTP 400: bad request")
    harness, log = make_harness([failing])
    on_error: list[str] = []
    harness.on("on_error", lambda e: on_error.append(e.message))
    result = harness.prompt_sync("go")
    assert result.status == "error" and "HTTP 400" in result.reason
    assert log.events[-1].type == "agent_end"
    assert on_error == ["HTTP 400: bad request"]  # seed 004: on_error for any error
    assert (
        harness.prompt_sync("again").status == "error"
    )  # next prompt still runs (no replies left)


def test_busy_harness_rejects_a_second_run(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("sleep", {"seconds": 0.2})]), "done"], tools=[kit.sleep_tool()]
    )

    async def main() -> None:
        first = asyncio.create_task(harness.prompt("one"))
        await asyncio.sleep(0.05)
        with pytest.raises(HarnessBusyError, match="busy"):
            await harness.prompt("two")
        assert (await first).status == "done"

    asyncio.run(main())


def test_steering_one_at_a_time_and_all(make_harness: Any, kit: Any) -> None:
    for mode, expected_turns in ((QueueMode.ONE_AT_A_TIME, 3), (QueueMode.ALL, 2)):
        provider = ScriptedProvider(
            [reply_tool_calls([("sleep", {"seconds": 0.1})]), "a", "b", "c", "d"]
        )
        harness, log = make_harness(provider, tools=[kit.sleep_tool()], steering_mode=mode)

        async def main(harness: AgentHarness) -> None:
            task = asyncio.create_task(harness.prompt("start"))
            await asyncio.sleep(0.03)
            harness.steer("first steer")
            harness.steer("second steer")
            await task

        asyncio.run(main(harness))
        turns = [e for e in log if e.type == "turn_start"]
        assert len(turns) == expected_turns, mode
        users = [m.content for m in harness.messages if isinstance(m, UserMessage)]
        assert users == ["start", "first steer", "second steer"]
        # steering arrives after the tool batch, before the next model call
        roles = [m.role for m in harness.messages]
        assert roles[:4] == ["user", "assistant", "toolResult", "user"]
        assert any(e.type == "queue_update" for e in log)


def test_follow_up_is_delivered_when_the_agent_would_stop(make_harness: Any) -> None:
    harness, _ = make_harness(["first answer", "second answer"])
    harness.follow_up("and then?")
    result = harness.prompt_sync("hello")
    assert [m.role for m in result.messages] == ["user", "assistant", "user", "assistant"]
    assert result.text == "second answer"


def test_abort_during_a_slow_tool(make_harness: Any, kit: Any) -> None:
    harness, log = make_harness(
        [reply_tool_calls([("sleep", {"seconds": 30}), ("add", {"a": 1, "b": 1})]), "unused"],
        tools=[kit.sleep_tool(), kit.add_tool()],
        sequential_tools=True,
    )

    async def main() -> Any:
        task = asyncio.create_task(harness.prompt("go"))
        await asyncio.sleep(0.1)
        started = time.perf_counter()
        harness.abort()
        result = await task
        assert time.perf_counter() - started < scaled(1.0)
        return result

    result = asyncio.run(main())
    assert result.status == "aborted"
    results = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 2 and all(r.is_error for r in results)
    assert all("No result provided" in r.text for r in results)
    assert "abort" in kit.types(log) and log.events[-1].type == "agent_end"
    assert harness.state is LoopState.IDLE
    # the history stays valid and the next prompt works
    harness.options.provider = ScriptedProvider(["back"])
    assert harness.prompt_sync("again").text == "back"


def test_unknown_hook_name_lists_valid_ones(make_harness: Any) -> None:
    harness, _ = make_harness([])
    with pytest.raises(UnknownHookError, match="did you mean 'tool_call'") as info:
        harness.on("tool_cal", lambda e: None)
    assert "before_agent_start" in str(info.value)


def test_determinism_and_replay(make_harness: Any, kit: Any) -> None:
    def run() -> tuple[list[str], AgentHarness, Any]:
        harness, log = make_harness(
            [
                reply_tool_calls(
                    [("add", {"a": 1, "b": 2}, "c1"), ("add", {"a": 3, "b": 4}, "c2")]
                ),
                reply_tool_calls([("add", {"a": 3, "b": 7}, "c3")]),
                "10",
            ],
            tools=[kit.add_tool()],
        )
        harness.prompt_sync("sum")
        return [e.type for e in log], harness, log

    first, harness, log = run()
    second, _, _ = run()
    assert first == second
    replayed = replay_events(log.to_dicts())
    live = harness.snapshot()
    assert replayed.snapshot() == live  # state, messages, settings, pending calls, usage
    # replay from an offset continues from an earlier replay
    half = len(log) // 2
    start = replay_events(log.to_dicts()[:half])
    assert replay_events(log.to_dicts()[half:], start).messages == live["messages"]


def test_repeated_tool_call_ids_keep_every_result(make_harness: Any, kit: Any) -> None:
    twice = AssistantMessage(
        content=[
            ToolCall("dup", "add", {"a": 1, "b": 1}),
            ToolCall("dup", "add", {"a": 2, "b": 2}),
        ],
        stop_reason="toolUse",
    )
    harness, _ = make_harness([twice, "ok"], tools=[kit.add_tool()])
    harness.prompt_sync("go")
    results = [m.text for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert results == ["2", "4"]
    # the session records the unique ids, so a reopened session pairs every result too
    recorded = [m for m in harness.session.context().messages if isinstance(m, AssistantMessage)]
    ids = [c.id for c in recorded[0].tool_calls]
    assert len(set(ids)) == 2 and ids[0] == "dup"


def test_a_hook_calling_sys_exit_is_contained(make_harness: Any) -> None:
    import sys

    harness, log = make_harness(["fine"])
    harness.on("turn_start", lambda e: sys.exit(3))
    assert harness.prompt_sync("go").status == "done"
    assert any(e.type == "error" and "SystemExit" in e.message for e in log)


def test_setters_emit_updates_and_apply_from_the_next_turn(kit: Any) -> None:
    from harnessc.runtime import AgentHarnessOptions, EventLog, Model, ThinkingLevel

    async def switch(cid: str, params: Any, signal: Any, upd: Any, ctx: Any) -> ToolResult:
        await harness.set_model("alt")
        await harness.set_thinking_level("high")
        await harness.set_active_tools(["add"])
        return text_result("switched")

    provider = ScriptedProvider([reply_tool_calls([("switch", {})]), "done"])
    harness = AgentHarness(
        AgentHarnessOptions(
            models={
                "main": Model(id="scripted-1", api="scripted", provider="test"),
                "alt": Model(id="scripted-2", api="scripted", provider="test"),
            },
            tools=[Tool("switch", "s", {"type": "object"}, switch), kit.add_tool()],
            provider=provider,
        )
    )
    log = EventLog()
    harness.subscribe(log)
    assert harness.prompt_sync("go").status == "done"
    first, second = provider.requests
    assert (first.model.id, first.thinking_level) == ("scripted-1", ThinkingLevel.OFF)
    assert [t.name for t in first.context.tools] == ["switch", "add"]
    assert (second.model.id, second.thinking_level) == ("scripted-2", ThinkingLevel.HIGH)
    assert [t.name for t in second.context.tools] == ["add"]
    updates = [e for e in log if e.type.endswith("_update") and e.type != "message_update"]
    assert [e.type for e in updates] == ["model_update", "thinking_level_update", "tools_update"]
    assert (updates[0].key, updates[1].level, updates[2].active_tool_names) == (
        "alt",
        "high",
        ["add"],
    )
    kinds = [e.data.get("customType", e.type) for e in harness.session.entries()]
    assert {"model_change", "thinking_level_change", "harnessc.active_tools"} <= set(kinds)
    assert replay_events(log.to_dicts()).snapshot() == harness.snapshot()
    with pytest.raises(KeyError, match="unknown tools: nope"):
        asyncio.run(harness.set_active_tools(["nope"]))


def test_follow_up_all_mode_delivers_the_whole_queue(make_harness: Any) -> None:
    for mode, answers in ((QueueMode.ONE_AT_A_TIME, 3), (QueueMode.ALL, 2)):
        harness, _ = make_harness(["a", "b", "c"], follow_up_mode=mode)
        harness.follow_up("one more")
        harness.follow_up("and another")
        result = harness.prompt_sync("hello")
        users = [m.content for m in result.messages if isinstance(m, UserMessage)]
        assert users == ["hello", "one more", "and another"], mode
        assert sum(isinstance(m, AssistantMessage) for m in result.messages) == answers, mode


def test_event_log_replays_from_any_offset_and_wait_for_idle(make_harness: Any) -> None:
    harness, log = make_harness(["a", "b"])

    async def main() -> None:
        task = asyncio.create_task(harness.prompt("one"))
        await asyncio.sleep(0)
        await harness.wait_for_idle()
        assert task.done() and not harness.is_busy
        assert (await harness.prompt("two")).status == "done"

    asyncio.run(main())
    seen: list[Any] = []
    assert log.replay(seen.append) == len(log) and seen == log.events
    seen.clear()
    assert log.replay(seen.append, offset=5) == len(log) - 5
    assert seen == log.events[5:] and [e["seq"] for e in log.to_dicts(5)] == [e.seq for e in seen]


def test_manual_compact_during_a_run_is_busy(make_harness: Any) -> None:
    outcome: list[str] = []

    async def compact_now(cid: str, params: Any, signal: Any, upd: Any, ctx: Any) -> ToolResult:
        try:
            await harness.compact()
        except HarnessBusyError as exc:
            outcome.append(str(exc))
        return text_result("tried")

    harness, _ = make_harness(
        [reply_tool_calls([("compact_now", {})]), "ok"],
        tools=[Tool("compact_now", "c", {"type": "object"}, compact_now)],
    )
    assert harness.prompt_sync("go").status == "done"
    assert outcome and "busy" in outcome[0]
    assert asyncio.run(harness.compact()) is None  # idle: allowed (nothing to compact)

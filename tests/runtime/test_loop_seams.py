"""The agent loop where its features meet: held calls and budgets, sequential batches,
cancellation, event order, wall clocks, tool timeouts, compaction, tree moves and
resumes (issue 26, items 6-15). Each test failed on the loop before its fix."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import (
    AgentHarness,
    AgentHarnessOptions,
    Budget,
    PauseRequest,
    ToolResultMessage,
)
from harnessc.runtime.core.hooks import HookSpec
from harnessc.runtime.core.messages import message_text
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.tools.base import Tool, text_result

from .test_run_state_defects import MODELS, OBJ, Counter, new_file_harness, open_harness


def _ask_for(name: str) -> HookSpec:
    def hold(event: Any) -> Any:
        if event.tool_name != name:
            return None
        return PauseRequest("permission needed: " + event.tool_name)

    return HookSpec("tool_call", hold)


def _results(harness: Any) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in harness.messages if isinstance(m, ToolResultMessage)}


def _logging_tool(name: str, log: list[str]) -> Tool:
    async def run(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        log.append(name)
        return text_result(f"{name} ran")

    return Tool(name, f"The {name} tool.", OBJ, run)


# 6 -- a held call counts once ------------------------------------------------------


def test_a_held_call_at_the_tool_call_limit_counts_once(tmp_path: Path) -> None:
    ls, bash = Counter("ls"), Counter("bash")
    provider = ScriptedProvider([reply_tool_calls([("ls", {}), ("bash", {})]), reply_text("ok")])
    harness, _, path = new_file_harness(
        tmp_path,
        provider,
        [ls.tool(), bash.tool()],
        hooks=[_ask_for("bash")],
        budget=Budget(tool_calls=2),
    )
    paused = asyncio.run(harness.prompt("go"))
    assert paused.reason == "permission needed: bash"
    [held] = harness.pending_tool_calls
    done = asyncio.run(harness.resume(approvals={held.id: True}))
    assert (done.status, done.reason) == ("done", "goal_met")
    assert (ls.runs, bash.runs) == (1, 1)
    assert harness.budget.usage.tool_calls == 2
    harness.session.close()


def test_a_held_call_at_the_limit_counts_once_after_a_restart(tmp_path: Path) -> None:
    bash = Counter("bash")
    provider = ScriptedProvider([reply_tool_calls([("bash", {})]), reply_text("ok")])
    options: dict[str, Any] = {"hooks": [_ask_for("bash")], "budget": Budget(tool_calls=1)}
    harness, _, path = new_file_harness(tmp_path, provider, [bash.tool()], **options)
    asyncio.run(harness.prompt("go"))
    [held] = harness.pending_tool_calls
    harness.session.close()
    again, _ = open_harness(path, provider, [bash.tool()], **options)
    done = asyncio.run(again.resume(approvals={held.id: True}))
    assert done.status == "done", done.reason
    assert bash.runs == 1 and again.budget.usage.tool_calls == 1
    again.session.close()


# 7 -- a held call holds a sequential batch -------------------------------------------


def test_a_held_call_holds_the_rest_of_a_sequential_batch(tmp_path: Path) -> None:
    order: list[str] = []
    tools = [_logging_tool("edit", order), _logging_tool("run_tests", order)]
    provider = ScriptedProvider(
        [reply_tool_calls([("edit", {}), ("run_tests", {})]), reply_text("fixed")]
    )
    options: dict[str, Any] = {"hooks": [_ask_for("edit")], "sequential_tools": True}
    harness, _, path = new_file_harness(tmp_path, provider, tools, **options)
    paused = asyncio.run(harness.prompt("fix it"))
    assert paused.reason == "permission needed: edit"
    assert order == []  # run_tests waits for the edit
    run = harness.run_state
    assert run is not None
    assert [r.status for r in run.calls] == ["held", "planned"]
    assert [c.name for c in harness.pending_tool_calls] == ["edit", "run_tests"]
    harness.session.close()

    again, log = open_harness(path, provider, tools, **options)
    reopened = again.run_state
    assert reopened is not None
    assert [r.status for r in reopened.calls] == ["held", "planned"]
    [held] = reopened.held
    done = asyncio.run(again.resume(approvals={held.id: True}))
    assert done.status == "done", done.reason
    assert order == ["edit", "run_tests"]
    starts = [e.tool_name for e in log if e.type == "tool_execution_start"]
    assert starts == ["run_tests"]  # the edit was announced once, when it was held
    again.session.close()


# 8 -- a tool's own CancelledError ----------------------------------------------------


def _cancelled_by_a_library() -> Tool:
    async def run(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        future = asyncio.get_running_loop().create_future()
        future.cancel()  # a library's own future, cancelled inside it
        await future
        return text_result("never")

    return Tool("fetch", "Fetch.", OBJ, run)


def _slow(log: list[str], seconds: float = 0.05) -> Tool:
    async def run(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            log.append("slow cancelled")
            raise
        log.append("slow done")
        return text_result("slow ran")

    return Tool("slow", "Slow.", OBJ, run)


def test_a_cancelled_error_from_one_tool_is_its_error_result(make_harness: Any) -> None:
    log: list[str] = []
    harness, _ = make_harness(
        [reply_tool_calls([("fetch", {}), ("slow", {})]), reply_text("carried on")],
        tools=[_cancelled_by_a_library(), _slow(log)],
    )

    async def main() -> Any:
        result = await harness.prompt("go")
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return result, left

    result, left = asyncio.run(main())
    assert (result.status, result.text) == ("done", "carried on")
    assert left == [] and log == ["slow done"]
    results = _results(harness)
    fetched = next(m for m in results.values() if m.tool_name == "fetch")
    assert fetched.is_error and "CancelledError" in fetched.text
    assert not next(m for m in results.values() if m.tool_name == "slow").is_error


def test_a_lone_tool_raising_cancelled_error_does_not_abort_the_run(make_harness: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("fetch", {})]), reply_text("ok")], tools=[_cancelled_by_a_library()]
    )
    result = harness.prompt_sync("go")
    assert result.status == "done"


def test_an_aborted_run_cancels_and_awaits_every_sibling(make_harness: Any) -> None:
    log: list[str] = []
    holder: list[Any] = []

    async def stop(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        await asyncio.sleep(0.01)
        holder[0].abort("stop")
        await asyncio.sleep(10)
        return text_result("never")

    harness, _ = make_harness(
        [reply_tool_calls([("stop", {}), ("slow", {})])],
        tools=[Tool("stop", "Stop.", OBJ, stop), _slow(log, 10)],
    )
    holder.append(harness)

    async def main() -> Any:
        result = await harness.prompt("go")
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return result, left

    result, left = asyncio.run(main())
    assert result.status == "aborted"
    assert left == [] and log == ["slow cancelled"]


# 9 -- every tool's updates before its end --------------------------------------------


def _progress() -> Tool:
    async def run(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        on_update(text_result("half way"))
        await asyncio.sleep(0)  # working on: the update is delivered meanwhile
        return text_result("done")

    return Tool("work", "Work.", OBJ, run)


def test_an_async_subscriber_and_hook_see_updates_before_the_end(make_harness: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("work", {}), ("work", {})]), reply_tool_calls([("work", {})]), "ok"],
        tools=[_progress()],
    )
    seen: list[str] = []
    hooked: list[str] = []

    async def slow_subscriber(event: Any) -> None:
        if event.type.startswith("tool_execution") or event.type == "agent_end":
            if event.type == "tool_execution_update":
                await asyncio.sleep(0.01)
            seen.append(f"{event.type}:{getattr(event, 'tool_call_id', '')}")

    async def slow_hook(event: Any) -> None:
        await asyncio.sleep(0.01)
        hooked.append(f"update:{event.tool_call_id}")

    harness.subscribe(slow_subscriber)
    harness.on("tool_execution_update", slow_hook)
    harness.on("tool_execution_end", lambda e: hooked.append(f"end:{e.tool_call_id}"))
    assert harness.prompt_sync("go").status == "done"
    ends = [s for s in seen if s.startswith("tool_execution_end")]
    assert len(ends) == 3 and seen[-1] == "agent_end:"
    for end in ends:
        call = end.split(":", 1)[1]
        assert seen.index(f"tool_execution_update:{call}") < seen.index(end)
        assert hooked.index(f"update:{call}") < hooked.index(f"end:{call}")


# 10 -- one wall clock ----------------------------------------------------------------


class _DeadlineProvider:
    """Honours ``request.deadline`` as a provider does: the request ends there with an
    error. It holds the loop until that moment and reports at once, so the loop's own
    timer never runs first: the race of the two clocks, constructed."""

    def __init__(self) -> None:
        self.deadlines: list[float | None] = []

    def stream(self, request: Any) -> Any:
        return self._stream(request)

    async def _stream(self, request: Any) -> Any:
        from harnessc.runtime.core.messages import AssistantMessage, TextContent
        from harnessc.runtime.providers.base import AssistantMessageEvent

        self.deadlines.append(request.deadline)
        message = AssistantMessage(api="scripted", provider="test", model="scripted-1")
        yield AssistantMessageEvent("start", message)
        if request.deadline is None:
            message.content = [TextContent("done")]
            yield AssistantMessageEvent("done", message)
            return
        loop = asyncio.get_running_loop()
        while loop.time() < request.deadline:
            pass
        message.stop_reason = "error"
        message.error_message = "the run's time budget ran out during the model request"
        yield AssistantMessageEvent("error", message)


def test_the_provider_ending_at_the_deadline_is_a_budget_pause() -> None:
    for _ in range(3):
        provider = _DeadlineProvider()
        harness = AgentHarness(
            AgentHarnessOptions(models=MODELS, provider=provider, budget=Budget(wall_clock_s=0.02))
        )
        result = harness.prompt_sync("go")
        assert (result.status, result.reason) == ("paused", "budget_exceeded:wall_clock_s")
        resumed = harness.resume_sync(budget=Budget())
        assert (resumed.status, resumed.text) == ("done", "done")


def test_a_tool_batch_past_the_wall_clock_is_stopped_and_the_run_pauses(
    make_harness: Any,
) -> None:
    log: list[str] = []
    harness, _ = make_harness(
        [reply_tool_calls([("add", {"a": 1, "b": 2}), ("slow", {})]), reply_text("later")],
        tools=[_slow(log, 2.0), Tool("add", "Add.", OBJ, _quick_add)],
        budget=Budget(wall_clock_s=0.3),
    )
    result = harness.prompt_sync("go")
    assert (result.status, result.reason) == ("paused", "budget_exceeded:wall_clock_s")
    assert log == ["slow cancelled"]
    results = {m.tool_name: m for m in _results(harness).values()}
    assert results["add"].text == "3" and not results["add"].is_error
    assert results["slow"].is_error and "wall-clock budget ran out" in results["slow"].text
    assert harness.resume_sync(budget=Budget()).text == "later"


def test_a_sequential_tool_past_the_wall_clock_is_stopped(make_harness: Any) -> None:
    log: list[str] = []
    harness, _ = make_harness(
        [reply_tool_calls([("slow", {}), ("add", {"a": 1, "b": 1})]), reply_text("later")],
        tools=[_slow(log, 2.0), Tool("add", "Add.", OBJ, _quick_add)],
        budget=Budget(wall_clock_s=0.3),
        sequential_tools=True,
    )
    result = harness.prompt_sync("go")
    assert (result.status, result.reason) == ("paused", "budget_exceeded:wall_clock_s")
    assert log == ["slow cancelled"]
    assert [c.name for c in result.pending_tool_calls] == ["add"]
    assert harness.resume_sync(budget=Budget()).text == "later"


async def _quick_add(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
    return text_result(str(params["a"] + params["b"]))


# 11 -- a loop-level timeout on every tool call -----------------------------------------


async def hang(seconds: float = 30.0) -> str:
    """Wait far longer than allowed."""
    await asyncio.sleep(seconds)
    return "woke"


def test_a_python_tool_past_its_timeout_is_that_calls_error(make_harness: Any) -> None:
    from harnessc.runtime.tools import python_tool

    harness, log = make_harness(
        [reply_tool_calls([("hang", {}), ("add", {"a": 2, "b": 3})]), reply_text("moved on")],
        tools=[python_tool(hang, timeout_s=0.1), Tool("add", "Add.", OBJ, _quick_add)],
    )
    result = harness.prompt_sync("go")
    assert (result.status, result.text) == ("done", "moved on")
    results = {m.tool_name: m for m in _results(harness).values()}
    assert results["hang"].is_error and "timed out after 0.1 s" in results["hang"].text
    assert results["add"].text == "5"


def test_the_harness_tool_timeout_applies_to_every_tool(make_harness: Any) -> None:
    log: list[str] = []
    harness, _ = make_harness(
        [reply_tool_calls([("slow", {})]), reply_text("moved on")],
        tools=[_slow(log, 30.0)],
        tool_timeout_s=0.1,
    )
    result = harness.prompt_sync("go")
    assert result.status == "done" and log == ["slow cancelled"]
    [answer] = _results(harness).values()
    assert answer.is_error and "timed out after 0.1 s" in answer.text


def test_the_default_tool_timeout_is_pis() -> None:
    from harnessc.runtime import AgentHarnessOptions as Options

    assert Options().tool_timeout_s == 180.0


# 12 -- compaction inside a run: the run's signal and deadline -----------------------

SYSTEM = "You are the seams tester."


class _SummaryWatcher:
    """Replies to the agent; for a compaction summary request it records the request's
    signal and, with ``hang``, waits until that signal is aborted."""

    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.replies = 0
        self.summary_signals: list[Any] = []

    def stream(self, request: Any) -> Any:
        return self._stream(request)

    async def _stream(self, request: Any) -> Any:
        from harnessc.runtime import Usage
        from harnessc.runtime.core.messages import AssistantMessage, TextContent
        from harnessc.runtime.providers.base import AssistantMessageEvent

        message = AssistantMessage(api="scripted", provider="test", model="scripted-1")
        yield AssistantMessageEvent("start", message)
        if request.context.system_prompt != SYSTEM:  # the summary request
            self.summary_signals.append(request.signal)
            if self.hang:
                self.hang = False  # once
                await request.signal.wait()
            message.content = [TextContent("summary of the work so far")]
        else:
            self.replies += 1
            message.content = [TextContent(f"reply {self.replies} " + "q" * 400)]
            if self.replies == 2:  # the context is now past the threshold
                message.usage = Usage(input=900, output=50, total_tokens=950)
        yield AssistantMessageEvent("done", message)


def _compacting_harness(provider: _SummaryWatcher, **options: Any) -> AgentHarness:
    from harnessc.runtime import Model
    from harnessc.runtime.compaction.trigger import CompactionSettings

    model = Model(id="scripted-1", api="scripted", provider="test", context_window=1000)
    harness = AgentHarness(
        AgentHarnessOptions(
            models={"main": model}, provider=provider, system_prompt=SYSTEM, **options
        )
    )
    harness.compaction_settings = CompactionSettings(reserve_tokens=100, keep_recent_tokens=10)
    return harness


def test_compaction_inside_a_run_summarises_under_the_runs_signal() -> None:
    provider = _SummaryWatcher()
    harness = _compacting_harness(provider)
    during: list[Any] = []
    harness.on("session_compact", lambda e: during.append(harness.signal))

    async def main() -> None:
        for text in ("one", "two", "three"):
            assert (await harness.prompt(text + " " + "z" * 400)).status == "done"

    asyncio.run(main())
    assert len(provider.summary_signals) == 1 and len(during) == 1
    assert provider.summary_signals[0] is during[0]  # the run's own signal


def test_the_loop_never_calls_up_into_the_facade(monkeypatch: pytest.MonkeyPatch) -> None:
    """The steps get the provider, the system prompt and compaction from the loop: a
    facade whose own methods refuse still runs, and still compacts at the threshold."""
    provider = _SummaryWatcher()
    harness = _compacting_harness(provider)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the loop called up into the facade")

    for name in ("provider_for", "system_prompt", "compact"):  # the class: it has slots
        monkeypatch.setattr(type(harness), name, refuse)
    compacted: list[Any] = []
    harness.on("session_compact", compacted.append)

    async def main() -> None:
        for text in ("one", "two", "three"):
            assert (await harness.prompt(text + " " + "z" * 400)).status == "done"

    asyncio.run(main())
    assert len(compacted) == 1 and len(provider.summary_signals) == 1


def test_compaction_inside_a_run_stops_at_the_wall_clock_and_pauses() -> None:
    provider = _SummaryWatcher(hang=True)
    harness = _compacting_harness(provider, budget=Budget(wall_clock_s=5))

    async def main() -> Any:
        await harness.prompt("one " + "z" * 400)
        await harness.prompt("two " + "z" * 400)
        harness.set_budget(Budget(wall_clock_s=harness.budget.elapsed() + 0.2))
        return await asyncio.wait_for(harness.prompt("three " + "z" * 400), 20)

    result = asyncio.run(main())
    assert (result.status, result.reason) == ("paused", "budget_exceeded:wall_clock_s")
    assert len(provider.summary_signals) == 1
    assert harness.resume_sync(budget=Budget()).status == "done"  # compacted this time
    assert len(provider.summary_signals) == 2


# 13 -- tree moves: the live harness and a reopened one agree ------------------------


def _pause_entry_id(harness: Any) -> str:
    from harnessc.runtime.session import replay

    state = replay.pending_state(harness.session)
    assert state is not None
    return state.entry_id


def _seen(harness: Any) -> tuple[Any, ...]:
    return (harness.paused_reason, [c.id for c in harness.pending_tool_calls], harness.state)


def test_a_tree_move_back_onto_a_pause_agrees_with_a_reopened_session(tmp_path: Path) -> None:
    bash = Counter("bash")
    provider = ScriptedProvider([reply_tool_calls([("bash", {})]), reply_text("ran")])
    options: dict[str, Any] = {"hooks": [_ask_for("bash")]}
    harness, _, path = new_file_harness(tmp_path, provider, [bash.tool()], **options)
    asyncio.run(harness.prompt("go"))
    pause_id = _pause_entry_id(harness)
    first = harness.session.branch()[0].id

    asyncio.run(harness.navigate_tree(first))  # away: the paused run is settled
    away = _seen(harness)
    assert away[0] is None
    asyncio.run(harness.navigate_tree(pause_id))  # back onto the pause entry
    live = _seen(harness)
    harness.session.close()

    again, _ = open_harness(path, provider, [bash.tool()], **options)
    assert live == _seen(again)
    assert live[0] == "paused" and len(live[1]) == 1
    [held] = again.pending_tool_calls
    done = asyncio.run(again.resume(approvals={held.id: True}))
    assert done.status == "done" and bash.runs == 1
    again.session.close()


def test_after_every_tree_move_live_and_reopened_agree(tmp_path: Path) -> None:
    bash = Counter("bash")
    provider = ScriptedProvider(
        [reply_tool_calls([("bash", {})]), reply_text("ran"), reply_tool_calls([("bash", {})])]
    )
    options: dict[str, Any] = {"hooks": [_ask_for("bash")]}
    harness, _, path = new_file_harness(tmp_path, provider, [bash.tool()], **options)
    asyncio.run(harness.prompt("go"))
    [held] = harness.pending_tool_calls
    asyncio.run(harness.resume(approvals={held.id: True}))
    asyncio.run(harness.prompt("again"))  # paused once more, on a later entry
    targets = [e.id for e in harness.session.entries()]
    for target in [*targets, *reversed(targets)]:
        asyncio.run(harness.navigate_tree(target))
        live = _seen(harness)
        harness.session.close()
        harness, _ = open_harness(path, provider, [bash.tool()], **options)
        assert _seen(harness) == live, target
    harness.session.close()


# 14 -- resuming after the model's last word ------------------------------------------


def _review_after_text(harness: Any) -> None:
    harness.on("turn_end", lambda e: PauseRequest("review") if not e.tool_results else None)


def _roles(request: Any) -> list[str]:
    return [m.role for m in request.context.messages]


def test_resuming_a_pause_after_the_final_reply_never_sends_an_assistant_last_context(
    make_harness: Any,
) -> None:
    provider = ScriptedProvider([reply_text("the answer"), reply_text("again?")])
    harness, _ = make_harness(provider)
    _review_after_text(harness)
    paused = harness.prompt_sync("question")
    assert (paused.status, paused.reason) == ("paused", "review")
    done = harness.resume_sync()
    assert (done.status, done.reason) == ("done", "goal_met")
    assert len(provider.requests) == 1  # nothing to continue from: no model call
    assert all(_roles(r)[-1] != "assistant" for r in provider.requests)


def test_resuming_after_the_final_reply_continues_with_a_queued_message(
    make_harness: Any,
) -> None:
    provider = ScriptedProvider([reply_text("the answer"), reply_text("more detail")])
    harness, _ = make_harness(provider)
    _review_after_text(harness)
    assert harness.prompt_sync("question").status == "paused"
    harness.follow_up("tell me more")
    done = harness.resume_sync()
    assert done.status == "paused" and done.reason == "review"  # reviewed again, as asked
    assert len(provider.requests) == 2
    assert _roles(provider.requests[1])[-1] == "user"
    assert message_text(provider.requests[1].context.messages[-1]) == "tell me more"


# 15 -- the loop contract; resources set mid-run ---------------------------------------


def test_a_self_transition_is_illegal_like_any_other(make_harness: Any, kit: Any) -> None:
    from harnessc.runtime.core.loop_states import IllegalTransitionError, LoopState

    harness, log = make_harness(
        [reply_tool_calls([("ask_user", {"question": "ok?"})])], tools=[kit.ask_tool()]
    )
    assert harness.prompt_sync("go").status == "awaiting_tool"
    run = harness.run_state
    assert run is not None and run.state is LoopState.AWAITING_TOOL
    with pytest.raises(IllegalTransitionError, match="AWAITING_TOOL -> AWAITING_TOOL"):
        run.machine.transition(LoopState.AWAITING_TOOL)
    moves = [(e.from_state, e.to_state) for e in log if e.type == "state_change"]
    assert all(a != b for a, b in moves)


def test_skills_set_while_busy_are_in_the_next_turns_system_prompt(make_harness: Any) -> None:
    from harnessc.runtime.resources.types import AgentHarnessResources, Skill

    async def read(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        return text_result("contents")

    provider = ScriptedProvider([reply_tool_calls([("read", {})]), reply_text("done")])
    harness, _ = make_harness(provider, tools=[Tool("read", "Read.", OBJ, read)])
    skill = Skill("deploy", "Deploy the app.", "Steps.", "/skills/deploy/SKILL.md")

    async def learn(event: Any) -> None:
        if event.turn == 2:  # busy: the skill waits for the next model call
            await harness.set_resources(AgentHarnessResources(skills=[skill]))

    harness.on("turn_start", learn)
    assert harness.prompt_sync("go").status == "done"
    prompts = [r.context.system_prompt for r in provider.requests]
    assert "deploy" not in prompts[0] and "deploy" in prompts[1]


def test_a_stalled_http_model_call_always_ends_in_a_budget_pause() -> None:
    """End to end over HTTP: the provider's deadline and the loop's are one moment, so
    every run pauses on the budget (with two clocks about one run in 60 was an error)."""
    import threading

    from harnessc.runtime import Model
    from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

    release = threading.Event()

    def stall(request: object) -> ScriptedResponse:
        release.wait(10)
        return ScriptedResponse.sse(openai_events(["late"]))

    with ProtocolServer() as server:
        server.set_handler(stall)
        model = Model(id="m", api="openai-completions", base_url=server.url + "/v1")

        async def main() -> list[tuple[str, str | None]]:
            endings = []
            for _ in range(30):
                harness = AgentHarness(
                    AgentHarnessOptions(models={"m": model}, budget=Budget(wall_clock_s=0.03))
                )
                result = await harness.prompt("hi")
                endings.append((result.status, result.reason))
                await harness.close()
            return endings

        try:
            endings = asyncio.run(main())
        finally:
            release.set()
    assert set(endings) == {("paused", "budget_exceeded:wall_clock_s")}


def test_a_batch_starting_out_of_time_pauses_with_its_calls_unstarted(make_harness: Any) -> None:
    log: list[str] = []
    harness, events = make_harness(
        [reply_tool_calls([("slow", {}), ("add", {"a": 1, "b": 1})]), reply_text("later")],
        tools=[_slow(log, 0.01), Tool("add", "Add.", OBJ, _quick_add)],
        budget=Budget(wall_clock_s=0.05),
    )

    async def slow_plan_hook(event: Any) -> None:
        await asyncio.sleep(0.1)  # the time runs out before the batch starts

    harness.on("after_plan", slow_plan_hook)
    result = harness.prompt_sync("go")
    assert (result.status, result.reason) == ("paused", "budget_exceeded:wall_clock_s")
    assert [c.name for c in result.pending_tool_calls] == ["slow", "add"]
    assert log == [] and not [e for e in events if e.type == "tool_execution_start"]
    assert harness.resume_sync(budget=Budget()).text == "later"
    assert log == ["slow done"]

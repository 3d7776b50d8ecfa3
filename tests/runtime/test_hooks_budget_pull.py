"""Hooks (ten seed-004 topics, block, patch, raising), budgets and pull points."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessc.runtime import (
    AgentHarness,
    AgentHarnessOptions,
    Budget,
    LoopState,
    Model,
    PauseRequest,
    Session,
    TextContent,
    ToolResultMessage,
)
from harnessc.runtime.core.hooks import (
    SEED_004_TOPICS,
    BeforeAgentStartResult,
    ContextResult,
    ToolCallResult,
    ToolResultPatch,
)
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls


def test_the_ten_seed_004_topics_fire_in_order(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [
            reply_tool_calls([("add", {"a": 1, "b": 1})]),
            reply_tool_calls([("add", {"a": 1, "b": 1})]),
            "x",
        ],
        tools=[kit.add_tool()],
        budget=Budget(turns=2),
    )
    fired: list[str] = []
    for topic in SEED_004_TOPICS:
        harness.on(topic, lambda e, t=topic: fired.append(t))
    harness.on(
        "tool_call",
        lambda e: (_ for _ in ()).throw(RuntimeError("boom")) if e.input["a"] > 5 else None,
    )
    result = harness.prompt_sync("go")
    assert result.status == "paused" and result.reason == "budget_exceeded:turns"
    assert fired == [
        "before_plan",
        "before_step",
        "after_plan",
        "before_tool_call",
        "after_tool_call",
        "after_step",
        "before_step",
        "after_plan",
        "before_tool_call",
        "after_tool_call",
        "after_step",
        "on_budget_exceeded",
        "on_pause",
    ]
    # an error and completion on the next run
    fired.clear()
    harness.options.provider = ScriptedProvider(
        [reply_tool_calls([("add", {"a": 9, "b": 1})]), "done"]
    )
    harness.budget.raise_limits(Budget())
    result = harness.prompt_sync("again")
    assert result.status == "done"
    assert "on_error" in fired and fired[-1] == "on_complete"
    assert fired.index("on_error") < fired.index("after_tool_call")


def test_dotted_event_aliases_reach_subscribers(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness([reply_tool_calls([("add", {"a": 1})]), "x"], tools=[kit.add_tool()])
    seen: dict[str, int] = {}
    for name in (
        "session.start",
        "plan.draft",
        "plan.commit",
        "step.start",
        "step.end",
        "tool.call",
        "tool.result",
        "tool.error",
        "session.complete",
    ):
        harness.on(name, lambda e, n=name: seen.__setitem__(n, seen.get(n, 0) + 1))
    harness.prompt_sync("go")
    assert seen["session.start"] == 1 and seen["session.complete"] == 1
    assert seen["plan.draft"] == 2  # two assistant replies
    assert seen["tool.error"] == 1 and "tool.result" not in seen  # the call lacked b


def test_blocked_and_patched_tool_calls(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [
            reply_tool_calls([("add", {"a": 1, "b": 2}, "c1"), ("add", {"a": 100, "b": 1}, "c2")]),
            "done",
        ],
        tools=[kit.add_tool()],
    )
    harness.on(
        "tool_call",
        lambda e: ToolCallResult(block=True, reason="too big") if e.input["a"] > 50 else None,
    )
    harness.on("tool_call", lambda e: {"input": {"a": e.input["a"], "b": 10}})
    harness.on(
        "tool_result",
        lambda e: (
            ToolResultPatch(content=[TextContent(f"patched:{e.content[0].text}")])
            if not e.is_error
            else None
        ),
    )
    harness.prompt_sync("go")
    results = {m.tool_call_id: m for m in harness.messages if isinstance(m, ToolResultMessage)}
    assert results["c1"].text == "patched:11"  # input rewritten, then result patched
    assert results["c2"].is_error and results["c2"].text == "Tool call blocked: too big"


def test_tool_call_rewrites_chain_and_are_validated(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [
            reply_tool_calls([("add", {"a": 1, "b": 2}, "c1"), ("add", {"a": 2, "b": 2}, "c2")]),
            "done",
        ],
        tools=[kit.add_tool()],
    )
    # the first handler rewrites, the second (a block rule, say) checks the rewritten input
    harness.on("tool_call", lambda e: {"input": {**e.input, "a": e.input["a"] * 100}})
    harness.on(
        "tool_call",
        lambda e: ToolCallResult(block=True, reason="too big") if e.input["a"] > 150 else None,
    )
    harness.on("tool_call", lambda e: {"input": {"a": "many"}} if e.input["a"] == 100 else None)
    harness.prompt_sync("go")
    results = {m.tool_call_id: m for m in harness.messages if isinstance(m, ToolResultMessage)}
    assert results["c2"].is_error and results["c2"].text == "Tool call blocked: too big"
    assert results["c1"].is_error and "rewrote the add arguments" in results["c1"].text
    assert "b: required property is missing" in results["c1"].text


def test_raising_hook_is_reported_and_tool_call_fails_closed(make_harness: Any, kit: Any) -> None:
    harness, log = make_harness(
        [reply_tool_calls([("add", {"a": 1, "b": 2})]), "ok"], tools=[kit.add_tool()]
    )

    def bad(event: Any) -> None:
        raise ValueError("hook bug")

    harness.on("tool_call", bad)
    harness.on("turn_end", bad)
    result = harness.prompt_sync("go")
    assert result.status == "done"
    errors = [e for e in log if e.type == "error"]
    assert {e.source for e in errors} == {"hook:tool_call", "hook:turn_end"}
    assert all("ValueError: hook bug" in e.message for e in errors)
    tool_result = next(m for m in harness.messages if isinstance(m, ToolResultMessage))
    assert tool_result.is_error and tool_result.text.startswith("Tool call blocked: hook tool_call")


def test_before_agent_start_and_context_hooks(make_harness: Any) -> None:
    provider = ScriptedProvider(["hi"])
    harness, _ = make_harness(provider)
    harness.on(
        "before_agent_start",
        lambda e: BeforeAgentStartResult(system_prompt=e.system_prompt + " Be brief."),
    )
    harness.on("context", lambda e: ContextResult(messages=e.messages[-1:]))
    harness.on("context", lambda e: ContextResult(messages=[*e.messages, e.messages[0]]))
    seen: list[int] = []
    harness.on("context", lambda e: seen.append(len(e.messages)))  # chained
    harness.prompt_sync("hello")
    assert seen == [2]
    request = provider.requests[0]
    assert request.context.system_prompt == "You are a helpful assistant. Be brief."
    assert len(request.context.messages) == 2


def test_unusable_hook_results_are_reported_not_fatal(make_harness: Any) -> None:
    provider = ScriptedProvider(["hi"])
    harness, log = make_harness(provider)
    harness.on("before_agent_start", lambda e: {"messages": 5})
    harness.on("before_agent_start", lambda e: {"system_prompt": e.system_prompt + " Kept."})
    harness.on("context", lambda e: {"messages": "not a list"})
    harness.on("before_provider_request", lambda e: {"stream_options": "x"})
    result = harness.prompt_sync("hello")
    assert result.status == "done" and result.text == "hi"
    errors = [e.message for e in log if e.type == "error"]
    assert len(errors) == 3 and all("returned an unusable result: " in m for m in errors)
    request = provider.requests[0]
    assert request.context.system_prompt.endswith(" Kept.")
    assert [m.role for m in request.context.messages] == ["user"]


def test_before_provider_request_merges_headers(make_harness: Any) -> None:
    provider = ScriptedProvider(["hi"])
    harness, _ = make_harness(provider, stream_options=None)
    harness.on("before_provider_request", lambda e: {"stream_options": {"headers": {"X-A": "1"}}})
    harness.on(
        "before_provider_request",
        lambda e: {"stream_options": {"headers": {"X-B": "2"}, "timeout_ms": 5}},
    )
    harness.prompt_sync("hello")
    options = provider.requests[0].stream_options
    assert options.headers == {"X-A": "1", "X-B": "2"} and options.timeout_ms == 5


def test_provider_request_and_payload_hooks_chain(make_harness: Any) -> None:
    """Each handler sees the options / payload as the handlers before it left them."""
    provider = ScriptedProvider(["hi"])
    harness, _ = make_harness(provider)
    seen_headers: list[dict[str, str]] = []
    seen_payloads: list[dict[str, Any]] = []
    harness.on("before_provider_request", lambda e: {"stream_options": {"headers": {"X-A": "1"}}})
    harness.on(
        "before_provider_request",
        lambda e: seen_headers.append(dict(e.stream_options.headers or {})),
    )
    harness.on("before_provider_payload", lambda e: {**e.payload, "first": 1})
    harness.on("before_provider_payload", lambda e: {"payload": {**e.payload, "second": 2}})
    harness.on("before_provider_payload", lambda e: seen_payloads.append(dict(e.payload)))
    harness.prompt_sync("hello")
    assert seen_headers == [{"X-A": "1"}]
    assert seen_payloads and seen_payloads[0]["first"] == 1 and seen_payloads[0]["second"] == 2
    assert provider.requests[0].stream_options.headers == {"X-A": "1"}


@pytest.mark.parametrize(
    "limit,budget,replies",
    [
        ("turns", Budget(turns=1), None),
        ("tool_calls", Budget(tool_calls=1), None),
        ("tokens", Budget(tokens=100), None),
        ("cost_usd", Budget(cost_usd=0.01), None),
        ("wall_clock_s", Budget(wall_clock_s=0.05), None),
    ],
)
def test_each_budget_limit_pauses_and_resumes(
    make_harness: Any, kit: Any, limit: str, budget: Budget, replies: Any
) -> None:
    from harnessc.runtime import Usage
    from harnessc.runtime.core.messages import Cost

    usage = Usage(input=80, output=40, cost=Cost(total=0.02))
    script = [
        reply_tool_calls([("sleep", {"seconds": 0.06}), ("add", {"a": 1, "b": 1})], usage=usage),
        reply_tool_calls([("add", {"a": 2, "b": 2})]),
        reply_text("finished"),
    ]
    harness, log = make_harness(
        script, tools=[kit.add_tool(), kit.sleep_tool()], budget=budget, sequential_tools=True
    )
    result = harness.prompt_sync("go")
    assert result.status == "paused"
    assert result.reason == f"budget_exceeded:{limit}"
    assert harness.state is LoopState.IDLE
    hard = [e for e in log if e.type == "budget_warn" and e.level == "hard"]
    assert [e.limit for e in hard] == [limit]
    assert log.events[-1].type == "agent_pause"
    # history stays valid while paused: every result present or pending
    resumed = harness.resume_sync(budget=Budget())
    assert resumed.status == "done" and resumed.text == "finished"
    calls = [c.id for m in harness.messages if hasattr(m, "tool_calls") for c in m.tool_calls]  # type: ignore[union-attr]
    answered = [m.tool_call_id for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert sorted(calls) == sorted(answered)


def test_soft_budget_warning_fires_once(make_harness: Any, kit: Any) -> None:
    harness, log = make_harness(
        [reply_tool_calls([("add", {"a": 1, "b": 1})]) for _ in range(4)] + ["done"],
        tools=[kit.add_tool()],
        budget=Budget(turns=5),
    )
    assert harness.prompt_sync("go").status == "done"
    soft = [e for e in log if e.type == "budget_warn" and e.level == "soft"]
    assert [(e.limit, e.used) for e in soft] == [("turns", 4)]  # counting the turn about to start


def test_budget_hook_may_raise_the_limit(make_harness: Any) -> None:
    harness, _ = make_harness(["one"], budget=Budget(turns=0))
    harness.on("on_budget_exceeded", lambda e: Budget(turns=5))
    assert harness.prompt_sync("go").status == "done"


def test_external_tool_round_trip(make_harness: Any, kit: Any) -> None:
    provider = ScriptedProvider(
        [
            reply_tool_calls(
                [("ask_user", {"question": "Deploy?"}, "q1"), ("add", {"a": 1, "b": 2}, "c2")]
            ),
            "deployed",
        ]
    )
    harness, log = make_harness(provider, tools=[kit.ask_tool(), kit.add_tool()])
    result = harness.prompt_sync("deploy it")
    assert result.status == "awaiting_tool"
    assert [c.id for c in result.pending_tool_calls] == ["q1"]
    assert harness.state is LoopState.AWAITING_TOOL
    with pytest.raises(ValueError, match="missing: q1"):
        harness.resume_sync()
    with pytest.raises(Exception, match="waiting for external tool results"):
        harness.prompt_sync("something else")
    result = harness.resume_sync({"q1": "yes, go ahead"})
    assert result.status == "done" and result.text == "deployed"
    results = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_call_id, m.text) for m in results] == [("q1", "yes, go ahead"), ("c2", "3")]
    assert [e.reason for e in log if e.type == "agent_pause"] == ["awaiting_tool"]


def test_pending_external_call_survives_a_restart(kit: Any) -> None:
    session = Session()
    models = {"main": Model(id="m", api="scripted", provider="test")}
    first = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models=models,
            tools=[kit.ask_tool()],
            provider=ScriptedProvider([reply_tool_calls([("ask_user", {"question": "?"}, "q9")])]),
        )
    )
    assert first.prompt_sync("hi").status == "awaiting_tool"
    # a new process: same session entries, a new harness
    reopened = Session(header=session.header, entries=session.entries())
    second = AgentHarness(
        AgentHarnessOptions(
            session=reopened,
            models=models,
            tools=[kit.ask_tool()],
            provider=ScriptedProvider(["thanks"]),
        )
    )
    assert second.state is LoopState.AWAITING_TOOL
    assert [c.id for c in second.pending_tool_calls] == ["q9"]
    result = second.resume_sync({"q9": {"error": "user declined"}})
    assert result.status == "done"
    answer = next(m for m in second.messages if isinstance(m, ToolResultMessage))
    assert answer.is_error and answer.text == "user declined"


def test_hook_pause_request_needs_review(make_harness: Any, kit: Any) -> None:
    harness, log = make_harness(
        [reply_tool_calls([("add", {"a": 1, "b": 1})]), "after review"], tools=[kit.add_tool()]
    )
    harness.on("after_step", lambda e: PauseRequest("needs_review") if e.turn == 1 else None)
    result = harness.prompt_sync("go")
    assert result.status == "paused" and result.reason == "needs_review"
    assert harness.resume_sync().text == "after review"


def test_async_handlers_and_unsubscribe(make_harness: Any) -> None:
    harness, _ = make_harness(["a", "b"])
    seen: list[str] = []

    async def handler(event: Any) -> None:
        await asyncio.sleep(0)
        seen.append(event.type)

    off = harness.on("agent_end", handler)
    harness.prompt_sync("one")
    off()
    harness.prompt_sync("two")
    assert seen == ["agent_end"]


def test_tool_result_patches_chain(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("add", {"a": 1, "b": 1})]), "ok"], tools=[kit.add_tool()]
    )
    harness.on("tool_result", lambda e: {"content": [TextContent(e.content[0].text + " redacted")]})
    harness.on("tool_result", lambda e: {"content": [*e.content, TextContent(" [notice]")]})
    harness.prompt_sync("go")
    result = next(m for m in harness.messages if isinstance(m, ToolResultMessage))
    assert result.text == "2 redacted [notice]"


def test_pause_request_from_tool_call_hook_pauses_the_run(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("add", {"a": 1, "b": 1})]), "approved"], tools=[kit.add_tool()]
    )
    harness.on("tool_call", lambda e: PauseRequest("needs approval"))
    result = harness.prompt_sync("go")
    assert result.status == "paused" and result.reason == "needs approval"


def test_matcher_applies_to_tool_events(make_harness: Any, kit: Any) -> None:
    from harnessc.runtime import HookSpec

    seen: list[str] = []
    harness, _ = make_harness(
        [reply_tool_calls([("add", {"a": 1, "b": 1}), ("sleep", {"seconds": 0})]), "ok"],
        tools=[kit.add_tool(), kit.sleep_tool()],
        hooks=[
            HookSpec("tool_execution_start", lambda e: seen.append(e.tool_name), matcher="sleep")
        ],
    )
    harness.prompt_sync("go")
    assert seen == ["sleep"]


def test_wall_clock_is_checked_between_sequential_tool_calls(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [
            reply_tool_calls(
                [("sleep", {"seconds": 0.08}, "s1"), ("sleep", {"seconds": 0.01}, "s2")]
            ),
            "done",
        ],
        tools=[kit.sleep_tool()],
        budget=Budget(wall_clock_s=0.05),
        sequential_tools=True,
    )
    result = harness.prompt_sync("go")
    assert result.status == "paused" and result.reason == "budget_exceeded:wall_clock_s"
    assert [c.id for c in result.pending_tool_calls] == ["s2"]
    assert harness.resume_sync(budget=Budget()).text == "done"
    answered = [m.tool_call_id for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert answered == ["s1", "s2"]


def test_unknown_command_is_an_error_result(make_harness: Any) -> None:
    harness, _ = make_harness([])
    result = harness.prompt_sync("/nonsense now")
    assert result.status == "error" and result.reason == "unknown_command"
    assert result.reply is not None and "unknown command /nonsense" in result.reply

"""The run-state record round-trips through JSON, and the context's size rule."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from harnessc.runtime.agent.bus import EventBus
from harnessc.runtime.agent.context import ContextWindow
from harnessc.runtime.agent.hooks import HookRunner
from harnessc.runtime.agent.run_state import CallRecord, RunState
from harnessc.runtime.core.budget import Budget, BudgetUsage
from harnessc.runtime.core.loop_states import LoopState, StateMachine
from harnessc.runtime.core.message_size import estimate_context_tokens
from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harnessc.runtime.session import Session


def test_a_run_state_survives_json_exactly() -> None:
    reply = AssistantMessage(
        content=[TextContent("ok"), ToolCall("a", "approve", {"x": 1}), ToolCall("b", "bash", {})],
        stop_reason="toolUse",
        usage=Usage(input=3, output=4, total_tokens=7),
    )
    run = RunState(
        run_id="r1",
        machine=StateMachine(state=LoopState.AWAITING_TOOL),
        turn=2,
        turn_open=True,
        usage=BudgetUsage(turns=2, tool_calls=2, tokens=7, cost_usd=0.5),
        warned={"turns"},
        limits=Budget(turns=5, tool_calls=9),
        plan_committed=True,
        pause_reason="awaiting_tool",
    )
    run.set_reply(reply)
    run.plan_committed = True
    run.calls[0].status, run.calls[0].started, run.calls[0].args = "awaiting", True, {"x": 1}
    result = ToolResultMessage("b", "bash", [TextContent("done")])
    run.calls[1] = CallRecord(run.calls[1].call, "executed", {}, True, result)
    data = json.loads(json.dumps(run.to_dict()))
    again = RunState.from_dict(data)
    assert again.to_dict() == run.to_dict()
    assert [r.status for r in again.calls] == ["awaiting", "executed"]
    assert again.awaiting[0].call.arguments == {"x": 1}
    assert again.unanswered == [again.calls[0].call]


messages = st.lists(
    st.one_of(
        st.text(max_size=40).map(lambda t: UserMessage(t)),
        st.tuples(
            st.text(max_size=40), st.integers(0, 500), st.sampled_from(["stop", "error"])
        ).map(
            lambda a: AssistantMessage(
                content=[TextContent(a[0])], usage=Usage(total_tokens=a[1]), stop_reason=a[2]
            )
        ),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(history=messages, more=messages)
def test_context_tokens_match_the_shared_rule(history: list, more: list) -> None:
    window = ContextWindow(Session(), EventBus(HookRunner()))
    window.set(history, [None] * len(history))
    for message in more:
        window.track(message, None)  # what append does after the session write
    everything = history + more
    assert window.tokens() == estimate_context_tokens(everything)
    assert window.tokens(use_usage=False) == estimate_context_tokens(everything, False)

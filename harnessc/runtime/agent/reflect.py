"""Reflect: REFLECTING, the last stage of a turn, which decides what comes next.

More tool calls left (a batch cut short) go back to EXECUTING; otherwise the turn ends
(``turn_end``: ``end_turn``) and, in order: a pause a hook asked for; a typed run's
verdict on the answer (``typed_result.judge``); every call asking to terminate;
queued steering; another model call after tool results; queued follow-ups; the
``before_stop`` hooks (continue, pause or stop); and DONE.
"""

from __future__ import annotations

from harnessc.runtime.agent import typed_result
from harnessc.runtime.agent.endings import Finish, Next, Pause
from harnessc.runtime.agent.hooks import coerce
from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.core.events import TurnEndEvent
from harnessc.runtime.core.hooks import BeforeStopEvent, PauseRequest, StopDecision
from harnessc.runtime.core.loop_states import LoopState

__all__ = ["end_turn", "step"]


async def step(agent: AgentParts, run: RunState) -> Next:
    """REFLECTING: decide between more tool calls, another model call, a pause and DONE."""
    if run.to_run:
        return LoopState.EXECUTING
    await end_turn(agent, run)
    if run.pause_requested:
        return Pause(run.pause_requested)
    if agent.options.output is not None:  # a typed run ends with a valid answer
        verdict = await typed_result.judge(agent, run)
        if verdict is not None:
            if verdict.retry:
                return LoopState.PLANNING
            return Finish("done" if verdict.ok else "error", verdict.reason, verdict.value)
    had_calls = bool(run.calls)
    if had_calls and all(r.terminate for r in run.calls):
        return Finish("done", _termination_reason(run))
    if steering := agent.dequeue("steering"):
        for message in steering:
            await agent.append(message)
        return LoopState.PLANNING
    if had_calls:
        return LoopState.PLANNING
    if follow := agent.dequeue("follow_up"):
        for message in follow:
            await agent.append(message)
        return LoopState.PLANNING
    stopped = False
    event = BeforeStopEvent(message=run.reply, messages=list(agent.context.messages))
    for decision in await agent.hooks.run("before_stop", event):
        if isinstance(decision, PauseRequest):
            return Pause(decision.reason)
        decision = coerce(decision, StopDecision)
        if decision.continue_:
            for message in decision.messages:
                await agent.append(message)
            return LoopState.PLANNING
        stopped = True
    if run.pause_requested:
        return Pause(run.pause_requested)
    if stopped:
        return Finish("done", "turn_continue_stop")
    reply = run.reply
    answered = reply is not None and bool(reply.text.strip())
    return Finish("done", "goal_met" if answered else "no_plan")


async def end_turn(agent: AgentParts, run: RunState) -> None:
    """End the open turn (turn_end) and let the session catch up on disk."""
    if not run.turn_open:
        return
    run.turn_open = False
    results = [r.result for r in run.calls if r.result is not None]
    await agent.bus.emit(TurnEndEvent(turn=run.turn, message=run.reply, tool_results=results))
    await agent.session.sync_off_loop()  # other sessions keep running meanwhile


def _termination_reason(run: RunState) -> str:
    if any(r.terminated_by == "hook" for r in run.calls):
        return "hook_terminated"
    if any(r.call.name == "finish" for r in run.calls):
        return "finish_tool"
    return "tool_terminated"

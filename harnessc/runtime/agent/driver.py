"""The loop's state machine: each step reads the run state and returns the next state or an ending.

PLANNING is a model call, EXECUTING runs the tool calls it asked for, REFLECTING decides
what comes next (another model call, a pause, or DONE). ``drive`` is the only loop:
it calls the step of the current state and applies what the step returned, so every
transition goes through the run's ``StateMachine``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from harnessc.runtime.agent import budget_gate, endings, model_call, tool_batch, typed_result
from harnessc.runtime.agent.hooks import coerce
from harnessc.runtime.agent.loop import AgentLoop
from harnessc.runtime.agent.loop_compaction import auto_compact, recover_overflow
from harnessc.runtime.agent.results import RunResult, RunStatus
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.core.events import (
    AgentResumeEvent,
    AgentStartEvent,
    ErrorEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from harnessc.runtime.core.hooks import (
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeStopEvent,
    PauseRequest,
    StopDecision,
)
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    UserContent,
)
from harnessc.runtime.core.run_inputs import LIVE
from harnessc.runtime.support.records import Record
from harnessc.runtime.support.start_gate import admit

__all__ = ["abandon", "abort_paused", "begin", "drive", "resume_paused", "resume_tools"]


class Pause(Record, frozen=True):
    __slots__ = ("reason",)
    reason: str

    def __init__(self, reason: str) -> None:
        object.__setattr__(self, "reason", reason)


class AwaitTools(Record, frozen=True):
    __slots__ = ()

    def __init__(self) -> None:
        pass


class Finish(Record, frozen=True):
    __slots__ = ("status", "reason", "output")
    status: RunStatus
    reason: str
    output: Any  # the validated typed result (``output:``)

    def __init__(self, status: RunStatus, reason: str, output: Any = None) -> None:
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "output", output)


class Again(Record, frozen=True):
    """Run the same step once more, in the same state (not a transition)."""

    __slots__ = ()

    def __init__(self) -> None:
        pass


_AGAIN = Again()

Next = LoopState | Pause | AwaitTools | Finish | Again


def _replay() -> Any:
    from harnessc.runtime.session import replay  # on first use: start-up stays lean

    return replay


# -- turns -------------------------------------------------------------------------


async def open_turn(loop: AgentLoop, run: RunState) -> str | None:
    """Start a turn (turn_start), unless the turn budget is spent (the pause reason)."""
    if (reason := await budget_gate.check(loop, ("turns",), pending=1)) is not None:
        return reason
    run.turn += 1
    run.turn_open = True
    loop.budget.usage.turns += 1
    await loop.bus.emit(TurnStartEvent(turn=run.turn))
    return None


async def end_turn(loop: AgentLoop, run: RunState) -> None:
    if not run.turn_open:
        return
    run.turn_open = False
    results = [r.result for r in run.calls if r.result is not None]
    await loop.bus.emit(TurnEndEvent(turn=run.turn, message=run.reply, tool_results=results))
    await loop.session.sync_off_loop()  # other sessions keep running meanwhile


# -- the steps ---------------------------------------------------------------------


async def plan_step(loop: AgentLoop, run: RunState) -> Next:
    """PLANNING: one model call (or the calls left over from a pause)."""
    if run.reply is not None and run.to_run:
        return LoopState.EXECUTING
    if (reason := await budget_gate.check(loop, budget_gate.SPEND_LIMITS)) is not None:
        return Pause(reason)
    if loop.settings.pending_resources is not None:
        await loop.settings.apply_resources()
    await loop.bus.flush()
    if not run.turn_open and (reason := await open_turn(loop, run)) is not None:
        return Pause(reason)
    if (reason := await auto_compact(loop)) is not None:
        return Pause(reason)
    request, deadline = await model_call.make_request(loop, run)
    reply = await model_call.stream_reply(loop, request, deadline)
    budget_gate.count_reply(loop, reply)
    run.set_reply(reply)
    if reply.stop_reason == "aborted":
        raise asyncio.CancelledError()
    if reply.stop_reason == "error":
        return await _failed_reply(loop, run)
    if reply.stop_reason == "length" and run.calls:
        await tool_batch.commit_plan(loop, run, runnable=False)
        for record in run.planned:
            await tool_batch.block(
                loop,
                run,
                record,
                "Tool call was not executed: the reply hit the output token limit "
                "(stop reason 'length'), so its arguments may be incomplete.",
            )
        return LoopState.EXECUTING
    await tool_batch.commit_plan(loop, run)
    return LoopState.EXECUTING


async def _failed_reply(loop: AgentLoop, run: RunState) -> Next:
    reply = run.reply
    assert reply is not None
    recovered: bool | str = False
    if reply.context_overflow and not run.overflow_retried:
        recovered = await recover_overflow(loop)
        if recovered is True:
            run.overflow_retried = True
            run.calls = []
            return _AGAIN  # the same turn, once more after compaction
    await tool_batch.commit_plan(loop, run, runnable=False)
    for record in run.planned:
        await tool_batch.block(
            loop, run, record, "Tool call was not executed: the model reply failed."
        )
    await tool_batch.commit(loop, run)
    if isinstance(recovered, str):  # the time ran out while compacting
        await end_turn(loop, run)
        return Pause(recovered)
    if reply.error_message == model_call.WALL_CLOCK_STOP:
        reason = await budget_gate.check(loop, ("wall_clock_s",))
        if reason is None:  # a handler extended the clock: ask again in the same turn
            return _AGAIN
        await end_turn(loop, run)
        return Pause(reason)
    await end_turn(loop, run)
    message = reply.error_message or "model call failed"
    await loop.bus.emit(ErrorEvent(source="provider", message=message, fatal=True))
    return Finish("error", message)


async def execute_step(loop: AgentLoop, run: RunState) -> Next:
    """EXECUTING: run the planned tool calls."""
    reason = await tool_batch.run_batch(loop, run)
    if run.awaiting:
        return AwaitTools()
    if reason is not None:
        return Pause(reason)
    if run.held and run.pause_requested:  # a call waits for approval: the rest waits too
        return Pause(run.pause_requested)
    await tool_batch.commit(loop, run, partial=True)
    return LoopState.REFLECTING


async def reflect_step(loop: AgentLoop, run: RunState) -> Next:
    """REFLECTING: decide between more tool calls, another model call, a pause and DONE."""
    if run.to_run:
        return LoopState.EXECUTING
    await end_turn(loop, run)
    if run.pause_requested:
        return Pause(run.pause_requested)
    if loop.options.output is not None:  # a typed run ends with a valid answer
        verdict = await typed_result.judge(loop, run)
        if verdict is not None:
            if verdict.retry:
                return LoopState.PLANNING
            return Finish("done" if verdict.ok else "error", verdict.reason, verdict.value)
    had_calls = bool(run.calls)
    if had_calls and all(r.terminate for r in run.calls):
        return Finish("done", _termination_reason(run))
    if steering := loop.dequeue("steering"):
        for message in steering:
            await loop.append(message)
        return LoopState.PLANNING
    if had_calls:
        return LoopState.PLANNING
    if follow := loop.dequeue("follow_up"):
        for message in follow:
            await loop.append(message)
        return LoopState.PLANNING
    stopped = False
    event = BeforeStopEvent(message=run.reply, messages=list(loop.context.messages))
    for decision in await loop.hooks.run("before_stop", event):
        if isinstance(decision, PauseRequest):
            return Pause(decision.reason)
        decision = coerce(decision, StopDecision)
        if decision.continue_:
            for message in decision.messages:
                await loop.append(message)
            return LoopState.PLANNING
        stopped = True
    if run.pause_requested:
        return Pause(run.pause_requested)
    if stopped:
        return Finish("done", "turn_continue_stop")
    reply = run.reply
    answered = reply is not None and bool(reply.text.strip())
    return Finish("done", "goal_met" if answered else "no_plan")


def _termination_reason(run: RunState) -> str:
    if any(r.terminated_by == "hook" for r in run.calls):
        return "hook_terminated"
    if any(r.call.name == "finish" for r in run.calls):
        return "finish_tool"
    return "tool_terminated"


_STEPS: dict[LoopState, Callable[[AgentLoop, RunState], Awaitable[Next]]] = {
    LoopState.PLANNING: plan_step,
    LoopState.EXECUTING: execute_step,
    LoopState.REFLECTING: reflect_step,
}


async def drive(
    loop: AgentLoop, run: RunState, opening: Awaitable[str | Finish | None] | None = None
) -> RunResult:
    """Walk the machine from the run's state until DONE or a pull point.

    ``opening`` (an entry's first part: hooks, the prompt's entries) runs first; the
    pause reason (or the ending) it returns ends the run there. A cancellation or a
    crash anywhere becomes the run's ending.
    """
    try:
        if opening is not None:
            reason = await opening
            opening = None  # a finished coroutine keeps its memory while it is referenced
            if isinstance(reason, Finish):
                return await endings.finish(loop, run, reason.status, reason.reason)
            if reason is not None:
                return await endings.pause(loop, run, reason)
        while True:
            step = _STEPS.get(run.state)
            if step is None:  # pragma: no cover - the steps never leave the run elsewhere
                raise RuntimeError(f"unexpected state {run.state.value}")
            outcome = await step(loop, run)
            if isinstance(outcome, LoopState):
                run.machine.transition(outcome)
            elif isinstance(outcome, Again):
                continue
            elif isinstance(outcome, Pause):
                return await endings.pause(loop, run, outcome.reason)
            elif isinstance(outcome, AwaitTools):
                return await endings.await_tools(loop, run)
            else:
                return await endings.finish(
                    loop, run, outcome.status, outcome.reason, outcome.output
                )
    except asyncio.CancelledError:
        # The run's own ending: ``abort`` (it aborts the signal, then cancels the task
        # the run is on) or a CancelledError raised inside the run (a blocked prompt, a
        # reply the provider ended as aborted). A cancellation someone else asked for
        # is the caller's: the run is recorded as aborted, then it is passed on.
        signal = loop.signal
        task = asyncio.current_task()
        requested = task is not None and task.cancelling() > 0
        own = (signal is not None and signal.aborted) or not requested
        if own and requested and task is not None:
            task.uncancel()
        if signal is not None and not own:
            signal.abort("cancelled")
        result = await endings.aborted(loop, run)
        if not own:
            raise
        return result
    except Exception as exc:
        return await endings.crashed(loop, run, exc)


# -- entries ----------------------------------------------------------------------


def begin(
    loop: AgentLoop, message: Message, prompt_text: str, images: list[UserContent]
) -> Coroutine[Any, Any, RunResult]:
    """A new run on ``message`` (a paused run is abandoned first).

    With nothing to abandon the run is ``drive`` itself, so no coroutine of ``begin``
    waits for it to end (a process running a thousand runs holds a thousand fewer).
    """
    run = RunState(run_id=(loop.options.run_inputs or LIVE).new_run_id())
    if loop.run is not None:
        return _abandon_first(loop, loop.run, run, message, prompt_text, images)
    return _drive_new(loop, run, message, prompt_text, images)


async def _abandon_first(
    loop: AgentLoop,
    previous: RunState,
    run: RunState,
    message: Message,
    prompt_text: str,
    images: list[UserContent],
) -> RunResult:
    await abandon(loop, previous)
    return await _drive_new(loop, run, message, prompt_text, images)


def _drive_new(
    loop: AgentLoop, run: RunState, message: Message, prompt_text: str, images: list[UserContent]
) -> Coroutine[Any, Any, RunResult]:
    loop.adopt(run)
    loop.budget.usage = run.usage
    loop.budget.raise_limits(loop.budget.budget)
    return drive(loop, run, _open(loop, run, message, prompt_text, images))


async def _open(
    loop: AgentLoop, run: RunState, message: Message, prompt_text: str, images: list[UserContent]
) -> str | None:
    """A new run's start: its hooks and events, the first turn, the prompt's entries."""
    await admit()  # runs started together begin a few per turn of the event loop
    await loop.bus.flush()
    run.machine.transition(LoopState.PLANNING)
    settings = loop.settings
    start_event = BeforeAgentStartEvent(
        prompt=prompt_text,
        images=list(images) or None,
        system_prompt=await loop.system_prompt(),
        resources=settings.resources,
    )
    extra: list[Message] = []

    def take_start(result: Any) -> None:  # checked whole, then applied
        result = coerce(result, BeforeAgentStartResult)
        added = model_call.checked_messages(result.messages) if result.messages else []
        if result.system_prompt and not isinstance(result.system_prompt, str):
            raise TypeError("system_prompt must be a string")
        extra.extend(added)
        if result.system_prompt:
            start_event.system_prompt = result.system_prompt  # the next handler sees it
            run.system_prompt = result.system_prompt  # this run only

    await loop.hooks.run("before_agent_start", start_event, on_result=take_start)
    settings.record_if_new()
    await loop.bus.emit(
        AgentStartEvent(
            prompt=prompt_text,
            run_id=run.run_id,
            model=settings.model.id,
            thinking_level=settings.thinking_level.value,
            active_tools=list(settings.active_tool_names),
        )
    )
    reason = await open_turn(loop, run)
    await loop.append(message)
    for item in extra:
        await loop.append(item)
    return reason


async def abandon(loop: AgentLoop, previous: RunState) -> None:
    """A new prompt abandons a paused run: every call without a result gets an error one."""
    _replay().record_resume(loop.session, run_id=previous.run_id, abandoned=True)
    text = "No result provided: the paused run was abandoned for a new prompt."
    for record in previous.calls:
        if record.result is None:
            record.result = ToolResultMessage(
                record.call.id, record.call.name, [TextContent(text)], is_error=True
            )
    await tool_batch.commit(loop, previous)
    loop.run = None


async def abort_paused(loop: AgentLoop, run: RunState, reason: str) -> RunResult:
    """End a paused run as aborted, as ``abort`` ends a working one: every call without
    a result gets an error one (recorded, so the session goes on), then ``agent_end``."""
    _replay().record_resume(loop.session, run_id=run.run_id, aborted=reason)
    run.pause_reason = None
    run.pause_requested = None
    await tool_batch.abort_unfinished(
        loop, run, f"No result provided: the run was aborted ({reason})."
    )
    return await endings.aborted(loop, run, reason)


def resume_tools(
    loop: AgentLoop, run: RunState, results: dict[str, Any]
) -> Coroutine[Any, Any, RunResult]:
    return drive(loop, run, _resume_tools(loop, run, results))


async def _resume_tools(loop: AgentLoop, run: RunState, results: dict[str, Any]) -> None:
    await loop.bus.emit(AgentResumeEvent(run_id=run.run_id, reason="tool_results"))
    _replay().record_resume(loop.session, run_id=run.run_id)
    run.pause_reason = None
    for record in run.awaiting:
        result = tool_batch.external_result(results[record.id])
        await tool_batch.finalize(loop, run, record, result, 0.0)
    await tool_batch.commit(loop, run, partial=True)
    run.machine.transition(LoopState.REFLECTING)


def resume_paused(loop: AgentLoop, run: RunState) -> Coroutine[Any, Any, RunResult]:
    return drive(loop, run, _resume_paused(loop, run))


async def _resume_paused(loop: AgentLoop, run: RunState) -> Finish | None:
    """Continue a paused run. One paused after the model's last word (a review asked
    for at turn_end or before_stop) continues as pi's ``continue`` does: never with
    an assistant-last context; queued steering, else follow-up messages, are the next
    input, and without any the run ends there (done)."""
    await loop.bus.emit(AgentResumeEvent(run_id=run.run_id, reason="paused"))
    _replay().record_resume(loop.session, run_id=run.run_id)
    run.pause_reason = None
    run.pause_requested = None
    run.machine.transition(LoopState.PLANNING)
    messages = loop.context.messages
    last = messages[-1] if messages else None
    if run.to_run or not isinstance(last, AssistantMessage):
        return None
    if last.stop_reason in ("error", "aborted"):  # never sent: the context ends before it
        return None
    queued = loop.dequeue("steering") or loop.dequeue("follow_up")
    for message in queued:
        await loop.append(message)
    if queued:
        return None
    return Finish("done", "goal_met" if last.text.strip() else "no_plan")

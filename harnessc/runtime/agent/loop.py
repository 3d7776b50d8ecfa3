"""The loop: a run walks the turn's stages until DONE or a pull point.

A turn is three stages, one module each: ``plan`` (PLANNING: open the turn, call the
model through ``call_model``, commit its plan), ``run_tools`` (EXECUTING: the tool
batch) and ``reflect`` (REFLECTING: decide what comes next). Each stage reads the run
state and returns the next state or where else the run goes (``endings``: a pause, a
pull point, DONE, or the same stage again). ``drive`` is the only loop: it calls the
stage of the current state and applies what it returned, so every transition goes
through the run's ``StateMachine``.

A run enters here: ``begin`` (a prompt), ``resume_tools`` (the caller's results at a
pull point), ``resume_paused`` (after a pause); ``abandon`` settles a paused run that
a new prompt replaces.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from harnessc.runtime.agent import endings, plan, reflect, run_tools
from harnessc.runtime.agent.call_model import checked_messages
from harnessc.runtime.agent.endings import Again, AwaitTools, Finish, Next, Pause
from harnessc.runtime.agent.hooks import coerce
from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.results import RunResult
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.core.events import AgentResumeEvent, AgentStartEvent
from harnessc.runtime.core.hooks import BeforeAgentStartEvent, BeforeAgentStartResult
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    UserContent,
)
from harnessc.runtime.core.run_inputs import LIVE
from harnessc.runtime.support.start_gate import admit

__all__ = ["abandon", "abort_paused", "begin", "drive", "resume_paused", "resume_tools"]


# The stage of each state a run can be in while it runs.
_STAGES: dict[LoopState, Callable[[AgentParts, RunState], Awaitable[Next]]] = {
    LoopState.PLANNING: plan.step,
    LoopState.EXECUTING: run_tools.step,
    LoopState.REFLECTING: reflect.step,
}


def begin(
    agent: AgentParts, message: Message, prompt_text: str, images: list[UserContent]
) -> Coroutine[Any, Any, RunResult]:
    """A new run on ``message`` (a paused run is abandoned first).

    With nothing to abandon the run is ``drive`` itself, so no coroutine of ``begin``
    waits for it to end (a process running a thousand runs holds a thousand fewer).
    """
    run = RunState(run_id=(agent.options.run_inputs or LIVE).new_run_id())
    if agent.run is not None:
        return _abandon_first(agent, agent.run, run, message, prompt_text, images)
    return _drive_new(agent, run, message, prompt_text, images)


async def _abandon_first(
    agent: AgentParts,
    previous: RunState,
    run: RunState,
    message: Message,
    prompt_text: str,
    images: list[UserContent],
) -> RunResult:
    await abandon(agent, previous)
    return await _drive_new(agent, run, message, prompt_text, images)


def _drive_new(
    agent: AgentParts, run: RunState, message: Message, prompt_text: str, images: list[UserContent]
) -> Coroutine[Any, Any, RunResult]:
    agent.adopt(run)
    agent.budget.usage = run.usage
    agent.budget.raise_limits(agent.budget.budget)
    return drive(agent, run, _open(agent, run, message, prompt_text, images))


async def _open(
    agent: AgentParts, run: RunState, message: Message, prompt_text: str, images: list[UserContent]
) -> str | None:
    """A new run's start: its hooks and events, the first turn, the prompt's entries."""
    await admit()  # runs started together begin a few per turn of the event loop
    await agent.bus.flush()
    run.machine.transition(LoopState.PLANNING)
    settings = agent.settings
    start_event = BeforeAgentStartEvent(
        prompt=prompt_text,
        images=list(images) or None,
        system_prompt=await agent.system_prompt(),
        resources=settings.resources,
    )
    extra: list[Message] = []

    def take_start(result: Any) -> None:  # checked whole, then applied
        result = coerce(result, BeforeAgentStartResult)
        added = checked_messages(result.messages) if result.messages else []
        if result.system_prompt and not isinstance(result.system_prompt, str):
            raise TypeError("system_prompt must be a string")
        extra.extend(added)
        if result.system_prompt:
            start_event.system_prompt = result.system_prompt  # the next handler sees it
            run.system_prompt = result.system_prompt  # this run only

    await agent.hooks.run("before_agent_start", start_event, on_result=take_start)
    settings.record_if_new()
    await agent.bus.emit(
        AgentStartEvent(
            prompt=prompt_text,
            run_id=run.run_id,
            model=settings.model.id,
            thinking_level=settings.thinking_level.value,
            active_tools=list(settings.active_tool_names),
        )
    )
    reason = await plan.open_turn(agent, run)
    await agent.append(message)
    for item in extra:
        await agent.append(item)
    return reason


async def drive(
    agent: AgentParts, run: RunState, opening: Awaitable[str | Finish | None] | None = None
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
                return await endings.finish(agent, run, reason.status, reason.reason)
            if reason is not None:
                return await endings.pause(agent, run, reason)
        while True:
            stage = _STAGES.get(run.state)
            if stage is None:  # pragma: no cover - the stages never leave the run elsewhere
                raise RuntimeError(f"unexpected state {run.state.value}")
            outcome = await stage(agent, run)
            if isinstance(outcome, LoopState):
                run.machine.transition(outcome)
            elif isinstance(outcome, Again):
                continue
            elif isinstance(outcome, Pause):
                return await endings.pause(agent, run, outcome.reason)
            elif isinstance(outcome, AwaitTools):
                return await endings.await_tools(agent, run)
            else:
                return await endings.finish(
                    agent, run, outcome.status, outcome.reason, outcome.output
                )
    except asyncio.CancelledError:
        # The run's own ending: ``abort`` (it aborts the signal, then cancels the task
        # the run is on) or a CancelledError raised inside the run (a blocked prompt, a
        # reply the provider ended as aborted). A cancellation someone else asked for
        # is the caller's: the run is recorded as aborted, then it is passed on.
        signal = agent.signal
        task = asyncio.current_task()
        requested = task is not None and task.cancelling() > 0
        own = (signal is not None and signal.aborted) or not requested
        if own and requested and task is not None:
            task.uncancel()
        if signal is not None and not own:
            signal.abort("cancelled")
        result = await endings.aborted(agent, run)
        if not own:
            raise
        return result
    except Exception as exc:
        return await endings.crashed(agent, run, exc)


def resume_tools(
    agent: AgentParts, run: RunState, results: dict[str, Any]
) -> Coroutine[Any, Any, RunResult]:
    return drive(agent, run, _resume_tools(agent, run, results))


async def _resume_tools(agent: AgentParts, run: RunState, results: dict[str, Any]) -> None:
    await agent.bus.emit(AgentResumeEvent(run_id=run.run_id, reason="tool_results"))
    _replay().record_resume(agent.session, run_id=run.run_id)
    run.pause_reason = None
    for record in run.awaiting:
        result = run_tools.external_result(results[record.id])
        await run_tools.finalize(agent, run, record, result, 0.0)
    await agent.commit(run, partial=True)
    run.machine.transition(LoopState.REFLECTING)


def resume_paused(agent: AgentParts, run: RunState) -> Coroutine[Any, Any, RunResult]:
    return drive(agent, run, _resume_paused(agent, run))


async def _resume_paused(agent: AgentParts, run: RunState) -> Finish | None:
    """Continue a paused run. One paused after the model's last word (a review asked
    for at turn_end or before_stop) continues as pi's ``continue`` does: never with
    an assistant-last context; queued steering, else follow-up messages, are the next
    input, and without any the run ends there (done)."""
    await agent.bus.emit(AgentResumeEvent(run_id=run.run_id, reason="paused"))
    _replay().record_resume(agent.session, run_id=run.run_id)
    run.pause_reason = None
    run.pause_requested = None
    run.machine.transition(LoopState.PLANNING)
    messages = agent.context.messages
    last = messages[-1] if messages else None
    if run.to_run or not isinstance(last, AssistantMessage):
        return None
    if last.stop_reason in ("error", "aborted"):  # never sent: the context ends before it
        return None
    queued = agent.dequeue("steering") or agent.dequeue("follow_up")
    for message in queued:
        await agent.append(message)
    if queued:
        return None
    return Finish("done", "goal_met" if last.text.strip() else "no_plan")


async def abandon(agent: AgentParts, previous: RunState) -> None:
    """A new prompt abandons a paused run: every call without a result gets an error one."""
    _replay().record_resume(agent.session, run_id=previous.run_id, abandoned=True)
    text = "No result provided: the paused run was abandoned for a new prompt."
    for record in previous.calls:
        if record.result is None:
            record.result = ToolResultMessage(
                record.call.id, record.call.name, [TextContent(text)], is_error=True
            )
    await agent.commit(previous)
    agent.run = None


async def abort_paused(agent: AgentParts, run: RunState, reason: str) -> RunResult:
    """End a paused run as aborted, as ``abort`` ends a working one: every call without
    a result gets an error one (recorded, so the session goes on), then ``agent_end``."""
    _replay().record_resume(agent.session, run_id=run.run_id, aborted=reason)
    run.pause_reason = None
    run.pause_requested = None
    await endings.abort_unfinished(
        agent, run, f"No result provided: the run was aborted ({reason})."
    )
    return await endings.aborted(agent, run, reason)


def _replay() -> Any:
    from harnessc.runtime.session import replay  # on first use: start-up stays lean

    return replay

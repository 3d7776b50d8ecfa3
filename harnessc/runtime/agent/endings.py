"""Where a stage leads besides the next state, and how a run stops.

A stage returns the next ``LoopState`` or one of these: ``Pause`` (back to IDLE),
``AwaitTools`` (the pull point AWAITING_TOOL), ``Finish`` (DONE) or ``Again`` (the same
stage once more). ``loop.drive`` applies them with ``pause``, ``await_tools`` and
``finish``; an abort or a crash ends the run with ``aborted`` or ``crashed``.

A pause writes the run-state record into the session (``harnessc.pause``) *before* it
is reported, so local results finished before it are never lost or run twice.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.results import RunResult, RunStatus
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.agent.usage_tree import agent_path_of, usage_of_run
from harnessc.runtime.core.events import (
    AbortEvent,
    AgentEndEvent,
    AgentPauseEvent,
    ErrorEvent,
    ToolExecutionEndEvent,
    describe_exception,
)
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import TextContent, ToolResultMessage

__all__ = [
    "AGAIN",
    "Again",
    "AwaitTools",
    "Finish",
    "Next",
    "Pause",
    "abort_unfinished",
    "aborted",
    "await_tools",
    "crashed",
    "finish",
    "pause",
    "record_pause",
    "tree_usage",
]


class Pause(Struct, frozen=True):
    reason: str


class AwaitTools(Struct, frozen=True):
    pass


class Finish(Struct, frozen=True):
    status: RunStatus
    reason: str
    output: Any = None  # the validated typed result (``output:``)


class Again(Struct, frozen=True):
    """Run the same stage once more, in the same state (not a transition)."""


AGAIN = Again()

Next = LoopState | Pause | AwaitTools | Finish | Again


def record_pause(agent: AgentParts, run: RunState, reason: str) -> None:
    from harnessc.runtime.session import replay  # on first use: start-up stays lean

    pending = [r.call for r in run.calls if r.result is None]
    data = run.to_dict(wall_clock_s=agent.budget.elapsed())
    replay.record_pause(
        agent.session,
        reason,
        pending,
        run_id=run.run_id,
        state=run.state.value,
        external_tool_calls=[r.id for r in run.awaiting],
        usage=data["usage"],
        run=data,
    )
    agent.session.sync()


def tree_usage(agent: AgentParts, messages: list[Any]) -> dict[str, Any]:
    """What the run's tree of agents used since the prompt (or the resume), by path."""
    own = agent_path_of(agent.options.extensions, agent.session.header.metadata)
    return usage_of_run(messages, own)


def _sync_budget(agent: AgentParts, run: RunState) -> None:
    run.limits = agent.budget.budget
    run.warned = agent.budget.warned


async def pause(agent: AgentParts, run: RunState, reason: str) -> RunResult:
    if run.turn_open and run.state is not LoopState.REFLECTING:
        await agent.commit(run, partial=True)
    run.machine.transition(LoopState.IDLE)
    run.pause_reason = reason
    run.pause_requested = None
    _sync_budget(agent, run)
    record_pause(agent, run, reason)
    pending = run.unanswered
    await agent.bus.emit(
        AgentPauseEvent(run_id=run.run_id, reason=reason, pending_tool_calls=pending)
    )
    return RunResult(
        status="paused",
        reason=reason,
        pending_tool_calls=pending,
        messages=list(agent.new_messages),
    )


async def await_tools(agent: AgentParts, run: RunState) -> RunResult:
    await agent.commit(run, partial=True)
    run.machine.transition(LoopState.AWAITING_TOOL)
    run.pause_reason = "awaiting_tool"
    _sync_budget(agent, run)
    record_pause(agent, run, "awaiting_tool")
    pending = [r.call for r in run.awaiting]
    await agent.bus.emit(
        AgentPauseEvent(run_id=run.run_id, reason="awaiting_tool", pending_tool_calls=pending)
    )
    return RunResult(
        status="awaiting_tool",
        reason="awaiting_tool",
        pending_tool_calls=pending,
        messages=list(agent.new_messages),
    )


def _close(agent: AgentParts, run: RunState, state: LoopState) -> None:
    agent.session.sync()
    agent.run = None
    agent.last_state = state


async def finish(
    agent: AgentParts, run: RunState, status: RunStatus, reason: str, output: Any = None
) -> RunResult:
    run.machine.transition(LoopState.DONE)
    run.finish_reason = reason
    messages = list(agent.new_messages)
    config = agent.options.output
    shown = config.to_json(output) if config is not None and status == "done" else None
    await agent.bus.emit(
        AgentEndEvent(
            run_id=run.run_id,
            status=status,
            reason=reason,
            messages=messages,
            output=shown,
            usage=tree_usage(agent, messages),
        )
    )
    _close(agent, run, LoopState.DONE)
    return RunResult(status=status, reason=reason, messages=messages, output=output)


async def aborted(agent: AgentParts, run: RunState, why: str | None = None) -> RunResult:
    """After an abort: every call left without a result gets an error result (no hooks).
    ``why``: the reason of an abort of a paused run (else the signal's)."""
    await abort_unfinished(agent, run, "No result provided: the run was aborted.")
    signal = agent.signal
    reason = signal.reason if signal is not None and signal.aborted else "aborted"
    if why is not None:
        reason = why
    await agent.bus.emit(AbortEvent(reason=reason))
    return await _stopped(agent, run, "aborted", reason)


async def crashed(agent: AgentParts, run: RunState, exc: Exception) -> RunResult:
    from harnessc.runtime.core.hooks import FailRun
    from harnessc.runtime.session.entries import SessionError

    if isinstance(exc, SessionError):  # disk full, a lock lost: expected, and named
        message = f"session error: {exc}"
    elif isinstance(exc, FailRun):  # a hook ended the run on purpose: its own words
        message = str(exc)
    else:
        message = f"internal error: {describe_exception(exc)}"
    await agent.bus.emit(ErrorEvent(source="harness", message=message, fatal=True))
    try:
        await abort_unfinished(agent, run, f"No result provided: {message}")
    except Exception:
        pass
    return await _stopped(agent, run, "error", message)


async def _stopped(agent: AgentParts, run: RunState, status: RunStatus, reason: str) -> RunResult:
    """The end of a run stopped short (aborted, crashed): back to IDLE, ``agent_end``."""
    if run.state not in (LoopState.IDLE, LoopState.DONE):
        run.machine.transition(LoopState.IDLE)
    messages = list(agent.new_messages)
    await agent.bus.emit(
        AgentEndEvent(
            run_id=run.run_id,
            status=status,
            reason=reason,
            messages=messages,
            usage=tree_usage(agent, messages),
        )
    )
    _close(agent, run, LoopState.IDLE)
    return RunResult(status=status, reason=reason, messages=messages)


async def abort_unfinished(agent: AgentParts, run: RunState, text: str) -> None:
    """Give every call without a result an error result; no hooks run.

    A call that started gets its ``tool_execution_end``; one that never started (still
    in the stream, or planned) gets only the result message its call needs.
    """
    for record in run.calls:
        if record.result is not None:
            continue
        message = ToolResultMessage(
            record.call.id, record.call.name, [TextContent(text)], is_error=True
        )
        record.result = message
        if record.started:
            await agent.bus.emit(
                ToolExecutionEndEvent(
                    tool_call_id=record.call.id,
                    tool_name=record.call.name,
                    result=message,
                    is_error=True,
                    duration_ms=0.0,
                )
            )
    await agent.commit(run)

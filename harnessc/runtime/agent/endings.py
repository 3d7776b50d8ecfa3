"""How a run stops: a pause (IDLE), a pull point (AWAITING_TOOL), DONE, an abort, a crash.

A pause writes the run-state record into the session (``harnessc.pause``) *before* it
is reported, so local results finished before it are never lost or run twice.
"""

from __future__ import annotations

from typing import Any

from harnessc.runtime.agent import tool_batch
from harnessc.runtime.agent.loop import AgentLoop
from harnessc.runtime.agent.results import RunResult, RunStatus
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.agent.usage_tree import agent_path_of, usage_of_run
from harnessc.runtime.core.events import (
    AbortEvent,
    AgentEndEvent,
    AgentPauseEvent,
    ErrorEvent,
    describe_exception,
)
from harnessc.runtime.core.loop_states import LoopState

__all__ = ["aborted", "await_tools", "crashed", "finish", "pause", "record_pause", "tree_usage"]


def record_pause(loop: AgentLoop, run: RunState, reason: str) -> None:
    from harnessc.runtime.session import replay  # on first use: start-up stays lean

    pending = [r.call for r in run.calls if r.result is None]
    data = run.to_dict(wall_clock_s=loop.budget.elapsed())
    replay.record_pause(
        loop.session,
        reason,
        pending,
        run_id=run.run_id,
        state=run.state.value,
        external_tool_calls=[r.id for r in run.awaiting],
        usage=data["usage"],
        run=data,
    )
    loop.session.sync()


def tree_usage(loop: AgentLoop, messages: list[Any]) -> dict[str, Any]:
    """What the run's tree of agents used since the prompt (or the resume), by path."""
    own = agent_path_of(loop.options.extensions, loop.session.header.metadata)
    return usage_of_run(messages, own)


def _sync_budget(loop: AgentLoop, run: RunState) -> None:
    run.limits = loop.budget.budget
    run.warned = loop.budget.warned


async def pause(loop: AgentLoop, run: RunState, reason: str) -> RunResult:
    if run.turn_open and run.state is not LoopState.REFLECTING:
        await tool_batch.commit(loop, run, partial=True)
    run.machine.transition(LoopState.IDLE)
    run.pause_reason = reason
    run.pause_requested = None
    _sync_budget(loop, run)
    record_pause(loop, run, reason)
    pending = run.unanswered
    await loop.bus.emit(
        AgentPauseEvent(run_id=run.run_id, reason=reason, pending_tool_calls=pending)
    )
    return RunResult(
        status="paused",
        reason=reason,
        pending_tool_calls=pending,
        messages=list(loop.new_messages),
    )


async def await_tools(loop: AgentLoop, run: RunState) -> RunResult:
    await tool_batch.commit(loop, run, partial=True)
    run.machine.transition(LoopState.AWAITING_TOOL)
    run.pause_reason = "awaiting_tool"
    _sync_budget(loop, run)
    record_pause(loop, run, "awaiting_tool")
    pending = [r.call for r in run.awaiting]
    await loop.bus.emit(
        AgentPauseEvent(run_id=run.run_id, reason="awaiting_tool", pending_tool_calls=pending)
    )
    return RunResult(
        status="awaiting_tool",
        reason="awaiting_tool",
        pending_tool_calls=pending,
        messages=list(loop.new_messages),
    )


def _close(loop: AgentLoop, run: RunState, state: LoopState) -> None:
    loop.session.sync()
    loop.run = None
    loop.last_state = state


async def finish(
    loop: AgentLoop, run: RunState, status: RunStatus, reason: str, output: Any = None
) -> RunResult:
    run.machine.transition(LoopState.DONE)
    run.finish_reason = reason
    messages = list(loop.new_messages)
    config = loop.options.output
    shown = config.to_json(output) if config is not None and status == "done" else None
    await loop.bus.emit(
        AgentEndEvent(
            run_id=run.run_id,
            status=status,
            reason=reason,
            messages=messages,
            output=shown,
            usage=tree_usage(loop, messages),
        )
    )
    _close(loop, run, LoopState.DONE)
    return RunResult(status=status, reason=reason, messages=messages, output=output)


async def aborted(loop: AgentLoop, run: RunState, why: str | None = None) -> RunResult:
    """After an abort: every call left without a result gets an error result (no hooks).
    ``why``: the reason of an abort of a paused run (else the signal's)."""
    await tool_batch.abort_unfinished(loop, run, "No result provided: the run was aborted.")
    signal = loop.signal
    reason = signal.reason if signal is not None and signal.aborted else "aborted"
    if why is not None:
        reason = why
    await loop.bus.emit(AbortEvent(reason=reason))
    if run.state not in (LoopState.IDLE, LoopState.DONE):
        run.machine.transition(LoopState.IDLE)
    messages = list(loop.new_messages)
    await loop.bus.emit(
        AgentEndEvent(
            run_id=run.run_id,
            status="aborted",
            reason=reason,
            messages=messages,
            usage=tree_usage(loop, messages),
        )
    )
    _close(loop, run, LoopState.IDLE)
    return RunResult(status="aborted", reason=reason, messages=messages)


async def crashed(loop: AgentLoop, run: RunState, exc: Exception) -> RunResult:
    from harnessc.runtime.core.hooks import FailRun
    from harnessc.runtime.session.entries import SessionError

    if isinstance(exc, SessionError):  # disk full, a lock lost: expected, and named
        message = f"session error: {exc}"
    elif isinstance(exc, FailRun):  # a hook ended the run on purpose: its own words
        message = str(exc)
    else:
        message = f"internal error: {describe_exception(exc)}"
    await loop.bus.emit(ErrorEvent(source="harness", message=message, fatal=True))
    try:
        await tool_batch.abort_unfinished(loop, run, f"No result provided: {message}")
    except Exception:
        pass
    if run.state not in (LoopState.IDLE, LoopState.DONE):
        run.machine.transition(LoopState.IDLE)
    messages = list(loop.new_messages)
    await loop.bus.emit(
        AgentEndEvent(
            run_id=run.run_id,
            status="error",
            reason=message,
            messages=messages,
            usage=tree_usage(loop, messages),
        )
    )
    _close(loop, run, LoopState.IDLE)
    return RunResult(status="error", reason=message, messages=messages)

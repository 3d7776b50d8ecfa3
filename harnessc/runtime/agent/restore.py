"""Continuing a session: its context, settings and the run-state record of an open pause,
which ``record_pause`` writes.

A pause written by this harness carries the whole ``RunState`` (key ``run``); it is
rebuilt exactly. A pause record of an older harnessc (no ``run`` key) is rebuilt from
the last assistant message and the results after it, as before.
"""

from __future__ import annotations

import uuid
from typing import Any

from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.run_state import CallRecord, RunState
from harnessc.runtime.core.budget import BUDGET_LIMITS, Budget, BudgetUsage
from harnessc.runtime.core.loop_states import LoopState, StateMachine
from harnessc.runtime.core.messages import AssistantMessage, ToolResultMessage

__all__ = ["from_session", "open_pause", "record_pause"]


def from_session(agent: AgentParts) -> None:
    agent.context.reload()
    agent.settings.restore()
    open_pause(agent)


def open_pause(agent: AgentParts) -> None:
    """The run paused on the session's current branch, as a process opening the session
    now would see it (None when the branch has no open pause)."""
    agent.run = None
    agent.last_state = LoopState.IDLE
    if agent.session.leaf_id is None:  # a new session: nothing recorded, nothing open
        return
    from harnessc.runtime.session import replay  # on first use: start-up stays lean

    open_pause = replay.pending_state(agent.session)
    if open_pause is None:
        return
    data = open_pause.data
    run: RunState | None = None
    recorded = data.get("run")
    if isinstance(recorded, dict):
        try:
            run = RunState.from_dict(recorded)
        except (ValueError, TypeError, KeyError):
            run = None
    if run is None:
        run = _legacy(agent, data)
    if run is None:
        return
    agent.adopt(run)
    agent.budget.usage = run.usage
    agent.budget.warned = run.warned
    if run.limits is not None:  # a limit raised during the run stays raised
        agent.budget.budget = _wider(agent.budget.budget, run.limits)


def _wider(configured: Budget, recorded: Budget) -> Budget:
    """Per limit the larger of the two (None, unlimited, is the largest)."""
    values: dict[str, Any] = {}
    for name in BUDGET_LIMITS:
        mine, theirs = getattr(configured, name), getattr(recorded, name)
        values[name] = None if mine is None or theirs is None else max(mine, theirs)
    return Budget(**values, soft_ratio=configured.soft_ratio)


def _legacy(agent: AgentParts, pause: dict[str, Any]) -> RunState | None:
    messages = agent.context.messages
    reply = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if reply is None:
        return None
    answered = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    external = set(pause.get("external_tool_calls") or [])
    run = RunState(run_id=str(pause.get("run_id") or uuid.uuid4().hex[:12]), reply=reply)
    for call in reply.tool_calls:
        record = CallRecord(call)
        if call.id in answered:
            record.status, record.result, record.committed = "executed", answered[call.id], True
        elif call.id in external:
            record.status, record.started = "awaiting", True
        run.calls.append(record)
    run.plan_committed = True
    run.turn_open = any(r.result is None for r in run.calls)
    run.usage = BudgetUsage.from_dict(pause.get("usage"))
    run.machine = StateMachine(state=LoopState.AWAITING_TOOL if run.awaiting else LoopState.IDLE)
    return run


def record_pause(agent: AgentParts, run: RunState, reason: str) -> None:
    """Write the run-state record of a pause into the session, synced."""
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

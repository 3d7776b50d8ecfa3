"""Rebuild a harness's state from its event log, without calling a model.

``replay_events`` folds a recorded stream (Event objects or their JSON dicts, e.g. the
lines of ``--json`` output) into the same observable state ``AgentHarness.snapshot``
reports at the end of the live run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harnessc.runtime.core.events import Event
from harnessc.runtime.core.loop_states import IllegalTransitionError, LoopState, StateMachine

__all__ = ["ReplayError", "ReplayState", "replay_events"]


class ReplayError(ValueError):
    """An event log the loop contract cannot have produced (names the event's seq)."""


@dataclass(slots=True)
class ReplayState:
    state: str = LoopState.IDLE.value
    messages: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    thinking_level: str | None = None
    active_tools: list[str] | None = None
    pending_tool_calls: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    last_seq: int = 0

    def snapshot(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "messages": self.messages,
            "model": self.model,
            "thinking_level": self.thinking_level,
            "active_tools": self.active_tools,
            "pending_tool_calls": self.pending_tool_calls,
            "usage": self.usage,
        }


def _as_dict(event: Event | dict[str, Any]) -> dict[str, Any]:
    return event.to_dict() if isinstance(event, Event) else event


def replay_events(
    events: Iterable[Event | dict[str, Any]], start: ReplayState | None = None
) -> ReplayState:
    """Fold ``events`` into a ReplayState; transitions are re-checked by the state machine."""
    state = start or ReplayState()
    machine = StateMachine(state=LoopState(state.state))
    chained = start is not None  # a log of its own may start where a reopened run stood
    usage = {"turns": 0, "tool_calls": 0, "tokens": 0, "cost_usd": 0.0}
    usage.update({k: v for k, v in state.usage.items() if k in usage})
    for raw in events:
        data = _as_dict(raw)
        kind = data.get("type")
        state.last_seq = int(data.get("seq", state.last_seq) or state.last_seq)
        if kind == "state_change":
            machine = _transition(machine, data, chained)
            chained = True
        elif kind == "agent_start":
            usage = {"turns": 0, "tool_calls": 0, "tokens": 0, "cost_usd": 0.0}
            state.pending_tool_calls = []
            state.model = data.get("model") or state.model
            state.thinking_level = data.get("thinking_level") or state.thinking_level
            if isinstance(data.get("active_tools"), list):
                state.active_tools = list(data["active_tools"])
        elif kind == "turn_start":
            usage["turns"] += 1
        elif kind == "tool_execution_start":
            usage["tool_calls"] += 1
        elif kind == "message_end":
            message = data.get("message")
            if isinstance(message, dict):
                state.messages.append({k: v for k, v in message.items() if k != "timestamp"})
                if message.get("role") == "assistant":
                    tokens = message.get("usage") or {}
                    usage["tokens"] += _total_tokens(tokens)
                    usage["cost_usd"] += float((tokens.get("cost") or {}).get("total", 0.0))
        elif kind == "agent_pause":
            calls = data.get("pending_tool_calls") or []
            state.pending_tool_calls = [c.get("id", "") for c in calls if isinstance(c, dict)]
        elif kind in ("agent_resume", "agent_end"):
            state.pending_tool_calls = []
        elif kind == "model_update":
            state.model = data.get("model_id")
        elif kind == "thinking_level_update":
            state.thinking_level = data.get("level")
        elif kind == "tools_update":
            state.active_tools = list(data.get("active_tool_names") or [])
        elif kind in ("session_compact", "session_tree"):  # the context was rebuilt
            rebuilt = data.get("messages")
            state.messages = [
                {k: v for k, v in m.items() if k != "timestamp"}
                for m in (rebuilt if isinstance(rebuilt, list) else [])
                if isinstance(m, dict)
            ]
    state.state = machine.state.value
    state.usage = {
        "turns": usage["turns"],
        "tool_calls": usage["tool_calls"],
        "tokens": usage["tokens"],
        "cost_usd": round(float(usage["cost_usd"]), 6),
    }
    return state


def _transition(machine: StateMachine, data: dict[str, Any], chained: bool) -> StateMachine:
    """Apply one state_change; raises ReplayError when it does not chain or is illegal."""
    seq = data.get("seq", "?")
    try:
        source = LoopState(str(data.get("from_state")))
        target = LoopState(str(data.get("to_state")))
    except ValueError as exc:
        raise ReplayError(f"event seq {seq}: {exc}") from None
    if machine.state is LoopState.DONE and source is LoopState.IDLE:
        machine = StateMachine()  # a new run starts a new machine
    elif not chained:
        machine = StateMachine(state=source)
    elif machine.state is not source:
        raise ReplayError(
            f"event seq {seq}: the transition {source.value} -> {target.value} does not "
            f"chain: the previous one ended in {machine.state.value}"
        )
    try:
        machine.transition(target)
    except IllegalTransitionError as exc:
        raise ReplayError(f"event seq {seq}: {exc}") from None
    return machine


def _total_tokens(usage: dict[str, Any]) -> int:
    """The reply's usage total (cached tokens included), as the budget counts it."""
    total = int(usage.get("totalTokens", 0) or 0)
    if total:
        return total
    keys = ("input", "output", "cacheRead", "cacheWrite")
    return sum(int(usage.get(k, 0) or 0) for k in keys)

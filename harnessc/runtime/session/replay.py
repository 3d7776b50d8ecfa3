"""Rebuilding a harness's state from its session, without calling the model.

Pauses (a budget hit, a hook asking for review, external tool calls awaiting their
results) are recorded as ``custom`` entries so they survive a restart:
``customType: "harnessc.pause"`` with ``data {"reason", "pending_tool_calls": [{"id",
"name", "arguments"}], "state", "external_tool_calls", "usage", "run"}``, cleared by a
later ``"harnessc.resume"`` entry (``{"run_id"}``, plus ``"abandoned": true`` when a new
prompt or a tree move left the run, with ``"reason"``). ``run`` is the whole run-state
record (``harnessc.runtime.agent.run_state.RunState.to_dict``) a harness rebuilds the
paused run from; the other keys summarise it for readers of the file. Only the current
branch counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct

from harnessc.runtime.core.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from harnessc.runtime.session.session import Session, SessionContext, SessionEntry, build_context

__all__ = [
    "PAUSE_TYPE",
    "RESUME_TYPE",
    "PauseState",
    "PendingToolCall",
    "ReplayedState",
    "pending_state",
    "record_pause",
    "record_resume",
    "replay_state",
]

PAUSE_TYPE = "harnessc.pause"
RESUME_TYPE = "harnessc.resume"


class PendingToolCall(Struct):
    id: str
    name: str
    arguments: dict[str, Any] = {}

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    def to_tool_call(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments=dict(self.arguments))


class PauseState(Struct):
    """An open pause on the current branch."""

    reason: str
    pending_tool_calls: list[PendingToolCall]
    entry_id: str  # the harnessc.pause entry
    data: dict[str, Any] = {}  # everything the pause recorded


def _pending(raw: Any) -> PendingToolCall | None:
    if isinstance(raw, ToolCall | PendingToolCall):
        return PendingToolCall(raw.id, raw.name, dict(raw.arguments))
    if isinstance(raw, Mapping) and isinstance(raw.get("id"), str):
        args = raw.get("arguments")
        return PendingToolCall(
            raw["id"], str(raw.get("name", "")), dict(args) if isinstance(args, Mapping) else {}
        )
    return None


def record_pause(
    session: Session,
    reason: str,
    pending_tool_calls: Iterable[ToolCall | PendingToolCall | Mapping[str, Any]] = (),
    **extra: Any,
) -> SessionEntry:
    """Record that the run paused (``reason``: e.g. "awaiting_tool", "budget",
    "needs_review"); ``extra`` keys are stored too (e.g. budget usage)."""
    calls = [p.to_dict() for p in (_pending(c) for c in pending_tool_calls) if p is not None]
    return session.append_custom(
        PAUSE_TYPE, {"reason": reason, "pending_tool_calls": calls, **extra}
    )


def record_resume(session: Session, **extra: Any) -> SessionEntry:
    """Record that the paused run continues."""
    return session.append_custom(RESUME_TYPE, dict(extra))


def pending_state(session: Session, branch: list[SessionEntry] | None = None) -> PauseState | None:
    """The open pause of the current branch, or None.

    Pending tool calls whose results were appended after the pause are left out.
    """
    path = branch if branch is not None else session.branch()
    answered: set[str] = set()
    for entry in reversed(path):
        if entry.type == "message" and entry.role == "toolResult":
            call_id = entry.data["message"].get("toolCallId")
            if isinstance(call_id, str):
                answered.add(call_id)
            continue
        if entry.type != "custom":
            continue
        kind = entry.data.get("customType")
        if kind == RESUME_TYPE:
            return None
        if kind == PAUSE_TYPE:
            data = entry.data.get("data")
            data = dict(data) if isinstance(data, Mapping) else {}
            raw = data.get("pending_tool_calls")
            calls = [p for p in (_pending(c) for c in raw or ()) if p is not None]
            return PauseState(
                reason=str(data.get("reason", "")),
                pending_tool_calls=[c for c in calls if c.id not in answered],
                entry_id=entry.id,
                data=data,
            )
    return None


class ReplayedState(Struct):
    """What a harness needs to continue a session."""

    messages: list[Message]
    context: SessionContext
    model: tuple[str, str] | None = None  # (provider, model id)
    thinking_level: str | None = None
    active_tool_names: list[str] | None = None
    pause: PauseState | None = None
    leaf_id: str | None = None
    name: str | None = None

    @property
    def paused(self) -> bool:
        return self.pause is not None

    @property
    def pending_tool_calls(self) -> list[PendingToolCall]:
        return list(self.pause.pending_tool_calls) if self.pause else []

    @property
    def unanswered_tool_calls(self) -> list[ToolCall]:
        """Tool calls of the last assistant message that have no result in the context
        (a run that stopped mid-batch, e.g. a crash); a harness must answer or drop
        them before calling the model again."""
        results = {m.tool_call_id for m in self.messages if isinstance(m, ToolResultMessage)}
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return [c for c in message.tool_calls if c.id not in results]
        return []


def replay_state(session: Session) -> ReplayedState:
    """The harness state recorded in ``session`` (current branch), model never called."""
    path = session.branch()
    context = build_context(path)
    return ReplayedState(
        messages=context.messages,
        context=context,
        model=context.model,
        thinking_level=context.thinking_level,
        active_tool_names=context.active_tool_names,
        pause=pending_state(session, path),
        leaf_id=session.leaf_id,
        name=session.name,
    )

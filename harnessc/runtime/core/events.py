"""The typed event stream: one record per moment, pi's names, dotted aliases.

Every event carries a sequence number and a timestamp and turns into JSON with
``to_dict()``; ``EventLog`` keeps them append-only and replays them from any offset.
The events are msgspec ``Struct`` classes, keyword-only: declared as fields and types,
built in C when the module is imported (``dataclass()`` would compile some thirty
``__init__`` methods each time a run starts); ``msgspec.structs.replace``/``asdict``
work on them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from msgspec import Struct, field

from harnessc.runtime.core.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from harnessc.runtime.core.moments import MOMENTS

__all__ = [
    "EVENT_ALIASES",
    "EVENT_TYPES",
    "AbortEvent",
    "AgentEndEvent",
    "AgentPauseEvent",
    "AgentResumeEvent",
    "AgentStartEvent",
    "BudgetWarnEvent",
    "ErrorEvent",
    "Event",
    "HandoverProgressEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ModelFallbackEvent",
    "ModelUpdateEvent",
    "NoticeEvent",
    "PlanCommitEvent",
    "ProviderResponseEvent",
    "QueueUpdateEvent",
    "ResourcesUpdateEvent",
    "RetryEvent",
    "SessionCompactEvent",
    "SessionTreeEvent",
    "SubagentEvent",
    "StateChangeEvent",
    "ThinkingLevelUpdateEvent",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "ToolsUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
    "canonical_event_name",
    "event_matches",
    "to_jsonable",
    "describe_exception",
]


# The values ``to_jsonable`` returns as they are (by exact type: a subclass, an enum's
# member among them, takes the longer way).
_PLAIN: frozenset[type] = frozenset({str, int, float, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """Turn messages, dataclasses and enums into plain JSON values."""
    if type(value) in _PLAIN or isinstance(value, str | int | float | bool):
        return value
    to_dict = getattr(value, "to_dict", None)
    if to_dict is not None and callable(to_dict):
        return to_dict()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Struct):
        return {name: to_jsonable(getattr(value, name)) for name in value.__struct_fields__}
    if hasattr(type(value), "__dataclass_fields__"):
        import dataclasses  # loaded already, by the module that made the value

        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    return repr(value)


class Event(Struct, kw_only=True):
    type: ClassVar[str] = "event"
    seq: int = 0
    timestamp: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        plain = _PLAIN
        for name in self.__struct_fields__:
            value = getattr(self, name)
            out[name] = value if type(value) in plain else to_jsonable(value)
        return out


class AgentStartEvent(Event, kw_only=True):
    type: ClassVar[str] = "agent_start"
    prompt: str = ""
    run_id: str = ""
    # The settings the run starts with, so a replay of the log knows them too.
    model: str = ""
    thinking_level: str = ""
    active_tools: list[str] = []


class AgentEndEvent(Event, kw_only=True):
    type: ClassVar[str] = "agent_end"
    run_id: str = ""
    status: str = "done"
    reason: str = ""
    messages: list[Message] = []
    output: Any = None  # the typed result as JSON (``output:``), when the run gave one
    # what the run's tree of agents used, in total and by agent path (the harness's
    # usage tree fills it in before the event reaches a subscriber)
    usage: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = Event.to_dict(self)
        if self.output is None:
            del out["output"]
        if self.usage is None:
            del out["usage"]
        return out


class TurnStartEvent(Event, kw_only=True):
    type: ClassVar[str] = "turn_start"
    turn: int = 0


class TurnEndEvent(Event, kw_only=True):
    type: ClassVar[str] = "turn_end"
    turn: int = 0
    message: AssistantMessage | None = None
    tool_results: list[ToolResultMessage] = []


class MessageStartEvent(Event, kw_only=True):
    type: ClassVar[str] = "message_start"
    message: Message | None = None


class MessageUpdateEvent(Event, kw_only=True):
    """A streamed delta of the assistant reply; ``message`` is the reply so far."""

    type: ClassVar[str] = "message_update"
    delta_type: str = ""  # text_delta, thinking_delta, toolcall_delta, ...
    delta: str = ""
    content_index: int = 0
    message: AssistantMessage | None = None

    def to_dict(self) -> dict[str, Any]:
        # The partial message is omitted: a delta stream re-sent whole is quadratic.
        return {
            "type": self.type,
            "seq": self.seq,
            "timestamp": self.timestamp,
            "delta_type": self.delta_type,
            "delta": self.delta,
            "content_index": self.content_index,
        }


class MessageEndEvent(Event, kw_only=True):
    type: ClassVar[str] = "message_end"
    message: Message | None = None
    entry_id: str | None = None


class PlanCommitEvent(Event, kw_only=True):
    """The tool calls the loop is about to run (after the after_plan hook)."""

    type: ClassVar[str] = "plan_commit"
    tool_calls: list[ToolCall] = []


class ToolExecutionStartEvent(Event, kw_only=True):
    type: ClassVar[str] = "tool_execution_start"
    tool_call_id: str = ""
    tool_name: str = ""
    args: dict[str, Any] = {}


class ToolExecutionUpdateEvent(Event, kw_only=True):
    type: ClassVar[str] = "tool_execution_update"
    tool_call_id: str = ""
    tool_name: str = ""
    partial_result: Any = None


class ToolExecutionEndEvent(Event, kw_only=True):
    type: ClassVar[str] = "tool_execution_end"
    tool_call_id: str = ""
    tool_name: str = ""
    result: ToolResultMessage | None = None
    is_error: bool = False
    duration_ms: float = 0.0


class BudgetWarnEvent(Event, kw_only=True):
    type: ClassVar[str] = "budget_warn"
    limit: str = ""
    used: float = 0
    maximum: float = 0
    level: str = "soft"  # "soft": past the warning threshold; "hard": limit hit


class AgentPauseEvent(Event, kw_only=True):
    type: ClassVar[str] = "agent_pause"
    run_id: str = ""
    reason: str = ""
    pending_tool_calls: list[ToolCall] = []


class AgentResumeEvent(Event, kw_only=True):
    type: ClassVar[str] = "agent_resume"
    run_id: str = ""
    reason: str = ""


class StateChangeEvent(Event, kw_only=True):
    type: ClassVar[str] = "state_change"
    from_state: str = ""
    to_state: str = ""


def describe_exception(exc: BaseException | None) -> str:
    """An exception as an error event's message says it: ``TypeName: text``."""
    if exc is None:
        return "unknown error"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ErrorEvent(Event, kw_only=True):
    """Something failed and was contained: a hook, a provider call, an extension."""

    type: ClassVar[str] = "error"
    source: str = ""
    message: str = ""
    fatal: bool = False


class NoticeEvent(Event, kw_only=True):
    type: ClassVar[str] = "notice"
    source: str = ""
    level: str = "info"  # info | warning
    message: str = ""


class RetryEvent(Event, kw_only=True):
    type: ClassVar[str] = "retry"
    attempt: int = 0
    max_retries: int = 0
    delay_ms: int = 0
    status: int | None = None
    error: str = ""


class ProviderResponseEvent(Event, kw_only=True):
    type: ClassVar[str] = "provider_response"
    status: int = 0


class SessionCompactEvent(Event, kw_only=True):
    type: ClassVar[str] = "session_compact"
    compaction_entry: dict[str, Any] = {}
    from_hook: bool = False
    messages: list[Message] = []  # the rebuilt context (for replay)


class SessionTreeEvent(Event, kw_only=True):
    type: ClassVar[str] = "session_tree"
    new_leaf_id: str | None = None
    old_leaf_id: str | None = None
    summary_entry: dict[str, Any] | None = None
    from_hook: bool = False
    messages: list[Message] = []  # the rebuilt context (for replay)


class ModelUpdateEvent(Event, kw_only=True):
    type: ClassVar[str] = "model_update"
    key: str = ""
    provider: str = ""
    model_id: str = ""


class ModelFallbackEvent(Event, kw_only=True):
    """A model request failed (after its retries); the same request goes to ``to_model``."""

    type: ClassVar[str] = "model_fallback"
    from_model: str = ""  # keys of the spec's models
    to_model: str = ""
    reason: str = ""  # the failure's kind: rate_limit, overloaded, server_error, ...
    error: str = ""  # the failed request's error text (redacted)


class ThinkingLevelUpdateEvent(Event, kw_only=True):
    type: ClassVar[str] = "thinking_level_update"
    level: str = ""


class ToolsUpdateEvent(Event, kw_only=True):
    type: ClassVar[str] = "tools_update"
    active_tool_names: list[str] = []


class ResourcesUpdateEvent(Event, kw_only=True):
    type: ClassVar[str] = "resources_update"
    skills: list[str] = []
    prompt_templates: list[str] = []
    diagnostics: list[str] = []
    context_files: list[str] = []


class QueueUpdateEvent(Event, kw_only=True):
    type: ClassVar[str] = "queue_update"
    steering: list[str] = []
    follow_up: list[str] = []


class AbortEvent(Event, kw_only=True):
    type: ClassVar[str] = "abort"
    reason: str = ""


class SubagentEvent(Event, kw_only=True):
    """An event of a sub-agent, passed up to its parent's stream.

    ``agent_path`` names the agent it comes from, top-level first (``["lead",
    "reviewer"]``); ``tool_call_id`` is the parent's hand-over call it runs in.
    """

    type: ClassVar[str] = "subagent"
    agent_path: list[str] = []
    tool_call_id: str = ""
    event: Event | None = None


class HandoverProgressEvent(Event, kw_only=True):
    """A working hand-over's progress, from the parent that runs it: sent when its
    sub-agent starts or resumes, starts a turn, gets a model reply, and ends or pauses.

    ``agent_path`` names the sub-agent (top-level first), ``tool_call_id`` the parent's
    hand-over call; ``turn`` counts the turns it started, ``input_tokens`` (cached ones
    included) and ``output_tokens`` its replies' tokens so far; ``status`` is
    ``working``, ``paused`` (the tree paused: its counts start again when it resumes) or
    ``ended``.
    """

    type: ClassVar[str] = "handover_progress"
    agent_path: list[str] = []
    tool_call_id: str = ""
    turn: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    status: str = "working"

    @property
    def tokens(self) -> int:
        """Every token of its replies so far."""
        return self.input_tokens + self.output_tokens


# The event moments of the catalog (core/moments.py), each with its record above.
_RECORDS: dict[str, type[Event]] = {cls.type: cls for cls in Event.__subclasses__()}
EVENT_TYPES: dict[str, type[Event]] = {m.name: _RECORDS[m.name] for m in MOMENTS if not m.acting}

# Dotted names (docs/hooks.md) -> (canonical event type, filter or None).
EVENT_ALIASES: dict[str, tuple[str, Callable[[Any], bool] | None]] = {
    named.name: (m.name, named.only) for m in MOMENTS for named in m.dotted
}


def canonical_event_name(name: str) -> str | None:
    """The canonical event type for a name or alias, or None if it names no event."""
    if name in EVENT_TYPES:
        return name
    alias = EVENT_ALIASES.get(name)
    return alias[0] if alias else None


def event_matches(name: str, event: Event) -> bool:
    """True when ``event`` is what a subscriber to ``name`` (canonical or alias) wants."""
    if name == event.type:
        return True
    alias = EVENT_ALIASES.get(name)
    if alias is None or alias[0] != event.type:
        return False
    return alias[1] is None or alias[1](event)

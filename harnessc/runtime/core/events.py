"""The typed event stream: one record per moment, pi's names, dotted aliases.

Every event carries a sequence number and a timestamp and turns into JSON with
``to_dict()``; ``EventLog`` keeps them append-only and replays them from any offset.
The events are ``Record`` classes (slotted, ``__init__`` written out): they compare,
print, match and answer ``dataclasses.fields``/``asdict``/``replace`` as dataclasses do,
without ``dataclass()`` compiling some thirty classes each time a run starts.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from harnessc.runtime.core.messages import AssistantMessage, Message, ToolCall, ToolResultMessage
from harnessc.runtime.support.records import NEW_DICT, NEW_LIST, NOW, Record

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


def to_jsonable(value: Any) -> Any:
    """Turn messages, dataclasses and enums into plain JSON values."""
    if value is None or isinstance(value, str | int | float | bool):
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
    if isinstance(value, Record):
        return {name: to_jsonable(getattr(value, name)) for name in value._field_names}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        return str(value)
    return repr(value)


class Event(Record):
    type: ClassVar[str] = "event"
    __slots__ = ("seq", "timestamp")
    seq: int
    timestamp: float

    def __init__(self, *, seq: int = 0, timestamp: float = NOW) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        for name in self._field_names:
            out[name] = to_jsonable(getattr(self, name))
        return out


class AgentStartEvent(Event):
    type: ClassVar[str] = "agent_start"
    __slots__ = ("prompt", "run_id", "model", "thinking_level", "active_tools")
    prompt: str
    run_id: str
    # The settings the run starts with, so a replay of the log knows them too.
    model: str
    thinking_level: str
    active_tools: list[str]

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        prompt: str = "",
        run_id: str = "",
        model: str = "",
        thinking_level: str = "",
        active_tools: list[str] = NEW_LIST,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.prompt = prompt
        self.run_id = run_id
        self.model = model
        self.thinking_level = thinking_level
        self.active_tools = [] if active_tools is NEW_LIST else active_tools


class AgentEndEvent(Event):
    type: ClassVar[str] = "agent_end"
    __slots__ = ("run_id", "status", "reason", "messages", "output", "usage")
    run_id: str
    status: str
    reason: str
    messages: list[Message]
    output: Any  # the typed result as JSON (``output:``), when the run gave one
    # what the run's tree of agents used, in total and by agent path (the harness's
    # usage tree fills it in before the event reaches a subscriber)
    usage: dict[str, Any] | None

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        run_id: str = "",
        status: str = "done",
        reason: str = "",
        messages: list[Message] = NEW_LIST,
        output: Any = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.run_id = run_id
        self.status = status
        self.reason = reason
        self.messages = [] if messages is NEW_LIST else messages
        self.output = output
        self.usage = usage

    def to_dict(self) -> dict[str, Any]:
        out = Event.to_dict(self)
        if self.output is None:
            del out["output"]
        if self.usage is None:
            del out["usage"]
        return out


class TurnStartEvent(Event):
    type: ClassVar[str] = "turn_start"
    __slots__ = ("turn",)
    turn: int

    def __init__(self, *, seq: int = 0, timestamp: float = NOW, turn: int = 0) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.turn = turn


class TurnEndEvent(Event):
    type: ClassVar[str] = "turn_end"
    __slots__ = ("turn", "message", "tool_results")
    turn: int
    message: AssistantMessage | None
    tool_results: list[ToolResultMessage]

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        turn: int = 0,
        message: AssistantMessage | None = None,
        tool_results: list[ToolResultMessage] = NEW_LIST,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.turn = turn
        self.message = message
        self.tool_results = [] if tool_results is NEW_LIST else tool_results


class MessageStartEvent(Event):
    type: ClassVar[str] = "message_start"
    __slots__ = ("message",)
    message: Message | None

    def __init__(
        self, *, seq: int = 0, timestamp: float = NOW, message: Message | None = None
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.message = message


class MessageUpdateEvent(Event):
    """A streamed delta of the assistant reply; ``message`` is the reply so far."""

    type: ClassVar[str] = "message_update"
    __slots__ = ("delta_type", "delta", "content_index", "message")
    delta_type: str  # text_delta, thinking_delta, toolcall_delta, ...
    delta: str
    content_index: int
    message: AssistantMessage | None

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        delta_type: str = "",
        delta: str = "",
        content_index: int = 0,
        message: AssistantMessage | None = None,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.delta_type = delta_type
        self.delta = delta
        self.content_index = content_index
        self.message = message

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


class MessageEndEvent(Event):
    type: ClassVar[str] = "message_end"
    __slots__ = ("message", "entry_id")
    message: Message | None
    entry_id: str | None

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        message: Message | None = None,
        entry_id: str | None = None,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.message = message
        self.entry_id = entry_id


class PlanCommitEvent(Event):
    """The tool calls the loop is about to run (after the after_plan hook)."""

    type: ClassVar[str] = "plan_commit"
    __slots__ = ("tool_calls",)
    tool_calls: list[ToolCall]

    def __init__(
        self, *, seq: int = 0, timestamp: float = NOW, tool_calls: list[ToolCall] = NEW_LIST
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.tool_calls = [] if tool_calls is NEW_LIST else tool_calls


class ToolExecutionStartEvent(Event):
    type: ClassVar[str] = "tool_execution_start"
    __slots__ = ("tool_call_id", "tool_name", "args")
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        tool_call_id: str = "",
        tool_name: str = "",
        args: dict[str, Any] = NEW_DICT,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.args = {} if args is NEW_DICT else args


class ToolExecutionUpdateEvent(Event):
    type: ClassVar[str] = "tool_execution_update"
    __slots__ = ("tool_call_id", "tool_name", "partial_result")
    tool_call_id: str
    tool_name: str
    partial_result: Any

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        tool_call_id: str = "",
        tool_name: str = "",
        partial_result: Any = None,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.partial_result = partial_result


class ToolExecutionEndEvent(Event):
    type: ClassVar[str] = "tool_execution_end"
    __slots__ = ("tool_call_id", "tool_name", "result", "is_error", "duration_ms")
    tool_call_id: str
    tool_name: str
    result: ToolResultMessage | None
    is_error: bool
    duration_ms: float

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        tool_call_id: str = "",
        tool_name: str = "",
        result: ToolResultMessage | None = None,
        is_error: bool = False,
        duration_ms: float = 0.0,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.result = result
        self.is_error = is_error
        self.duration_ms = duration_ms


class BudgetWarnEvent(Event):
    type: ClassVar[str] = "budget_warn"
    __slots__ = ("limit", "used", "maximum", "level")
    limit: str
    used: float
    maximum: float
    level: str  # "soft": past the warning threshold; "hard": limit hit

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        limit: str = "",
        used: float = 0,
        maximum: float = 0,
        level: str = "soft",
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.limit = limit
        self.used = used
        self.maximum = maximum
        self.level = level


class AgentPauseEvent(Event):
    type: ClassVar[str] = "agent_pause"
    __slots__ = ("run_id", "reason", "pending_tool_calls")
    run_id: str
    reason: str
    pending_tool_calls: list[ToolCall]

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        run_id: str = "",
        reason: str = "",
        pending_tool_calls: list[ToolCall] = NEW_LIST,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.run_id = run_id
        self.reason = reason
        self.pending_tool_calls = [] if pending_tool_calls is NEW_LIST else pending_tool_calls


class AgentResumeEvent(Event):
    type: ClassVar[str] = "agent_resume"
    __slots__ = ("run_id", "reason")
    run_id: str
    reason: str

    def __init__(
        self, *, seq: int = 0, timestamp: float = NOW, run_id: str = "", reason: str = ""
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.run_id = run_id
        self.reason = reason


class StateChangeEvent(Event):
    type: ClassVar[str] = "state_change"
    __slots__ = ("from_state", "to_state")
    from_state: str
    to_state: str

    def __init__(
        self, *, seq: int = 0, timestamp: float = NOW, from_state: str = "", to_state: str = ""
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.from_state = from_state
        self.to_state = to_state


def describe_exception(exc: BaseException | None) -> str:
    """An exception as an error event's message says it: ``TypeName: text``."""
    if exc is None:
        return "unknown error"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class ErrorEvent(Event):
    """Something failed and was contained: a hook, a provider call, an extension."""

    type: ClassVar[str] = "error"
    __slots__ = ("source", "message", "fatal")
    source: str
    message: str
    fatal: bool

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        source: str = "",
        message: str = "",
        fatal: bool = False,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.source = source
        self.message = message
        self.fatal = fatal


class NoticeEvent(Event):
    type: ClassVar[str] = "notice"
    __slots__ = ("source", "level", "message")
    source: str
    level: str  # info | warning
    message: str

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        source: str = "",
        level: str = "info",
        message: str = "",
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.source = source
        self.level = level
        self.message = message


class RetryEvent(Event):
    type: ClassVar[str] = "retry"
    __slots__ = ("attempt", "max_retries", "delay_ms", "status", "error")
    attempt: int
    max_retries: int
    delay_ms: int
    status: int | None
    error: str

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        attempt: int = 0,
        max_retries: int = 0,
        delay_ms: int = 0,
        status: int | None = None,
        error: str = "",
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.attempt = attempt
        self.max_retries = max_retries
        self.delay_ms = delay_ms
        self.status = status
        self.error = error


class ProviderResponseEvent(Event):
    type: ClassVar[str] = "provider_response"
    __slots__ = ("status",)
    status: int

    def __init__(self, *, seq: int = 0, timestamp: float = NOW, status: int = 0) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.status = status


class SessionCompactEvent(Event):
    type: ClassVar[str] = "session_compact"
    __slots__ = ("compaction_entry", "from_hook", "messages")
    compaction_entry: dict[str, Any]
    from_hook: bool
    messages: list[Message]  # the rebuilt context (for replay)

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        compaction_entry: dict[str, Any] = NEW_DICT,
        from_hook: bool = False,
        messages: list[Message] = NEW_LIST,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.compaction_entry = {} if compaction_entry is NEW_DICT else compaction_entry
        self.from_hook = from_hook
        self.messages = [] if messages is NEW_LIST else messages


class SessionTreeEvent(Event):
    type: ClassVar[str] = "session_tree"
    __slots__ = ("new_leaf_id", "old_leaf_id", "summary_entry", "from_hook", "messages")
    new_leaf_id: str | None
    old_leaf_id: str | None
    summary_entry: dict[str, Any] | None
    from_hook: bool
    messages: list[Message]  # the rebuilt context (for replay)

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        new_leaf_id: str | None = None,
        old_leaf_id: str | None = None,
        summary_entry: dict[str, Any] | None = None,
        from_hook: bool = False,
        messages: list[Message] = NEW_LIST,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.new_leaf_id = new_leaf_id
        self.old_leaf_id = old_leaf_id
        self.summary_entry = summary_entry
        self.from_hook = from_hook
        self.messages = [] if messages is NEW_LIST else messages


class ModelUpdateEvent(Event):
    type: ClassVar[str] = "model_update"
    __slots__ = ("key", "provider", "model_id")
    key: str
    provider: str
    model_id: str

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        key: str = "",
        provider: str = "",
        model_id: str = "",
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.key = key
        self.provider = provider
        self.model_id = model_id


class ModelFallbackEvent(Event):
    """A model request failed (after its retries); the same request goes to ``to_model``."""

    type: ClassVar[str] = "model_fallback"
    __slots__ = ("from_model", "to_model", "reason", "error")
    from_model: str  # keys of the spec's models
    to_model: str
    reason: str  # the failure's kind: rate_limit, overloaded, server_error, ...
    error: str  # the failed request's error text (redacted)

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        from_model: str = "",
        to_model: str = "",
        reason: str = "",
        error: str = "",
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.from_model = from_model
        self.to_model = to_model
        self.reason = reason
        self.error = error


class ThinkingLevelUpdateEvent(Event):
    type: ClassVar[str] = "thinking_level_update"
    __slots__ = ("level",)
    level: str

    def __init__(self, *, seq: int = 0, timestamp: float = NOW, level: str = "") -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.level = level


class ToolsUpdateEvent(Event):
    type: ClassVar[str] = "tools_update"
    __slots__ = ("active_tool_names",)
    active_tool_names: list[str]

    def __init__(
        self, *, seq: int = 0, timestamp: float = NOW, active_tool_names: list[str] = NEW_LIST
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.active_tool_names = [] if active_tool_names is NEW_LIST else active_tool_names


class ResourcesUpdateEvent(Event):
    type: ClassVar[str] = "resources_update"
    __slots__ = ("skills", "prompt_templates", "diagnostics", "context_files")
    skills: list[str]
    prompt_templates: list[str]
    diagnostics: list[str]
    context_files: list[str]

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        skills: list[str] = NEW_LIST,
        prompt_templates: list[str] = NEW_LIST,
        diagnostics: list[str] = NEW_LIST,
        context_files: list[str] = NEW_LIST,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.skills = [] if skills is NEW_LIST else skills
        self.prompt_templates = [] if prompt_templates is NEW_LIST else prompt_templates
        self.diagnostics = [] if diagnostics is NEW_LIST else diagnostics
        self.context_files = [] if context_files is NEW_LIST else context_files


class QueueUpdateEvent(Event):
    type: ClassVar[str] = "queue_update"
    __slots__ = ("steering", "follow_up")
    steering: list[str]
    follow_up: list[str]

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        steering: list[str] = NEW_LIST,
        follow_up: list[str] = NEW_LIST,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.steering = [] if steering is NEW_LIST else steering
        self.follow_up = [] if follow_up is NEW_LIST else follow_up


class AbortEvent(Event):
    type: ClassVar[str] = "abort"
    __slots__ = ("reason",)
    reason: str

    def __init__(self, *, seq: int = 0, timestamp: float = NOW, reason: str = "") -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.reason = reason


class SubagentEvent(Event):
    """An event of a sub-agent, passed up to its parent's stream.

    ``agent_path`` names the agent it comes from, top-level first (``["lead",
    "reviewer"]``); ``tool_call_id`` is the parent's hand-over call it runs in.
    """

    type: ClassVar[str] = "subagent"
    __slots__ = ("agent_path", "tool_call_id", "event")
    agent_path: list[str]
    tool_call_id: str
    event: Event | None

    def __init__(
        self,
        *,
        seq: int = 0,
        timestamp: float = NOW,
        agent_path: list[str] = NEW_LIST,
        tool_call_id: str = "",
        event: Event | None = None,
    ) -> None:
        self.seq = seq
        self.timestamp = time.time() if timestamp is NOW else timestamp
        self.agent_path = [] if agent_path is NEW_LIST else agent_path
        self.tool_call_id = tool_call_id
        self.event = event

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "seq": self.seq,
            "timestamp": self.timestamp,
            "agent_path": list(self.agent_path),
            "tool_call_id": self.tool_call_id,
            "event": self.event.to_dict() if self.event is not None else None,
        }


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (
        AgentStartEvent,
        AgentEndEvent,
        TurnStartEvent,
        TurnEndEvent,
        MessageStartEvent,
        MessageUpdateEvent,
        MessageEndEvent,
        PlanCommitEvent,
        ToolExecutionStartEvent,
        ToolExecutionUpdateEvent,
        ToolExecutionEndEvent,
        BudgetWarnEvent,
        AgentPauseEvent,
        AgentResumeEvent,
        StateChangeEvent,
        ErrorEvent,
        NoticeEvent,
        RetryEvent,
        ProviderResponseEvent,
        SessionCompactEvent,
        SessionTreeEvent,
        ModelUpdateEvent,
        ModelFallbackEvent,
        ThinkingLevelUpdateEvent,
        ToolsUpdateEvent,
        ResourcesUpdateEvent,
        QueueUpdateEvent,
        AbortEvent,
        SubagentEvent,
    )
}

# Dotted names (docs/hooks.md) -> (canonical event type, filter or None).
EVENT_ALIASES: dict[str, tuple[str, Callable[[Any], bool] | None]] = {
    "session.start": ("agent_start", None),
    "plan.draft": (
        "message_end",
        lambda e: isinstance(getattr(e, "message", None), AssistantMessage),
    ),
    "plan.commit": ("plan_commit", None),
    "step.start": ("turn_start", None),
    "step.end": ("turn_end", None),
    "tool.call": ("tool_execution_start", None),
    "tool.result": ("tool_execution_end", lambda e: not getattr(e, "is_error", False)),
    "tool.error": ("tool_execution_end", lambda e: bool(getattr(e, "is_error", False))),
    "budget.warn": ("budget_warn", None),
    "session.pause": ("agent_pause", None),
    "session.complete": ("agent_end", None),
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

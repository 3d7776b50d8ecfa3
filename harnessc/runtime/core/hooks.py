"""Hook moments, their aliases across the three designs, and the results hooks may return.

A hook is a handler registered on a moment with ``harness.on(name, handler)`` or
declared as a ``HookSpec`` in the options. Handlers run in registration order; sync
or async; they receive the moment's event and may return the moment's result type (or
a dict with the same keys, or None).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.events import EVENT_ALIASES, EVENT_TYPES
from harnessc.runtime.core.messages import Message, ToolCall, Usage, UserContent
from harnessc.runtime.support.records import NEW_LIST, Record

__all__ = [
    "ACTING_HOOKS",
    "APPROVAL_PAUSE",
    "HOOK_ALIASES",
    "HOOK_NAMES",
    "MOMENT_RESULT_TYPES",
    "PERMISSION_PAUSE",
    "SEED_004_TOPICS",
    "AfterPlanEvent",
    "AfterPlanResult",
    "AfterProviderResponseEvent",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "BeforeProviderPayloadEvent",
    "BeforeProviderPayloadResult",
    "BeforeProviderRequestEvent",
    "BeforeProviderRequestResult",
    "BeforeStopEvent",
    "ContextEvent",
    "ContextResult",
    "FailRun",
    "HookProtocolError",
    "HookSpec",
    "PauseRequest",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionBeforeTreeEvent",
    "SessionBeforeTreeResult",
    "StopDecision",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolResultEvent",
    "ToolResultPatch",
    "UnknownHookError",
    "asks_for_approval",
    "canonical_hook_name",
    "hook_result_problem",
]

# Moments where handlers act (their return value changes what the loop does). Each
# receives its own event type below; none of these is part of the event stream.
ACTING_HOOKS: tuple[str, ...] = (
    "before_agent_start",
    "context",
    "before_provider_request",
    "before_provider_payload",
    "after_provider_response",
    "after_plan",
    "tool_call",
    "tool_result",
    "before_stop",
    "on_budget_exceeded",
    "session_before_compact",
    "session_before_tree",
)

# Every other alias (the state machine's topics, older names) -> canonical moment.
HOOK_ALIASES: dict[str, str] = {
    "before_plan": "before_agent_start",
    "before_step": "context",
    "before_tool_call": "tool_call",
    "after_tool_call": "tool_result",
    "after_step": "turn_end",
    "on_complete": "agent_end",
    "budget_exceeded": "on_budget_exceeded",
    "turn_stop": "before_stop",
    "on_pause": "agent_pause",
    "on_error": "error",
}

SEED_004_TOPICS: tuple[str, ...] = (
    "before_plan",
    "after_plan",
    "before_tool_call",
    "after_tool_call",
    "before_step",
    "after_step",
    "on_error",
    "on_pause",
    "on_budget_exceeded",
    "on_complete",
)

HOOK_NAMES: frozenset[str] = frozenset(
    set(ACTING_HOOKS) | set(HOOK_ALIASES) | set(EVENT_TYPES) | set(EVENT_ALIASES)
)


class UnknownHookError(ValueError):
    pass


def canonical_hook_name(name: str) -> str:
    """The canonical moment for any accepted name; raises UnknownHookError otherwise."""
    if name in ACTING_HOOKS or name in EVENT_TYPES:
        return name
    if name in EVENT_ALIASES:
        return EVENT_ALIASES[name][0]
    alias = HOOK_ALIASES.get(name)
    if alias is not None:
        return alias
    close = difflib.get_close_matches(name, sorted(HOOK_NAMES), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownHookError(
        f"unknown hook {name!r}{hint}; valid names: {', '.join(sorted(HOOK_NAMES))}"
    )


class HookSpec(Record):
    """A handler declared in the options: registered on the harness at construction."""

    __slots__ = ("moment", "handler", "matcher", "name", "timeout_s", "_pattern")
    moment: str
    handler: Callable[..., Any]
    matcher: str | None  # regex over the tool name (tool moments only)
    name: str | None
    timeout_s: float | None
    _pattern: re.Pattern[str] | None  # the compiled matcher (not a field)

    def __init__(
        self,
        moment: str,
        handler: Callable[..., Any],
        matcher: str | None = None,
        name: str | None = None,
        timeout_s: float | None = None,
    ) -> None:
        self.moment = moment
        self.handler = handler
        self.matcher = matcher
        self.name = name
        self.timeout_s = timeout_s
        canonical_hook_name(moment)
        self._pattern = re.compile(matcher) if matcher else None

    def matches_tool(self, tool_name: str | None) -> bool:
        """A matcher is a regex over the whole tool name (``write|edit``)."""
        if self._pattern is None or tool_name is None:
            return True
        return self._pattern.fullmatch(tool_name) is not None


def accepts_context(handler: Callable[..., Any]) -> bool:
    """True when ``handler`` requires a second positional argument (the harness)."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return False
    required = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(required) >= 2


# -- hook events --------------------------------------------------------------


class BeforeAgentStartEvent(Record):
    __slots__ = ("prompt", "images", "system_prompt", "resources", "hook")
    prompt: str
    images: list[UserContent] | None
    system_prompt: str
    resources: Any
    hook: str

    def __init__(
        self,
        prompt: str,
        images: list[UserContent] | None,
        system_prompt: str,
        resources: Any,
        hook: str = "before_agent_start",
    ) -> None:
        self.prompt = prompt
        self.images = images
        self.system_prompt = system_prompt
        self.resources = resources
        self.hook = hook


class ContextEvent(Record):
    __slots__ = ("messages", "turn", "hook")
    messages: list[Message]
    turn: int
    hook: str

    def __init__(self, messages: list[Message], turn: int = 0, hook: str = "context") -> None:
        self.messages = messages
        self.turn = turn
        self.hook = hook


class BeforeProviderRequestEvent(Record):
    __slots__ = ("model", "session_id", "stream_options", "hook")
    model: Any
    session_id: str | None
    stream_options: Any
    hook: str

    def __init__(
        self,
        model: Any,
        session_id: str | None,
        stream_options: Any,
        hook: str = "before_provider_request",
    ) -> None:
        self.model = model
        self.session_id = session_id
        self.stream_options = stream_options
        self.hook = hook


class BeforeProviderPayloadEvent(Record):
    __slots__ = ("model", "payload", "hook")
    model: Any
    payload: Any
    hook: str

    def __init__(self, model: Any, payload: Any, hook: str = "before_provider_payload") -> None:
        self.model = model
        self.payload = payload
        self.hook = hook


class AfterProviderResponseEvent(Record):
    __slots__ = ("status", "headers", "hook")
    status: int
    headers: dict[str, str]
    hook: str

    def __init__(
        self, status: int, headers: dict[str, str], hook: str = "after_provider_response"
    ) -> None:
        self.status = status
        self.headers = headers
        self.hook = hook


class AfterPlanEvent(Record):
    __slots__ = ("tool_calls", "message", "hook")
    tool_calls: list[ToolCall]
    message: Any
    hook: str

    def __init__(
        self, tool_calls: list[ToolCall], message: Any = None, hook: str = "after_plan"
    ) -> None:
        self.tool_calls = tool_calls
        self.message = message
        self.hook = hook


class ToolCallEvent(Record):
    __slots__ = ("tool_call_id", "tool_name", "input", "hook")
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    hook: str

    def __init__(
        self, tool_call_id: str, tool_name: str, input: dict[str, Any], hook: str = "tool_call"
    ) -> None:
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.input = input
        self.hook = hook


class ToolResultEvent(Record):
    __slots__ = (
        "tool_call_id",
        "tool_name",
        "input",
        "content",
        "details",
        "is_error",
        "usage",
        "hook",
    )
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    content: list[UserContent]
    details: Any
    is_error: bool
    usage: Usage | None
    hook: str

    def __init__(
        self,
        tool_call_id: str,
        tool_name: str,
        input: dict[str, Any],
        content: list[UserContent],
        details: Any,
        is_error: bool,
        usage: Usage | None = None,
        hook: str = "tool_result",
    ) -> None:
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.input = input
        self.content = content
        self.details = details
        self.is_error = is_error
        self.usage = usage
        self.hook = hook


class BeforeStopEvent(Record):
    """The model replied without tool calls: the run would stop here."""

    __slots__ = ("message", "messages", "hook")
    message: Any
    messages: list[Message]
    hook: str

    def __init__(self, message: Any, messages: list[Message], hook: str = "before_stop") -> None:
        self.message = message
        self.messages = messages
        self.hook = hook


class SessionBeforeCompactEvent(Record):
    __slots__ = ("preparation", "branch_entries", "custom_instructions", "hook")
    preparation: Any
    branch_entries: list[Any]
    custom_instructions: str | None
    hook: str

    def __init__(
        self,
        preparation: Any,
        branch_entries: list[Any],
        custom_instructions: str | None = None,
        hook: str = "session_before_compact",
    ) -> None:
        self.preparation = preparation
        self.branch_entries = branch_entries
        self.custom_instructions = custom_instructions
        self.hook = hook


class SessionBeforeTreeEvent(Record):
    __slots__ = ("preparation", "hook")
    preparation: Any
    hook: str

    def __init__(self, preparation: Any, hook: str = "session_before_tree") -> None:
        self.preparation = preparation
        self.hook = hook


# -- hook results -------------------------------------------------------------


class BeforeAgentStartResult(Record):
    __slots__ = ("messages", "system_prompt")
    messages: list[Message] | None
    system_prompt: str | None

    def __init__(
        self, messages: list[Message] | None = None, system_prompt: str | None = None
    ) -> None:
        self.messages = messages
        self.system_prompt = system_prompt


class ContextResult(Record):
    __slots__ = ("messages",)
    messages: list[Message] | None

    def __init__(self, messages: list[Message] | None = None) -> None:
        self.messages = messages


class BeforeProviderRequestResult(Record):
    __slots__ = ("stream_options",)
    stream_options: dict[str, Any] | None

    def __init__(self, stream_options: dict[str, Any] | None = None) -> None:
        self.stream_options = stream_options


class BeforeProviderPayloadResult(Record):
    __slots__ = ("payload",)
    payload: Any

    def __init__(self, payload: Any = None) -> None:
        self.payload = payload


class AfterPlanResult(Record):
    __slots__ = ("tool_calls",)
    tool_calls: list[ToolCall] | None

    def __init__(self, tool_calls: list[ToolCall] | None = None) -> None:
        self.tool_calls = tool_calls


class ToolCallResult(Record):
    __slots__ = ("block", "reason", "input")
    block: bool
    reason: str | None
    input: dict[str, Any] | None  # replacement arguments

    def __init__(
        self, block: bool = False, reason: str | None = None, input: dict[str, Any] | None = None
    ) -> None:
        self.block = block
        self.reason = reason
        self.input = input


class ToolResultPatch(Record):
    __slots__ = ("content", "details", "is_error", "usage", "terminate")
    content: list[UserContent] | None
    details: Any
    is_error: bool | None
    usage: Usage | None
    terminate: bool | None

    def __init__(
        self,
        content: list[UserContent] | None = None,
        details: Any = None,
        is_error: bool | None = None,
        usage: Usage | None = None,
        terminate: bool | None = None,
    ) -> None:
        self.content = content
        self.details = details
        self.is_error = is_error
        self.usage = usage
        self.terminate = terminate


class StopDecision(Record):
    """From ``before_stop``: go on with these messages instead of stopping."""

    __slots__ = ("continue_", "messages", "reason")
    continue_: bool
    messages: list[Message]
    reason: str

    def __init__(
        self, continue_: bool = False, messages: list[Message] = NEW_LIST, reason: str = ""
    ) -> None:
        self.continue_ = continue_
        self.messages = [] if messages is NEW_LIST else messages
        self.reason = reason


class SessionBeforeCompactResult(Record):
    __slots__ = ("cancel", "compaction")
    cancel: bool
    compaction: Any

    def __init__(self, cancel: bool = False, compaction: Any = None) -> None:
        self.cancel = cancel
        self.compaction = compaction


class SessionBeforeTreeResult(Record):
    __slots__ = ("cancel", "summary", "custom_instructions", "replace_instructions", "label")
    cancel: bool
    summary: Any
    custom_instructions: str | None
    replace_instructions: bool | None
    label: str | None

    def __init__(
        self,
        cancel: bool = False,
        summary: Any = None,
        custom_instructions: str | None = None,
        replace_instructions: bool | None = None,
        label: str | None = None,
    ) -> None:
        self.cancel = cancel
        self.summary = summary
        self.custom_instructions = custom_instructions
        self.replace_instructions = replace_instructions
        self.label = label


class FailRun(Exception):
    """Raised by a hook handler to end the run now with status "error" and this message
    (fail closed: something the run needs, such as a required MCP server, is missing).
    Any other exception a handler raises is reported and the run goes on."""


class PauseRequest(Record):
    """Any hook may return this to pause the run back to IDLE ("needs review")."""

    __slots__ = ("reason",)
    reason: str

    def __init__(self, reason: str = "needs_review") -> None:
        self.reason = reason


# The pauses that ask the user about a held tool call start with one of these (the rest
# of the reason says what and why): a permission rule's ``ask``, and a hook's (Claude
# Code's ``permissionDecision: "ask"``). Claude Code calls both a permission prompt.
PERMISSION_PAUSE = "permission needed: "
APPROVAL_PAUSE = "approval needed: "


def asks_for_approval(reason: str) -> bool:
    """True when a pause with ``reason`` waits for the user's answer about a tool call."""
    return reason.startswith((PERMISSION_PAUSE, APPROVAL_PAUSE))


class HookProtocolError(RuntimeError):
    """A hook answered in a way its moment cannot use (wrong type, unknown keys, bad JSON)."""


# -- what each acting moment accepts ------------------------------------------

# The result types each acting moment understands (None is always fine; a dict with the
# same keys as the dataclass is accepted too). Event moments take None or PauseRequest.
MOMENT_RESULT_TYPES: dict[str, tuple[type[Any], ...]] = {
    "before_agent_start": (BeforeAgentStartResult,),
    "context": (ContextResult,),
    "before_provider_request": (BeforeProviderRequestResult,),
    "after_provider_response": (),
    "after_plan": (AfterPlanResult,),
    "tool_call": (ToolCallResult, PauseRequest, bool),
    "tool_result": (ToolResultPatch, PauseRequest),
    "before_stop": (StopDecision, PauseRequest),
    "on_budget_exceeded": (Budget,),
    "session_before_compact": (SessionBeforeCompactResult,),
    "session_before_tree": (SessionBeforeTreeResult,),
}

_EXTRA_DICT_KEYS: dict[str, frozenset[str]] = {"before_stop": frozenset({"continue", "message"})}


def _type_names(allowed: tuple[type[Any], ...]) -> str:
    return ", ".join([t.__name__ for t in allowed] + ["a dict with the same keys", "None"])


def _fits(value: Any, annotation: Any) -> bool:
    """False only when ``value`` plainly is not ``annotation`` (bool, str, dict, list, None
    and their unions are checked; anything else is taken as it is)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if annotation is dict or origin is dict:
        return isinstance(value, Mapping)
    if annotation is list or origin is list:
        return isinstance(value, list | tuple)
    return True


_FIELD_TYPES: dict[type[Any], dict[str, Any]] = {}


def _field_types(cls: type[Any]) -> dict[str, Any]:
    hints = _FIELD_TYPES.get(cls)
    if hints is None:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # an annotation that cannot be resolved is not checked
            hints = {}
        _FIELD_TYPES[cls] = hints
    return hints


def _field_problem(cls: type[Any], values: Mapping[str, Any]) -> str | None:
    hints = _field_types(cls)
    for name, value in values.items():
        annotation = hints.get(name)
        if annotation is not None and not _fits(value, annotation):
            expected = getattr(annotation, "__name__", str(annotation)).replace("typing.", "")
            shown = repr(value)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            return f"{name}={shown} ({type(value).__name__}; {name} must be {expected})"
    return None


def _field_names(cls: type[Any]) -> tuple[str, ...] | None:
    """The field names of a record or dataclass type, None for any other type."""
    if issubclass(cls, Record):
        return cls._field_names
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    return None


def hook_result_problem(moment: str, result: Any) -> str | None:
    """Why ``result`` is no answer ``moment`` can use, or None when it is one.

    The text follows "<hook> returned ": a result of the wrong type, a dict with a key the
    moment's result type lacks (``{"blocked": True}``), or a field of the wrong type
    (``{"block": "yes"}``) is unreadable, never read as "no objection".
    """
    if result is None or moment == "before_provider_payload":  # any value replaces the payload
        return None
    if moment not in ACTING_HOOKS:
        if isinstance(result, PauseRequest):
            return None
        return (
            f"{type(result).__name__}; the {moment} moment only observes "
            "(return None, or PauseRequest to pause the run)"
        )
    allowed = MOMENT_RESULT_TYPES.get(moment, ())
    record_types = [t for t in allowed if _field_names(t) is not None]
    if isinstance(result, allowed) and not isinstance(result, dict):
        names = _field_names(type(result))
        if names is not None:
            values = {name: getattr(result, name) for name in names}
            problem = _field_problem(type(result), values)
            if problem is not None:
                return f"{type(result).__name__} with {problem} for {moment}"
        return None
    if isinstance(result, dict) and record_types:
        cls = record_types[0]
        fields = set(_field_names(cls) or ())
        extra = _EXTRA_DICT_KEYS.get(moment, frozenset())
        unknown = sorted(str(k) for k in result if k not in fields and k not in extra)
        if unknown:
            return (
                f"a dict with unknown keys {unknown} for {moment}; "
                f"known keys: {', '.join(sorted(fields | extra))}"
            )
        problem = _field_problem(cls, {k: v for k, v in result.items() if k in fields})
        if problem is not None:
            return f"a dict with {problem} for {moment}"
        return None
    return (
        f"{type(result).__name__}, which {moment} does not accept (expected {_type_names(allowed)})"
    )

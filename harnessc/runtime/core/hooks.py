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
from dataclasses import dataclass, field
from typing import Any

from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.events import EVENT_ALIASES, EVENT_TYPES
from harnessc.runtime.core.messages import Message, ToolCall, Usage, UserContent

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


@dataclass(slots=True)
class HookSpec:
    """A handler declared in the options: registered on the harness at construction."""

    moment: str
    handler: Callable[..., Any]
    matcher: str | None = None  # regex over the tool name (tool moments only)
    name: str | None = None
    timeout_s: float | None = None
    _pattern: re.Pattern[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        canonical_hook_name(self.moment)
        if self.matcher:
            self._pattern = re.compile(self.matcher)

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


@dataclass(slots=True)
class BeforeAgentStartEvent:
    prompt: str
    images: list[UserContent] | None
    system_prompt: str
    resources: Any
    hook: str = "before_agent_start"


@dataclass(slots=True)
class ContextEvent:
    messages: list[Message]
    turn: int = 0
    hook: str = "context"


@dataclass(slots=True)
class BeforeProviderRequestEvent:
    model: Any
    session_id: str | None
    stream_options: Any
    hook: str = "before_provider_request"


@dataclass(slots=True)
class BeforeProviderPayloadEvent:
    model: Any
    payload: Any
    hook: str = "before_provider_payload"


@dataclass(slots=True)
class AfterProviderResponseEvent:
    status: int
    headers: dict[str, str]
    hook: str = "after_provider_response"


@dataclass(slots=True)
class AfterPlanEvent:
    tool_calls: list[ToolCall]
    message: Any = None
    hook: str = "after_plan"


@dataclass(slots=True)
class ToolCallEvent:
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    hook: str = "tool_call"


@dataclass(slots=True)
class ToolResultEvent:
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    content: list[UserContent]
    details: Any
    is_error: bool
    usage: Usage | None = None
    hook: str = "tool_result"


@dataclass(slots=True)
class BeforeStopEvent:
    """The model replied without tool calls: the run would stop here."""

    message: Any
    messages: list[Message]
    hook: str = "before_stop"


@dataclass(slots=True)
class SessionBeforeCompactEvent:
    preparation: Any
    branch_entries: list[Any]
    custom_instructions: str | None = None
    hook: str = "session_before_compact"


@dataclass(slots=True)
class SessionBeforeTreeEvent:
    preparation: Any
    hook: str = "session_before_tree"


# -- hook results -------------------------------------------------------------


@dataclass(slots=True)
class BeforeAgentStartResult:
    messages: list[Message] | None = None
    system_prompt: str | None = None


@dataclass(slots=True)
class ContextResult:
    messages: list[Message] | None = None


@dataclass(slots=True)
class BeforeProviderRequestResult:
    stream_options: dict[str, Any] | None = None


@dataclass(slots=True)
class BeforeProviderPayloadResult:
    payload: Any = None


@dataclass(slots=True)
class AfterPlanResult:
    tool_calls: list[ToolCall] | None = None


@dataclass(slots=True)
class ToolCallResult:
    block: bool = False
    reason: str | None = None
    input: dict[str, Any] | None = None  # replacement arguments


@dataclass(slots=True)
class ToolResultPatch:
    content: list[UserContent] | None = None
    details: Any = None
    is_error: bool | None = None
    usage: Usage | None = None
    terminate: bool | None = None


@dataclass(slots=True)
class StopDecision:
    """From ``before_stop``: go on with these messages instead of stopping."""

    continue_: bool = False
    messages: list[Message] = field(default_factory=list)
    reason: str = ""


@dataclass(slots=True)
class SessionBeforeCompactResult:
    cancel: bool = False
    compaction: Any = None


@dataclass(slots=True)
class SessionBeforeTreeResult:
    cancel: bool = False
    summary: Any = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


class FailRun(Exception):
    """Raised by a hook handler to end the run now with status "error" and this message
    (fail closed: something the run needs, such as a required MCP server, is missing).
    Any other exception a handler raises is reported and the run goes on."""


@dataclass(slots=True)
class PauseRequest:
    """Any hook may return this to pause the run back to IDLE ("needs review")."""

    reason: str = "needs_review"


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
    dataclass_types = [t for t in allowed if dataclasses.is_dataclass(t)]
    if isinstance(result, allowed) and not isinstance(result, dict):
        if dataclasses.is_dataclass(result) and not isinstance(result, type):
            values = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
            problem = _field_problem(type(result), values)
            if problem is not None:
                return f"{type(result).__name__} with {problem} for {moment}"
        return None
    if isinstance(result, dict) and dataclass_types:
        cls = dataclass_types[0]
        fields = {f.name for f in dataclasses.fields(cls)}
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

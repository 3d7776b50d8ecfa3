"""Hook moments' names (from the catalog, core/moments.py), and the results hooks may return.

A hook is a handler registered on a moment with ``harness.on(name, handler)`` or
declared as a ``HookSpec`` in the options. Handlers run in registration order; sync
or async; they receive the moment's event and may return the moment's result type (or
a dict with the same keys, or None).
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct

from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.events import EVENT_ALIASES, EVENT_TYPES
from harnessc.runtime.core.messages import Message, ToolCall, Usage, UserContent
from harnessc.runtime.core.moments import MOMENTS

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
    "PauseRun",
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
ACTING_HOOKS: tuple[str, ...] = tuple(m.name for m in MOMENTS if m.acting)

# Every other alias (the state machine's topics, older names) -> canonical moment.
HOOK_ALIASES: dict[str, str] = {alias: m.name for m in MOMENTS for alias in m.aliases}

SEED_004_TOPICS: tuple[str, ...] = tuple(m.seed_004 for m in MOMENTS if m.seed_004)

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
    import difflib  # only for the message

    close = difflib.get_close_matches(name, sorted(HOOK_NAMES), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownHookError(
        f"unknown hook {name!r}{hint}; valid names: {', '.join(sorted(HOOK_NAMES))}"
    )


class HookSpec(Struct):
    """A handler declared in the options: registered on the harness at construction."""

    moment: str
    handler: Callable[..., Any]
    matcher: str | None = None  # regex over the tool name (tool moments only)
    name: str | None = None
    timeout_s: float | None = None

    def __post_init__(self) -> None:
        canonical_hook_name(self.moment)
        if self.matcher:
            re.compile(self.matcher)  # a bad pattern fails here, not at the first call

    def matches_tool(self, tool_name: str | None) -> bool:
        """A matcher is a regex over the whole tool name (``write|edit``)."""
        if not self.matcher or tool_name is None:
            return True
        return re.fullmatch(self.matcher, tool_name) is not None


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


class BeforeAgentStartEvent(Struct):
    prompt: str
    images: list[UserContent] | None
    system_prompt: str
    resources: Any
    hook: str = "before_agent_start"


class ContextEvent(Struct):
    messages: list[Message]
    turn: int = 0
    hook: str = "context"


class BeforeProviderRequestEvent(Struct):
    model: Any
    session_id: str | None
    stream_options: Any
    hook: str = "before_provider_request"


class BeforeProviderPayloadEvent(Struct):
    model: Any
    payload: Any
    hook: str = "before_provider_payload"


class AfterProviderResponseEvent(Struct):
    status: int
    headers: dict[str, str]
    hook: str = "after_provider_response"


class AfterPlanEvent(Struct):
    tool_calls: list[ToolCall]
    message: Any = None
    hook: str = "after_plan"


class ToolCallEvent(Struct):
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    hook: str = "tool_call"


class ToolResultEvent(Struct):
    tool_call_id: str
    tool_name: str
    input: dict[str, Any]
    content: list[UserContent]
    details: Any
    is_error: bool
    usage: Usage | None = None
    hook: str = "tool_result"


class BeforeStopEvent(Struct):
    """The model replied without tool calls: the run would stop here."""

    message: Any
    messages: list[Message]
    hook: str = "before_stop"


class SessionBeforeCompactEvent(Struct):
    preparation: Any
    branch_entries: list[Any]
    custom_instructions: str | None = None
    hook: str = "session_before_compact"


class SessionBeforeTreeEvent(Struct):
    preparation: Any
    hook: str = "session_before_tree"


# -- hook results -------------------------------------------------------------


class BeforeAgentStartResult(Struct):
    messages: list[Message] | None = None
    system_prompt: str | None = None


class ContextResult(Struct):
    messages: list[Message] | None = None


class BeforeProviderRequestResult(Struct):
    stream_options: dict[str, Any] | None = None


class BeforeProviderPayloadResult(Struct):
    payload: Any = None


class AfterPlanResult(Struct):
    tool_calls: list[ToolCall] | None = None


class ToolCallResult(Struct):
    block: bool = False
    reason: str | None = None
    input: dict[str, Any] | None = None  # replacement arguments


class ToolResultPatch(Struct):
    content: list[UserContent] | None = None
    details: Any = None
    is_error: bool | None = None
    usage: Usage | None = None
    terminate: bool | None = None


class StopDecision(Struct):
    """From ``before_stop``: go on with these messages instead of stopping."""

    continue_: bool = False
    messages: list[Message] = []
    reason: str = ""


class SessionBeforeCompactResult(Struct):
    cancel: bool = False
    compaction: Any = None


class SessionBeforeTreeResult(Struct):
    cancel: bool = False
    summary: Any = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


class FailRun(Exception):
    """Raised by a hook handler to end the run now with status "error" and this message
    (fail closed: something the run needs, such as a required MCP server, is missing).
    Any other exception a handler raises is reported and the run goes on."""


class PauseRun(Exception):  # noqa: N818 - a signal to the loop, not an error
    """Raised by a handler of a moment before a model request (``context``) to pause the
    run there, with this reason, before the request is made: the run goes back to IDLE
    and its resume comes back to the same moment (an MCP server's login met while its
    tools are listed: the model must not be asked without them)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PauseRequest(Struct):
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


def _field_names(cls: type[Any]) -> tuple[str, ...] | None:
    """The field names of a record or dataclass type, None for any other type."""
    if issubclass(cls, Struct):
        return cls.__struct_fields__
    if hasattr(cls, "__dataclass_fields__"):
        import dataclasses  # loaded already, by the module that made the class

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

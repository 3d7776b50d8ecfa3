"""What declarative hooks exchange with the harness: result types per moment, and what
"block" means at each moment (the Claude Code protocol itself: claude_events.py
and claude_output.py).

Command hooks speak the protocol users know from Claude Code (stdin JSON, exit 0 with an
optional JSON decision, exit 2 blocks). "Block" means, per moment:

- ``tool_call``: the call is not executed; the reason is the tool result the model sees.
- ``tool_result``: the reason is appended to the result (the tool already ran).
- ``before_stop``: the run goes on with the reason as a user message.
- any event moment (``turn_end``, ``agent_start``, ...): the run pauses with the reason.
- other acting moments (``context``, ``before_provider_request``, ...): cannot block;
  the attempt is reported as an error event and ignored.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from harnessc.runtime.budget import Budget
from harnessc.runtime.hooks import (
    ACTING_HOOKS,
    AfterPlanResult,
    BeforeAgentStartResult,
    BeforeProviderRequestResult,
    ContextResult,
    PauseRequest,
    SessionBeforeCompactResult,
    SessionBeforeTreeResult,
    StopDecision,
    ToolCallResult,
    ToolResultPatch,
)
from harnessc.runtime.messages import TextContent, UserMessage

__all__ = [
    "MOMENT_RESULT_TYPES",
    "HookProtocolError",
    "HookTimeoutError",
    "block_result",
    "check_result",
]

REASON_LIMIT = 8000  # characters of a hook's reason that reach the model


class HookProtocolError(RuntimeError):
    """A hook answered in a way its moment cannot use (wrong type, bad JSON, ...)."""


class HookTimeoutError(TimeoutError):
    """A hook did not answer within its timeout."""


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


def _type_names(types: tuple[type[Any], ...]) -> str:
    names = [t.__name__ for t in types] + ["a dict with the same keys", "None"]
    return ", ".join(names)


def check_result(moment: str, result: Any, label: str) -> None:
    """Raise HookProtocolError when ``result`` is not something ``moment`` accepts."""
    if result is None:
        return
    if moment == "before_provider_payload":  # any value replaces the payload
        return
    if moment not in ACTING_HOOKS:
        if isinstance(result, PauseRequest):
            return
        raise HookProtocolError(
            f"{label} returned {type(result).__name__}; the {moment} moment only observes "
            "(return None, or PauseRequest to pause the run)"
        )
    allowed = MOMENT_RESULT_TYPES.get(moment, ())
    if isinstance(result, allowed):
        return
    dataclass_types = [t for t in allowed if dataclasses.is_dataclass(t)]
    if isinstance(result, dict) and dataclass_types:
        fields = {f.name for f in dataclasses.fields(dataclass_types[0])}
        fields |= _EXTRA_DICT_KEYS.get(moment, frozenset())
        unknown = sorted(str(k) for k in result if k not in fields)
        if not unknown:
            return
        raise HookProtocolError(
            f"{label} returned a dict with unknown keys {unknown} for {moment}; "
            f"known keys: {', '.join(sorted(fields))}"
        )
    raise HookProtocolError(
        f"{label} returned {type(result).__name__}, which {moment} does not accept "
        f"(expected {_type_names(allowed)})"
    )


# -- what a decision means at each moment ------------------------------------------------


def _clip(text: str) -> str:
    text = text.strip()
    if len(text) <= REASON_LIMIT:
        return text
    return text[:REASON_LIMIT] + f"\n[... {len(text) - REASON_LIMIT} more characters cut]"


def _appended(event: Any, text: str) -> ToolResultPatch:
    content = list(getattr(event, "content", None) or [])
    return ToolResultPatch(content=[*content, TextContent(text)])


def block_result(moment: str, reason: str, event: Any, label: str) -> Any:
    """The result that makes ``moment`` "block" with ``reason`` (see the module note)."""
    reason = _clip(reason) or f"blocked by {label}"
    if moment == "tool_call":
        return ToolCallResult(block=True, reason=reason)
    if moment == "tool_result":
        return _appended(event, f"[hook feedback] {reason}")
    if moment == "before_stop":
        return StopDecision(continue_=True, messages=[UserMessage(reason)], reason="hook")
    if moment not in ACTING_HOOKS:
        return PauseRequest(reason=f"blocked by {label}: {reason}")
    raise HookProtocolError(f"{label} asked to block at {moment}, which cannot block: {reason}")

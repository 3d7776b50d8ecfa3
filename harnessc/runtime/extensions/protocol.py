"""What declarative hooks exchange with the harness: result types per moment, the event
JSON of the command-hook protocol, and the meaning of a command's decision at each moment.

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
import os
from collections.abc import Mapping
from typing import Any

from harnessc.runtime.budget import Budget
from harnessc.runtime.events import to_jsonable
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
from harnessc.runtime.messages import TextContent, UserMessage, message_text

__all__ = [
    "MOMENT_RESULT_TYPES",
    "HookProtocolError",
    "HookTimeoutError",
    "block_result",
    "check_result",
    "decision_result",
    "hook_payload",
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


# -- the event JSON sent on stdin ------------------------------------------------------


def _session_fields(harness: Any) -> tuple[str | None, str, str | None]:
    session = getattr(harness, "session", None)
    session_id = getattr(session, "id", None)
    header = getattr(session, "header", None)
    cwd = getattr(header, "cwd", "") or os.getcwd()
    path = getattr(session, "path", None)
    return session_id, cwd, path


def _tool_response(event: Any) -> dict[str, Any]:
    content = getattr(event, "content", None) or []
    text = "".join(c.text for c in content if isinstance(c, TextContent))
    return {
        "content": text,
        "is_error": bool(getattr(event, "is_error", False)),
        "details": to_jsonable(getattr(event, "details", None)),
    }


def hook_payload(moment: str, event: Any, harness: Any) -> dict[str, Any]:
    """The JSON object a command hook reads on stdin.

    Always: ``session_id``, ``cwd`` (the session's working directory),
    ``transcript_path`` (the session file, or null), ``hook_event_name`` (the canonical
    moment). Then the moment's own fields under their names, plus the Claude Code names
    for the common ones: ``tool_name``, ``tool_input``, ``tool_use_id``,
    ``tool_response`` (tool_result), ``prompt`` (before_agent_start),
    ``last_assistant_message`` (before_stop).
    """
    session_id, cwd, path = _session_fields(harness)
    payload: dict[str, Any] = {
        "session_id": session_id,
        "cwd": cwd,
        "transcript_path": path,
        "hook_event_name": moment,
    }
    if dataclasses.is_dataclass(event) and not isinstance(event, type):
        for field in dataclasses.fields(event):
            if field.name in ("hook", "resources") or field.name in payload:
                continue
            payload[field.name] = to_jsonable(getattr(event, field.name))
        event_type = getattr(event, "type", None)
        if isinstance(event_type, str):
            payload["event_type"] = event_type
    _scrub_headers(payload)
    tool_name = getattr(event, "tool_name", None)
    if tool_name is not None:
        payload["tool_name"] = tool_name
        payload["tool_use_id"] = getattr(event, "tool_call_id", None)
        arguments = getattr(event, "input", None)
        if arguments is None:
            arguments = getattr(event, "args", None)
        payload["tool_input"] = to_jsonable(arguments if arguments is not None else {})
    if moment == "tool_result":
        payload["tool_response"] = _tool_response(event)
    if moment == "before_stop":
        message = getattr(event, "message", None)
        payload["last_assistant_message"] = message_text(message) if message is not None else ""
    return payload


def _scrub_headers(value: Any) -> None:
    """Replace credential header values (model and stream ``headers``) in place: a hook
    command never receives an API key or gateway token on its stdin."""
    from harnessc.runtime.providers.errors import redact_headers

    if isinstance(value, dict):
        for key, item in value.items():
            if key == "headers" and isinstance(item, dict):
                value[key] = redact_headers(item)
            else:
                _scrub_headers(item)
    elif isinstance(value, list):
        for item in value:
            _scrub_headers(item)


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


def decision_result(moment: str, data: Any, event: Any, label: str) -> tuple[Any, str | None]:
    """Interpret a JSON decision printed on stdout (exit 0).

    Returns (the moment's result or None, a system message to show or None).
    Understood keys: ``continue: false`` (+ ``stopReason``) pauses the run;
    ``decision: "block"`` (+ ``reason``) blocks as described in the module note;
    ``decision: "approve"``/``"allow"`` allows; ``hookSpecificOutput``:
    ``permissionDecision`` ``"deny"`` | ``"allow"`` | ``"ask"`` (+
    ``permissionDecisionReason``), ``updatedInput`` (replacement tool arguments),
    ``additionalContext`` (added to the tool result, or to the prompt at
    before_agent_start); ``systemMessage`` becomes a warning notice. Other keys are
    ignored.
    """
    if not isinstance(data, Mapping):
        raise HookProtocolError(f"{label} printed JSON {type(data).__name__}, expected an object")
    system_message = data.get("systemMessage")
    notice = str(system_message) if system_message else None
    if data.get("continue") is False:
        reason = str(data.get("stopReason") or f"stopped by {label}")
        return PauseRequest(reason=reason), notice
    specific = data.get("hookSpecificOutput") or {}
    if not isinstance(specific, Mapping):
        raise HookProtocolError(f"{label}: hookSpecificOutput must be an object")
    decision = data.get("decision")
    reason = str(data.get("reason") or "")
    if decision is not None and decision not in ("block", "deny", "approve", "allow"):
        raise HookProtocolError(
            f"{label}: unknown decision {decision!r} (use block, deny, approve or allow)"
        )
    context = specific.get("additionalContext")
    if moment == "tool_call":
        permission = specific.get("permissionDecision")
        if permission is not None and permission not in ("deny", "allow", "ask"):
            raise HookProtocolError(
                f"{label}: unknown permissionDecision {permission!r} (use deny, allow or ask)"
            )
        why = str(specific.get("permissionDecisionReason") or reason)
        if permission == "deny" or decision in ("block", "deny"):
            return block_result(moment, why, event, label), notice
        if permission == "ask":
            return PauseRequest(reason=f"approval needed: {why or label}"), notice
        updated = specific.get("updatedInput")
        if updated is not None:
            if not isinstance(updated, Mapping):
                raise HookProtocolError(f"{label}: updatedInput must be an object")
            return ToolCallResult(input=dict(updated)), notice
        return None, notice
    if decision in ("block", "deny"):
        return block_result(moment, reason, event, label), notice
    if context:
        if moment == "tool_result":
            return _appended(event, str(context)), notice
        if moment == "before_agent_start":
            return BeforeAgentStartResult(messages=[UserMessage(str(context))]), notice
    return None, notice

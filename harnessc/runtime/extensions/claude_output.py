"""What a command hook's exit code and output mean, per Claude Code event.

Exit 0: stdout starting with ``{`` is the JSON output (below); other stdout is added as
context at UserPromptSubmit and SessionStart and ignored elsewhere. Exit 2 blocks:

- PreToolUse: the call is not run; stderr is the tool result the model sees.
- PostToolUse / PostToolUseFailure: stderr is appended to the result for the model.
- UserPromptSubmit: the prompt is dropped (never sent, never stored); stderr is shown.
- Stop: the run goes on, stderr as the next user message.
- PreCompact: the compaction is cancelled.
- SessionStart, Notification: cannot block; stderr is shown as a warning.
- harnessc moments without a Claude Code name: ``protocol.block_result``.

Any other exit code is a non-blocking error (an error event), except at PreToolUse
where a hook that could not run (126, 127) blocks the call: a guard that cannot run
fails closed.

JSON fields: ``continue: false`` (+ ``stopReason``) pauses the run (at Stop: lets it
stop; at UserPromptSubmit: drops the prompt); ``systemMessage`` is shown as a warning;
``suppressOutput`` is accepted (harnessc never shows a hook's stdout);
``decision: "block"`` + ``reason`` blocks as exit 2 does, with ``reason``;
``hookSpecificOutput``: ``permissionDecision`` allow | deny | ask (+
``permissionDecisionReason``) and ``updatedInput`` at PreToolUse (``ask`` pauses the run
for approval: a pull point), ``additionalContext`` at PostToolUse(Failure) (appended to
the result), UserPromptSubmit and SessionStart (added to the prompt). The deprecated
PreToolUse ``decision: "approve"`` means allow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.hooks import (
    ACTING_HOOKS,
    APPROVAL_PAUSE,
    BeforeAgentStartResult,
    PauseRequest,
    SessionBeforeCompactResult,
    StopDecision,
    ToolCallResult,
    ToolResultPatch,
)
from harnessc.runtime.core.messages import TextContent, UserMessage
from harnessc.runtime.extensions.claude_events import STOP_CONTINUATIONS
from harnessc.runtime.extensions.claude_tools import ToolMappingError, harnessc_tool_input
from harnessc.runtime.extensions.protocol import HookProtocolError, block_result

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "CANNOT_RUN_CODES",
    "GUARD_EVENTS",
    "HookOutcome",
    "PromptBlocked",
    "interpret_exit",
    "interpret_json",
]

CANNOT_RUN_CODES = (126, 127)  # the shell's "not executable" and "not found"
REASON_LIMIT = 8000

# Events whose hooks guard something (a tool call, a prompt): an answer that cannot be
# read there blocks, as no answer cannot mean "allow".
GUARD_EVENTS = ("PreToolUse", "UserPromptSubmit")

# The JSON fields Claude Code documents, with their types (JSON null counts as absent).
_TOP_FIELDS: dict[str, type[Any]] = {
    "continue": bool,
    "stopReason": str,
    "suppressOutput": bool,
    "systemMessage": str,
    "decision": str,
    "reason": str,
    "hookSpecificOutput": Mapping,
}
_SPECIFIC_FIELDS: dict[str, dict[str, type[Any]]] = {
    "PreToolUse": {
        "permissionDecision": str,
        "permissionDecisionReason": str,
        "updatedInput": Mapping,
        "additionalContext": str,
    },
    "PostToolUse": {"additionalContext": str, "updatedMCPToolOutput": object},
    "PostToolUseFailure": {"additionalContext": str},
    "UserPromptSubmit": {"additionalContext": str},
    "SessionStart": {"additionalContext": str},
}
_TYPE_NAMES = {bool: "a boolean", str: "a string", Mapping: "an object"}


class PromptBlocked(asyncio.CancelledError):
    """A UserPromptSubmit hook blocked the prompt: the run ends before the prompt is
    recorded or sent (the harness treats it as an abort of that run)."""


@dataclass(slots=True)
class HookOutcome:
    """A hook's result for the harness, plus what to show the user."""

    result: Any = None
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    blocked_prompt: str | None = None


@dataclass(slots=True)
class HookCall:
    """What interpreting an answer needs to know about the call."""

    event_name: str
    moment: str
    event: Any
    harness: HarnessContext
    label: str
    tool_base: Path | None = None


def _clip(text: str) -> str:
    text = text.strip()
    if len(text) <= REASON_LIMIT:
        return text
    return text[:REASON_LIMIT] + f"\n[... {len(text) - REASON_LIMIT} more characters cut]"


def _appended(event: Any, *texts: str) -> ToolResultPatch:
    content = list(getattr(event, "content", None) or [])
    return ToolResultPatch(content=[*content, *(TextContent(t) for t in texts)])


def _context_result(text: str) -> BeforeAgentStartResult:
    return BeforeAgentStartResult(messages=[UserMessage(text)])


def _continue_run(call: HookCall, reason: str) -> StopDecision:
    message = UserMessage(reason or f"{call.label} asked to keep going")
    STOP_CONTINUATIONS.record(call.harness, message)
    return StopDecision(continue_=True, messages=[message], reason="hook")


def _block(call: HookCall, reason: str) -> HookOutcome:
    """Exit 2, or ``decision: "block"``, at the call's event."""
    reason = _clip(reason)
    name = call.event_name
    if name == "PreToolUse":
        return HookOutcome(ToolCallResult(block=True, reason=reason or f"blocked by {call.label}"))
    if name in ("PostToolUse", "PostToolUseFailure"):
        return HookOutcome(_appended(call.event, f"[hook feedback] {reason or call.label}"))
    if name == "UserPromptSubmit":
        return HookOutcome(blocked_prompt=reason or f"blocked by {call.label}")
    if name == "Stop":
        return HookOutcome(_continue_run(call, reason))
    if name == "PreCompact":
        return HookOutcome(
            SessionBeforeCompactResult(cancel=True),
            warnings=[f"{call.label} cancelled the compaction" + (f": {reason}" if reason else "")],
        )
    if name in ("SessionStart", "Notification"):
        return HookOutcome(warnings=[f"{call.label}: {reason}"] if reason else [])
    if call.moment not in ACTING_HOOKS or call.moment in ("tool_call", "tool_result"):
        return HookOutcome(block_result(call.moment, reason, call.event, call.label))
    return HookOutcome(
        errors=[f"{call.label} asked to block at {call.moment}, which cannot block: {reason}"]
    )


def interpret_exit(call: HookCall, code: int, stdout: str, stderr: str) -> HookOutcome:
    """A hook that exited with ``code`` (not 0)."""
    if code == 2:
        return _block(call, stderr)
    detail = _clip(stderr) or _clip(stdout) or "no output"
    if call.event_name == "PreToolUse" and code in CANNOT_RUN_CODES:
        what = "was not found" if code == 127 else "is not executable"
        raise HookProtocolError(
            f"{call.label} could not run (exit {code}: the program {what}): {detail[:2000]}"
        )
    return HookOutcome(
        errors=[f"{call.label} exited with code {code} (non-blocking): {detail[:2000]}"]
    )


def interpret_text(call: HookCall, text: str) -> HookOutcome:
    """Exit 0 with plain text on stdout."""
    if text and call.event_name in ("UserPromptSubmit", "SessionStart"):
        return HookOutcome(_context_result(text))
    return HookOutcome()


def _specific(call: HookCall, data: Mapping[str, Any]) -> Mapping[str, Any]:
    specific = data.get("hookSpecificOutput")
    if specific is None:
        return {}
    if not isinstance(specific, Mapping):
        raise HookProtocolError(f"{call.label}: hookSpecificOutput must be an object")
    return specific


def _pre_tool_use(call: HookCall, data: Mapping[str, Any], specific: Mapping[str, Any]) -> Any:
    permission = specific.get("permissionDecision")
    decision = data.get("decision")
    if permission is not None and permission not in ("allow", "deny", "ask"):
        raise HookProtocolError(
            f"{call.label}: unknown permissionDecision {permission!r} (use allow, deny or ask)"
        )
    if decision is not None and decision not in ("approve", "block", "allow", "deny"):
        raise HookProtocolError(
            f"{call.label}: unknown decision {decision!r} (use approve or block)"
        )
    why = str(specific.get("permissionDecisionReason") or data.get("reason") or "")
    if permission == "deny" or (permission is None and decision in ("block", "deny")):
        return ToolCallResult(block=True, reason=_clip(why) or f"denied by {call.label}")
    if permission == "ask":
        return PauseRequest(reason=APPROVAL_PAUSE + (_clip(why) or call.label))
    updated = specific.get("updatedInput")
    if updated is None:
        return None
    if not isinstance(updated, Mapping):
        raise HookProtocolError(f"{call.label}: updatedInput must be an object")
    original = getattr(call.event, "input", None) or {}
    base = call.tool_base or Path.cwd()
    try:
        mapped = harnessc_tool_input(call.event.tool_name, updated, original, base)
    except ToolMappingError as exc:
        raise HookProtocolError(f"{call.label}: {exc}") from None
    return ToolCallResult(input=mapped)


def _field_problems(
    fields: Mapping[str, Any], known: dict[str, type[Any]], where: str
) -> list[str]:
    problems: list[str] = []
    for key, value in fields.items():
        kind = known.get(key)
        if kind is None:
            problems.append(f"unknown field {where}{key!r}")
        elif value is not None and not isinstance(value, kind):
            problems.append(f"{where}{key!r} must be {_TYPE_NAMES.get(kind, kind.__name__)}")
    return problems


def shape_problems(event_name: str, data: Mapping[str, Any]) -> list[str]:
    """What in a hook's JSON answer is not Claude Code's documented shape for the event:
    unknown fields, fields of the wrong type, a ``hookEventName`` of another event."""
    problems = _field_problems(data, _TOP_FIELDS, "")
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, Mapping):
        known: dict[str, type[Any]] = {"hookEventName": str}
        known.update(_SPECIFIC_FIELDS.get(event_name, {}))
        problems += _field_problems(specific, known, "hookSpecificOutput.")
        named = specific.get("hookEventName")
        if isinstance(named, str) and named != event_name:
            problems.append(f"hookSpecificOutput.hookEventName is {named!r}, not {event_name!r}")
    return problems


def interpret_json(call: HookCall, data: Any) -> HookOutcome:
    """Exit 0 with a JSON object on stdout.

    An answer not in Claude Code's documented shape is unreadable at a guard event
    (HookProtocolError: the call or prompt is blocked); elsewhere its stray fields are
    ignored with a warning.
    """
    if not isinstance(data, Mapping):
        raise HookProtocolError(
            f"{call.label} printed JSON {type(data).__name__}, expected an object"
        )
    outcome = HookOutcome()
    problems = shape_problems(call.event_name, data)
    if problems and call.event_name in GUARD_EVENTS:
        raise HookProtocolError(
            f"{call.label} printed JSON that {call.event_name} cannot read: {'; '.join(problems)}"
        )
    if problems:
        outcome.warnings.append(f"{call.label}: ignored {'; '.join(problems)}")
    if data.get("systemMessage"):
        outcome.warnings.append(str(data["systemMessage"]))
    name = call.event_name
    specific = _specific(call, data)
    if data.get("continue") is False:
        reason = _clip(str(data.get("stopReason") or "")) or f"stopped by {call.label}"
        if name == "UserPromptSubmit":
            outcome.blocked_prompt = reason
        elif name != "Stop":  # a Stop hook saying "stop" lets the run stop
            outcome.result = PauseRequest(reason=reason)
        return outcome
    if name == "PreToolUse":
        outcome.result = _pre_tool_use(call, data, specific)
        return outcome
    decision = data.get("decision")
    if decision not in (None, "block", "approve", "allow", "deny", "undefined"):
        raise HookProtocolError(f"{call.label}: unknown decision {decision!r} (use block)")
    context = specific.get("additionalContext")
    context_text = str(context) if context else ""
    if decision in ("block", "deny"):
        blocked = _block(call, str(data.get("reason") or ""))
        blocked.warnings[:0] = outcome.warnings
        if context_text and isinstance(blocked.result, ToolResultPatch):
            blocked.result = _appended(call.event, *_texts(blocked.result), context_text)
        return blocked
    if context_text:
        if name in ("PostToolUse", "PostToolUseFailure"):
            outcome.result = _appended(call.event, context_text)
        elif name in ("UserPromptSubmit", "SessionStart"):
            outcome.result = _context_result(context_text)
    return outcome


def _texts(patch: ToolResultPatch) -> list[str]:
    # the feedback part of a patch built by _appended (what follows the original content)
    return [c.text for c in (patch.content or [])[-1:] if isinstance(c, TextContent)]

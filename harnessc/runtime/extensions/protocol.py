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

from typing import Any

from harnessc.runtime.core.hooks import (
    ACTING_HOOKS,
    MOMENT_RESULT_TYPES,
    HookProtocolError,
    PauseRequest,
    StopDecision,
    ToolCallResult,
    ToolResultPatch,
    hook_result_problem,
)
from harnessc.runtime.core.messages import TextContent, UserMessage

__all__ = [
    "MOMENT_RESULT_TYPES",
    "HookProtocolError",
    "HookTimeoutError",
    "block_result",
    "check_result",
]

REASON_LIMIT = 8000  # characters of a hook's reason that reach the model


class HookTimeoutError(TimeoutError):
    """A hook did not answer within its timeout."""


def check_result(moment: str, result: Any, label: str) -> None:
    """Raise HookProtocolError when ``result`` is not something ``moment`` accepts."""
    problem = hook_result_problem(moment, result)
    if problem is not None:
        raise HookProtocolError(f"{label} returned {problem}")


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

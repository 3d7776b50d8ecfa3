"""What a run returns, and the documented reasons a run finishes with."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import Struct

from harnessc.runtime.core.messages import AssistantMessage, Message, ToolCall

__all__ = [
    "FINISH_REASONS",
    "FinishReason",
    "HarnessBusyError",
    "RunResult",
    "RunStatus",
]

RunStatus = Literal["done", "paused", "awaiting_tool", "aborted", "error"]

FinishReason = Literal[
    "goal_met",
    "no_plan",
    "finish_tool",
    "tool_terminated",
    "hook_terminated",
    "turn_continue_stop",
    "final_result",
]

# Why a run reached DONE with status "done" (RunResult.reason and agent_end.reason):
FINISH_REASONS: dict[str, str] = {
    "goal_met": "the model gave a final answer (text, no tool calls)",
    "no_plan": "the model replied with neither text nor tool calls",
    "finish_tool": "the finish tool ended the run (every call of the batch terminated)",
    "tool_terminated": "every tool result of the last batch asked to terminate",
    "hook_terminated": "a tool_result hook set terminate on the last batch",
    "turn_continue_stop": "a before_stop hook returned StopDecision(continue_=False)",
    "final_result": "the model called final_result with an answer that validated (output:)",
}


class HarnessBusyError(RuntimeError):
    """A run method was called while another run is in progress."""


class RunResult(Struct):
    """What ``prompt`` / ``resume`` return. A pause is a value, never an exception."""

    status: RunStatus
    reason: str = ""
    pending_tool_calls: list[ToolCall] = []
    messages: list[Message] = []
    reply: str | None = None  # a /command's answer (no model call was made)
    # The validated typed result (``output:``): a pydantic instance for a type, plain
    # JSON for a schema; None for a run without one or one that did not finish.
    output: Any = None

    @property
    def text(self) -> str:
        """The text of the last assistant message of the run (or the command reply)."""
        if self.reply is not None:
            return self.reply
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message.text
        return ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "pending_tool_calls": [c.to_dict() for c in self.pending_tool_calls],
            "reply": self.reply,
        }

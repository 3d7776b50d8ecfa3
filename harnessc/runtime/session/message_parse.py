"""A ``message`` entry's message dict as a Message, with pi's own roles converted:
``bashExecution`` (a "!command" run) as user text in pi's wording, ``hookMessage`` (pi v2's
custom role), and the branch and compaction summaries as the model sees them."""

from __future__ import annotations

from typing import Any

from harnessc.runtime.core.messages import (
    CustomMessage,
    Message,
    TextContent,
    UserMessage,
    message_from_dict,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "bash_execution_text",
    "branch_summary_message",
    "compaction_summary_message",
    "parse_message",
]

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
)
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:"
)


def compaction_summary_message(summary: str, timestamp: int = 0) -> CustomMessage:
    """pi's compaction summary as the model sees it (``COMPACTION_SUMMARY_PREFIX``...)."""
    return CustomMessage(
        custom_type="compaction_summary",
        content=f"{COMPACTION_SUMMARY_PREFIX}\n\n<summary>\n{summary}\n</summary>",
        display=False,
        timestamp=timestamp,
    )


def branch_summary_message(summary: str, timestamp: int = 0) -> CustomMessage:
    """pi's branch summary as the model sees it (no newline before ``</summary>``)."""
    return CustomMessage(
        custom_type="branch_summary",
        content=f"{BRANCH_SUMMARY_PREFIX}\n\n<summary>\n{summary}</summary>",
        display=False,
        timestamp=timestamp,
    )


def parse_message(raw: dict[str, Any]) -> Message | None:
    """A message dict of a ``message`` entry as a Message (pi's own roles converted)."""
    role = raw.get("role")
    try:
        if role == "bashExecution":  # pi's "!command" runs: the model sees them as user text
            if raw.get("excludeFromContext"):
                return None
            return UserMessage(content=[TextContent(bash_execution_text(raw))], timestamp=_ms(raw))
        if role == "hookMessage":  # pi v2 name of the custom role
            raw = {**raw, "role": "custom"}
        elif role == "branchSummary":
            return branch_summary_message(str(raw.get("summary", "")), _ms(raw))
        elif role == "compactionSummary":
            return compaction_summary_message(str(raw.get("summary", "")), _ms(raw))
        return message_from_dict(raw)
    except (ValueError, TypeError, AttributeError, OverflowError):  # e.g. "timestamp": Infinity
        return None


def bash_execution_text(raw: dict[str, Any]) -> str:
    """pi's ``bashExecutionToText``: the user text a ``bashExecution`` message becomes."""
    text = f"Ran `{raw.get('command', '')}`\n"
    output = raw.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    if raw.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif raw.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {raw.get('exitCode')}"
    if raw.get("truncated") and raw.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {raw.get('fullOutputPath')}]"
    return text


def _ms(raw: dict[str, Any]) -> int:
    ts = raw.get("timestamp")
    return int(ts) if isinstance(ts, int | float) else 0

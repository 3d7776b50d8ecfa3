"""What the interactive mode shows when it starts, or switches to a session: the
agent, the session and the model, and when the session is continued its last exchange
(to see where it stands)."""

from __future__ import annotations

from collections.abc import Sequence

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.cli.output import one_line
from harnessc.runtime.core.messages import AssistantMessage, Message, UserMessage, message_text

__all__ = ["banner_lines", "last_exchange_lines"]

_REPLY_LINES = 12  # lines of the last reply shown


def banner_lines(agent_name: str, harness: AgentHarness) -> list[str]:
    """The notes printed at the start: one line, then the last exchange if any."""
    session = harness.session
    where = session.path or "in memory"
    count = len(harness.messages)
    first = (
        f"{agent_name}: session {session.id[:8]} ({where}, {count} messages), "
        f"model {harness.model_key()}. /help lists commands; Ctrl-C aborts a run, "
        "Ctrl-D quits."
    )
    return [first, *last_exchange_lines(harness.messages)]


def last_exchange_lines(messages: Sequence[Message]) -> list[str]:
    """The session's last prompt and the reply to it (empty without a prompt)."""
    last_user = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], UserMessage)),
        None,
    )
    if last_user is None:
        return []
    reply = next(
        (m for m in messages[last_user + 1 :][::-1] if isinstance(m, AssistantMessage) and m.text),
        None,
    )
    notes = ["last exchange:", f"  > {one_line(message_text(messages[last_user]), 200)}"]
    if reply is not None:
        lines = reply.text.strip().splitlines()
        shown = "\n".join(f"  {line}" for line in lines[:_REPLY_LINES])
        notes.append(shown + ("\n  ..." if len(lines) > _REPLY_LINES else ""))
    return notes

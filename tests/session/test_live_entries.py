"""A message entry appended from a live message keeps the message, not a JSON copy."""

from __future__ import annotations

import gc
import json
from pathlib import Path

from harnessc.runtime.core.messages import AssistantMessage, TextContent, ToolCall, UserMessage
from harnessc.runtime.session import JsonlSessionRepo, Session
from harnessc.runtime.session.entries import SessionEntry


def _reply() -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent("adding"), ToolCall("c1", "add", {"a": 1, "b": 2})],
        api="openai-completions",
        provider="openai",
        model="m",
    )


def _holds_a_dict(entry: SessionEntry) -> bool:
    return any(isinstance(x, dict) for x in gc.get_referents(entry))


def test_an_appended_message_is_not_kept_twice_until_its_json_is_asked_for():
    """Before: every message entry held the message's whole JSON form beside the message
    the harness keeps, about a third of a running session's memory."""
    session = Session()
    reply = _reply()
    entry = session.append_message(reply)
    assert not _holds_a_dict(entry)
    assert entry.role == "assistant" and not _holds_a_dict(entry)
    assert entry.to_dict()["message"] == reply.to_dict() and not _holds_a_dict(entry)
    assert entry.data == {"message": reply.to_dict()}  # built when asked
    assert entry.message == reply
    assert session.context().messages == [reply]


def test_a_live_entry_equals_its_reread_form_and_the_file_line(tmp_path: Path):
    repo = JsonlSessionRepo(tmp_path)
    session = repo.create(cwd=str(tmp_path))
    user = session.append_message(UserMessage("add 1 and 2"))
    reply = session.append_message(_reply())
    assert session.path is not None
    lines = [json.loads(line) for line in Path(session.path).read_text().splitlines()[1:]]
    assert lines == [user.to_dict(), reply.to_dict()]
    session.close()
    reread = repo.open(session.path, read_only=True)
    assert reread.entries() == [user, reply]
    assert reread.context().messages == session.context().messages

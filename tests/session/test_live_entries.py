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


def test_a_timestamp_is_written_as_datetime_writes_it_with_its_second_reused():
    """The formatted second is kept for the entries after it; the milliseconds, the
    rounding to the microsecond and the carry into the next second are as datetime's."""
    from datetime import UTC, datetime

    from harnessc.runtime.session.entries import iso_at

    def by_datetime(seconds: float) -> str:
        at = datetime.fromtimestamp(seconds, UTC)
        return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"

    base = 1_764_650_000
    times = [base + k / 1000 for k in range(0, 1000, 7)]
    times += [base + 0.9999995, base + 0.9999994, base + 1.0000004, base - 1.5e9, 0.0, -0.25]
    times += [base + 86_399.999, base + 86_400.0, base + 0.0005, base + 0.0015]
    for seconds in times + times[::-1]:
        assert iso_at(seconds) == by_datetime(seconds), seconds

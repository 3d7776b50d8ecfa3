from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessc.runtime.core.messages import UserMessage
from harnessc.runtime.extensions import (
    ExtensionConfigError,
    TurnContinueConfig,
    TurnContinueExtension,
)
from harnessc.runtime.extensions.turn_continue import DEFAULT_CONTINUE_PROMPT
from harnessc.runtime.providers.scripted import reply_text, reply_tool_calls
from harnessc.runtime.tools.tasks import create_task_tools

from ._ext_support import echo_tool, notices


def _tools() -> list[Any]:
    todo, finish = create_task_tools()
    return [todo, finish, echo_tool()]


def _continue_prompts(harness: Any) -> list[str]:
    return [
        m.content
        for m in harness.messages
        if isinstance(m, UserMessage)
        and isinstance(m.content, str)
        and m.content.startswith(DEFAULT_CONTINUE_PROMPT)
    ]


def test_finished_stops_after_finish(make_harness: Any) -> None:
    ext = TurnContinueExtension()
    replies = [
        reply_tool_calls([("todo", {"op": "set", "items": [{"title": "write it"}]})]),
        reply_text("I wrote it."),  # stop -> continue (todo pending)
        reply_tool_calls([("todo", {"op": "complete", "ids": ["1"]})]),
        reply_tool_calls([("finish", {"status": "completed", "summary": "done"})]),
        reply_text("All done."),
    ]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    result = asyncio.run(harness.prompt("write it"))
    assert (result.status, result.reason) == ("done", "turn_continue_stop")
    assert notices(log, "turn_continue") == ["continuing (1/10)", "stopped: finished: completed"]
    prompts = _continue_prompts(harness)
    assert prompts == [
        f"{DEFAULT_CONTINUE_PROMPT}\n\nOutstanding tasks:\n- [pending] write it (id: 1)"
    ]


def test_stalled_on_repeated_call(make_harness: Any) -> None:
    ext = TurnContinueExtension({"stall_limit": 3})
    same = ("echo", {"text": "x"})
    replies = [
        reply_tool_calls([same]),
        reply_tool_calls([("echo", {"text": "x"})]),
        reply_tool_calls([("echo", {"text": "x"})]),
        reply_text("hmm"),
    ]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    result = asyncio.run(harness.prompt("go"))
    assert (result.status, result.reason) == ("done", "turn_continue_stop")
    assert [e.reason for e in log.events if e.type == "agent_end"] == ["turn_continue_stop"]
    assert notices(log, "turn_continue") == ["stopped: stalled"]


def test_stall_uses_normalised_json(make_harness: Any) -> None:
    ext = TurnContinueExtension({"stall_limit": 2, "max_continuations": 5})
    replies = [
        reply_tool_calls([("todo", {"op": "set", "items": [{"title": "a", "id": "1"}]})]),
        reply_tool_calls([("todo", {"items": [{"id": "1", "title": "a"}], "op": "set"})]),
        reply_text("stuck"),
    ]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    asyncio.run(harness.prompt("go"))
    assert notices(log, "turn_continue") == ["stopped: stalled"]


def test_continuation_limit_reached(make_harness: Any) -> None:
    ext = TurnContinueExtension(TurnContinueConfig(max_continuations=2))
    replies = [
        reply_text("first stop"),
        reply_tool_calls([("echo", {"text": "1"})]),
        reply_text("second stop"),
        reply_tool_calls([("echo", {"text": "2"})]),
        reply_text("third stop"),
    ]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert notices(log, "turn_continue") == [
        "continuing (1/2)",
        "continuing (2/2)",
        "stopped: continuation limit reached",
    ]
    # no todos: the continue message says so
    assert _continue_prompts(harness)[0].endswith("Outstanding tasks: none.")


def test_no_progress(make_harness: Any) -> None:
    ext = TurnContinueExtension({"no_progress_limit": 2})
    replies = [reply_text("a"), reply_text("b"), reply_text("c"), reply_text("unused")]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert notices(log, "turn_continue") == [
        "continuing (1/10)",
        "continuing (2/10)",
        "stopped: no progress",
    ]


def test_progress_resets_the_no_progress_streak(make_harness: Any) -> None:
    ext = TurnContinueExtension({"no_progress_limit": 2, "max_continuations": 10})
    replies = [
        reply_text("a"),  # continue 1
        reply_text("b"),  # streak 1 -> continue 2
        reply_tool_calls([("echo", {"text": "work"})]),
        reply_text("c"),  # progress: streak 0 -> continue 3
        reply_text("d"),  # streak 1 -> continue 4
        reply_text("e"),  # streak 2 -> stop
    ]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    asyncio.run(harness.prompt("go"))
    assert notices(log, "turn_continue")[-1] == "stopped: no progress"
    assert len(notices(log, "turn_continue")) == 5


def test_no_outstanding_work(make_harness: Any) -> None:
    ext = TurnContinueExtension({"require_finish": False})
    replies = [
        reply_tool_calls([("todo", {"op": "set", "items": [{"title": "a", "status": "done"}]})]),
        reply_text("done"),
    ]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    asyncio.run(harness.prompt("go"))
    assert notices(log, "turn_continue") == ["stopped: no outstanding work"]


def test_pending_todos_keep_going_without_finish_requirement(make_harness: Any) -> None:
    ext = TurnContinueExtension({"require_finish": False})
    replies = [
        reply_tool_calls(
            [("todo", {"op": "set", "items": [{"title": "a"}, {"title": "b", "status": "done"}]})]
        ),
        reply_text("pause"),  # a pending -> continue
        reply_tool_calls([("todo", {"op": "complete", "ids": ["1"]})]),
        reply_text("now done"),
    ]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    asyncio.run(harness.prompt("go"))
    assert notices(log, "turn_continue") == ["continuing (1/10)", "stopped: no outstanding work"]
    assert _continue_prompts(harness) == [
        f"{DEFAULT_CONTINUE_PROMPT}\n\nOutstanding tasks:\n- [pending] a (id: 1)"
    ]


def test_finish_from_an_earlier_run_does_not_stop_the_next(make_harness: Any) -> None:
    ext = TurnContinueExtension({"max_continuations": 1})
    replies = [
        reply_tool_calls([("finish", {"status": "blocked", "summary": "no access"})]),
        reply_text("blocked"),
        reply_text("second run"),
        reply_text("second run again"),
    ]
    harness, log = make_harness(replies, _tools(), extensions=[ext])
    asyncio.run(harness.prompt("one"))
    asyncio.run(harness.prompt("two"))
    assert notices(log, "turn_continue") == [
        "stopped: finished: blocked",
        "continuing (1/1)",
        "stopped: continuation limit reached",
    ]


def test_status_command(make_harness: Any) -> None:
    ext = TurnContinueExtension({"max_continuations": 3})
    replies = [
        reply_tool_calls([("todo", {"op": "set", "items": [{"title": "a"}, {"title": "b"}]})]),
        reply_tool_calls([("finish", {"status": "completed", "summary": "ok"})]),
        reply_text("bye"),
    ]
    harness, _ = make_harness(replies, _tools(), extensions=[ext])
    asyncio.run(harness.prompt("go"))
    result = asyncio.run(harness.prompt("/status"))
    assert result.reply is not None
    lines = result.reply.splitlines()
    assert lines[0] == "continuations left: 3 of 3"
    assert lines[1].startswith("tokens this run: ")
    assert lines[2] == "finish: completed (ok)"
    assert "todos: 0/2 done" in lines
    assert "- [pending] a (id: 1)" in lines


def test_needs_todo_and_finish_tools(make_harness: Any) -> None:
    with pytest.raises(ExtensionConfigError, match="needs the todo and finish tools"):
        make_harness([], [echo_tool()], extensions=[TurnContinueExtension()])
    todo, finish = create_task_tools()
    with pytest.raises(ExtensionConfigError, match="finish is not"):
        make_harness(
            [],
            [todo, finish],
            active_tool_names=["todo"],
            extensions=[TurnContinueExtension()],
        )


def test_zero_max_continuations_disables(make_harness: Any) -> None:
    ext = TurnContinueExtension({"max_continuations": 0})
    harness, log = make_harness([reply_text("hi")], [echo_tool()], extensions=[ext])
    assert "status" not in harness.commands
    assert not harness.has_handlers("before_stop")
    asyncio.run(harness.prompt("go"))
    assert notices(log, "turn_continue") == []


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"stall_limit": -1}, "stall_limit"),
        ({"max_continuations": -2}, "max_continuations"),
        ({"no_progress_limit": -1}, "no_progress_limit"),
        ({"require_finish": False, "require_todos_done": False}, "require_finish"),
        ({"stall_limt": 3}, "stall_limt"),
        ({"stall_limit": "3"}, "stall_limit"),
        ({"require_finish": 1}, "require_finish"),
    ],
)
def test_config_errors_name_the_field(config: dict[str, Any], field: str) -> None:
    with pytest.raises(ExtensionConfigError) as info:
        TurnContinueExtension(config)
    assert info.value.field == field
    assert f"turn_continue.{field}" in str(info.value)


def test_config_defaults() -> None:
    ext = TurnContinueExtension({"stallLimit": 0, "no_progress_limit": 0, "continue_prompt": ""})
    assert ext.config == TurnContinueConfig()
    assert ext.config.continue_prompt == DEFAULT_CONTINUE_PROMPT
    assert (ext.config.stall_limit, ext.config.no_progress_limit) == (3, 3)
    assert ext.config.require_finish and ext.config.require_todos_done

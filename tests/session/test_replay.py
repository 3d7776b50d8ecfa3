"""Replay: the harness state rebuilt from a session without calling the model."""

from __future__ import annotations

import asyncio
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.core.messages import ToolCall, ToolResultMessage
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_tool_calls
from harnessc.runtime.session import (
    JsonlSessionRepo,
    Session,
    pending_state,
    record_pause,
    record_resume,
    replay_state,
)
from harnessc.runtime.tools.base import ExternalTool, Tool, ToolResult, text_result

from ._helpers import call, reply, result, user

MODELS = {
    "main": Model(id="m1", api="scripted", provider="test"),
    "alt": Model(id="m2", api="scripted", provider="other"),
}


async def _add(
    call_id: str, params: dict[str, Any], signal: Any, update: Any, ctx: Any
) -> ToolResult:
    return text_result(str(params["a"] + params["b"]))


def tools() -> list[Any]:
    add = Tool(
        "add",
        "Add two integers.",
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        _add,
    )
    ask = ExternalTool(
        "ask_user",
        "Ask the user.",
        {"type": "object", "properties": {"question": {"type": "string"}}},
    )
    return [add, ask]


def test_pause_helpers() -> None:
    s = Session()
    s.append_message(user("go"))
    s.append_message(call("q1", "ask_user", question="ok?"))
    assert pending_state(s) is None
    entry = record_pause(
        s,
        "awaiting_tool",
        [ToolCall("q1", "ask_user", {"question": "ok?"}), {"id": "q2", "name": "x"}],
        usage={"turns": 1},
    )
    state = pending_state(s)
    assert state is not None and state.entry_id == entry.id and state.reason == "awaiting_tool"
    assert [(c.id, c.name, c.arguments) for c in state.pending_tool_calls] == [
        ("q1", "ask_user", {"question": "ok?"}),
        ("q2", "x", {}),
    ]
    assert state.data["usage"] == {"turns": 1}
    assert entry.data["customType"] == "harnessc.pause"
    assert entry.data["data"]["pending_tool_calls"][0] == {
        "id": "q1",
        "name": "ask_user",
        "arguments": {"question": "ok?"},
    }
    s.append_message(result("q1", "yes", name="ask_user"))  # answered before a crash
    state = pending_state(s)
    assert state is not None and [c.id for c in state.pending_tool_calls] == ["q2"]
    replayed = replay_state(s)
    assert replayed.paused and [c.id for c in replayed.pending_tool_calls] == ["q2"]
    record_resume(s, run_id="r1")
    assert pending_state(s) is None and not replay_state(s).paused
    # a pause on another branch does not count
    record_pause(s, "budget")
    s.move_to(s.branch()[0].id)
    assert pending_state(s) is None


def test_replay_reads_settings_and_unanswered_calls() -> None:
    s = Session()
    s.append_model_change("other", "m2")
    s.append_thinking_level_change("low")
    s.append_active_tools_change(["add"])
    s.append_message(user("hi"))
    s.append_message(call("c1", "add", a=1, b=2))
    s.set_name("named")
    replayed = replay_state(s)
    assert replayed.model == ("other", "m2") and replayed.thinking_level == "low"
    assert replayed.active_tool_names == ["add"] and replayed.name == "named"
    assert [c.id for c in replayed.unanswered_tool_calls] == ["c1"]
    assert replayed.leaf_id == s.leaf_id
    s.append_message(result("c1", "3", name="add"))
    s.append_message(reply("3"))
    assert replay_state(s).unanswered_tool_calls == []


def test_replay_equals_the_live_harness(repo: JsonlSessionRepo) -> None:
    session = repo.create(cwd="/w")
    provider = ScriptedProvider(
        [
            reply_tool_calls([("add", {"a": 2, "b": 3}, "c1")]),
            "five",
            reply_tool_calls(
                [("ask_user", {"question": "ship?"}, "q1"), ("add", {"a": 1, "b": 1}, "c2")]
            ),
        ]
    )
    harness = AgentHarness(
        AgentHarnessOptions(session=session, models=MODELS, tools=tools(), provider=provider)
    )

    async def run() -> None:
        assert (await harness.prompt("add 2 and 3")).status == "done"
        await harness.set_model("alt")
        await harness.set_thinking_level("high")
        await harness.set_active_tools(["add", "ask_user"])
        assert (await harness.prompt("ship it")).status == "awaiting_tool"

    asyncio.run(run())
    live = replay_state(session)
    assert live.messages == harness.messages
    assert live.model == ("other", "m2") and live.thinking_level == "high"
    assert live.active_tool_names == ["add", "ask_user"]
    assert live.paused and [c.id for c in live.pending_tool_calls] == [
        c.id for c in harness.pending_tool_calls
    ]
    assert "q1" in [c.id for c in live.pending_tool_calls]
    session.close()

    # from the file, in a "new process": same state, model never called
    reopened = repo.open(session.id)
    replayed = replay_state(reopened)
    assert replayed.messages == live.messages
    assert (replayed.model, replayed.thinking_level, replayed.active_tool_names) == (
        live.model,
        live.thinking_level,
        live.active_tool_names,
    )
    assert [c.id for c in replayed.pending_tool_calls] == [c.id for c in live.pending_tool_calls]
    silent = ScriptedProvider([])
    restored = AgentHarness(
        AgentHarnessOptions(session=reopened, models=MODELS, tools=tools(), provider=silent)
    )
    assert restored.messages == replayed.messages and silent.requests == []
    assert restored.model.id == "m2"

    # answering the external call resumes; the replayed pause is then cleared
    silent2 = ScriptedProvider(["shipped"])
    restored.options.provider = silent2
    outcome = restored.resume_sync({"q1": "yes"})
    assert outcome.status == "done"
    after = replay_state(reopened)
    assert not after.paused and after.messages == restored.messages
    answers = [m for m in after.messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_call_id, m.text) for m in answers][-2:] == [("q1", "yes"), ("c2", "2")]
    reopened.close()

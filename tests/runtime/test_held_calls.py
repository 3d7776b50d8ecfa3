"""A call a tool_call hook holds for approval (a permission `ask`) is a pull point: the
run pauses with the call unrun, and an approval at resume runs it in place, once, also
in another process; a denial refuses it; the other calls of its batch run once."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harnessc.runtime import PauseRequest, ToolResultMessage
from harnessc.runtime.core.hooks import HookSpec
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls

from .test_run_state_defects import Counter, new_file_harness, open_harness


def _ask_for(name: str) -> HookSpec:
    def hold(event: Any) -> Any:
        if event.tool_name != name:
            return None
        return PauseRequest("permission needed: " + event.tool_name)

    return HookSpec("tool_call", hold)


def _results(harness: Any) -> dict[str, ToolResultMessage]:
    return {m.tool_call_id: m for m in harness.messages if isinstance(m, ToolResultMessage)}


def test_an_approved_held_call_runs_once_after_a_restart(tmp_path: Path) -> None:
    bash, ls = Counter("bash"), Counter("ls")
    replies = [reply_tool_calls([("bash", {}), ("ls", {})]), reply_text("done")]
    provider = ScriptedProvider(replies)
    harness, _, path = new_file_harness(
        tmp_path, provider, [bash.tool(), ls.tool()], hooks=[_ask_for("bash")]
    )
    paused = asyncio.run(harness.prompt("go"))
    assert (paused.status, paused.reason) == ("paused", "permission needed: bash")
    assert (bash.runs, ls.runs) == (0, 1)  # the held call waits; its neighbour ran
    [held] = harness.pending_tool_calls
    assert held.name == "bash"
    harness.session.close()

    # another process: the pause record holds the call and ls's result
    again, log = open_harness(path, provider, [bash.tool(), ls.tool()], hooks=[_ask_for("bash")])
    assert [c.id for c in again.pending_tool_calls] == [held.id]
    done = asyncio.run(again.resume(approvals={held.id: True}))
    assert done.status == "done", done.reason
    assert (bash.runs, ls.runs) == (1, 1)  # bash ran once, ls was not repeated
    results = _results(again)
    assert not results[held.id].is_error and results[held.id].text == "bash ran 1"
    assert len(provider.requests) == 2
    second = provider.requests[1].context.messages
    names = [m.tool_name for m in second if isinstance(m, ToolResultMessage)]
    assert names == ["bash", "ls"]  # results in call order, each once
    starts = [e.tool_call_id for e in log if e.type == "tool_execution_start"]
    assert held.id not in starts  # started once, before the pause, not again
    again.session.close()


def test_a_denied_held_call_is_refused_and_the_run_goes_on(tmp_path: Path) -> None:
    bash = Counter("bash")
    provider = ScriptedProvider([reply_tool_calls([("bash", {})]), reply_text("ok, not then")])
    harness, _, _ = new_file_harness(tmp_path, provider, [bash.tool()], hooks=[_ask_for("bash")])
    asyncio.run(harness.prompt("go"))
    [held] = harness.pending_tool_calls
    done = asyncio.run(harness.resume(approvals={held.id: False}))
    assert done.status == "done"
    assert bash.runs == 0
    refused = _results(harness)[held.id]
    assert refused.is_error and "denied" in refused.text
    harness.session.close()


def test_resuming_without_an_answer_holds_the_call_again(tmp_path: Path) -> None:
    bash = Counter("bash")
    provider = ScriptedProvider([reply_tool_calls([("bash", {})]), reply_text("x")])
    harness, _, _ = new_file_harness(tmp_path, provider, [bash.tool()], hooks=[_ask_for("bash")])
    asyncio.run(harness.prompt("go"))
    again = asyncio.run(harness.resume())
    assert (again.status, again.reason) == ("paused", "permission needed: bash")
    assert bash.runs == 0 and len(provider.requests) == 1
    harness.session.close()

"""Pull points: an external tool and a budget pause exit 3; --resume-with and --max-turns."""

from __future__ import annotations

import json

from harnessc.testing import ProtocolServer

from .clikit import Agent, events_of, text_reply, tool_reply


def _tool_results(request: object) -> list[dict[str, object]]:
    messages = request.json["messages"]  # type: ignore[attr-defined]
    return [m for m in messages if m.get("role") == "tool"]


def test_external_tool_pauses_then_resume_with(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(
        tool_reply(("call_1", "approve", {"action": "deploy prod"})),
        text_reply("deployed"),
    )
    paused = agent.run("deploy please")
    assert paused.returncode == 3, paused.stderr
    assert paused.stdout == ""
    for part in ("approve", "call_1", '{"action": "deploy prod"}', "--resume-with"):
        assert part in paused.stderr, part
    # A new prompt while it waits is a usage error naming what is pending.
    busy = agent.run("--continue", "something else")
    assert busy.returncode == 2 and "call_1" in busy.stderr
    wrong = agent.run("--continue", "--resume-with", '{"call_9": "x"}')
    assert wrong.returncode == 2 and "no result for call_1" in wrong.stderr
    done = agent.run("--continue", "--resume-with", '{"call_1": "approved by ops"}')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "deployed\n"
    (result,) = _tool_results(server.requests[1])
    assert result["tool_call_id"] == "call_1" and result["content"] == "approved by ops"
    again = agent.run("--continue", "--resume-with", '{"call_1": "x"}')
    assert again.returncode == 2 and "not waiting for tool results" in again.stderr


def test_json_pause_event_and_error_result_from_stdin(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(tool_reply(("call_7", "approve", {"action": "rm"})), text_reply("ok, not done"))
    paused = agent.run("--json", "remove it")
    assert paused.returncode == 3
    events = events_of(paused.stdout)
    pause = next(e for e in events if e["type"] == "agent_pause")
    assert pause["reason"] == "awaiting_tool"
    (call,) = pause["pending_tool_calls"]
    assert call["id"] == "call_7" and call["name"] == "approve"
    assert call["arguments"] == {"action": "rm"}
    session = next(iter(agent.session_files())).name.split("_", 1)[1].removesuffix(".jsonl")
    answer = json.dumps({"call_7": {"error": "denied by the user"}})
    done = agent.run("--session", session, "--resume-with", "-", stdin=answer)
    assert done.returncode == 0, done.stderr
    (result,) = _tool_results(server.requests[1])
    assert "denied by the user" in str(result["content"])


def test_budget_pause_continues_with_a_raised_turn_limit(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 0})), text_reply("finished"))
    paused = agent.run("work", env={"AGENT_MAX_TURNS": "1"})
    assert paused.returncode == 3, paused.stderr
    assert "budget limit hit: turns (1 of 1 used)" in paused.stderr
    assert "--max-turns" in paused.stderr
    assert len(server.requests) == 1
    done = agent.run("--continue", "--max-turns", "3", env={"AGENT_MAX_TURNS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "finished\n"
    assert len(server.requests) == 2
    assert _tool_results(server.requests[1])[0]["content"] == "slept 0"


def test_budget_pause_in_json_mode(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 0})))
    paused = agent.run("--json", "--max-turns", "1", "work")
    assert paused.returncode == 3
    events = events_of(paused.stdout)
    pause = next(e for e in events if e["type"] == "agent_pause")
    assert pause["reason"] == "budget_exceeded:turns"
    hard = [e for e in events if e["type"] == "budget_warn" and e["level"] == "hard"]
    assert hard and hard[0]["limit"] == "turns" and hard[0]["maximum"] == 1

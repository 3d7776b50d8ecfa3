"""Session flags: --continue, --session, --fork, --sessions, --search, --session-dir, --replay."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from harnessc.testing import ProtocolServer

from .clikit import Agent, events_of, text_reply


def _contents(request: object) -> list[str]:
    return [str(m.get("content")) for m in request.json["messages"]]  # type: ignore[attr-defined]


def test_continue_goes_on_in_the_latest_session(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("first answer"), text_reply("second answer"))
    assert agent.run("first question").returncode == 0
    done = agent.run("--continue", "second question")
    assert done.returncode == 0, done.stderr
    assert _contents(server.requests[1])[-3:] == [
        "first question",
        "first answer",
        "second question",
    ]
    assert len(agent.session_files()) == 1


def test_continue_without_a_session_starts_a_new_one(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("ok"))
    done = agent.run("-c", "hello")
    assert done.returncode == 0
    assert "starting a new one" in done.stderr
    assert len(agent.session_files()) == 1


def test_session_by_id_prefix_and_by_path(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("a1"), text_reply("b1"), text_reply("a2"), text_reply("b2"))
    agent.run("alpha")
    agent.run("beta")
    listing = agent.run("--sessions")
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert len(lines) == 2 and "beta" in lines[0] and "alpha" in lines[1]  # newest first
    alpha_id = lines[1].split()[0]
    assert agent.run("--session", alpha_id, "alpha again").returncode == 0
    assert _contents(server.requests[2])[-3:] == ["alpha", "a1", "alpha again"]
    beta_file = next(p for p in agent.session_files() if "beta" in p.read_text())
    assert agent.run("--session", str(beta_file), "beta again").returncode == 0
    assert _contents(server.requests[3])[-3:] == ["beta", "b1", "beta again"]


def test_fork_copies_the_branch_up_to_an_entry(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("one"), text_reply("two"), text_reply("forked"))
    first = agent.run("--json", "q1")
    ends = [e for e in events_of(first.stdout) if e["type"] == "message_end"]
    reply_entry = next(e["entry_id"] for e in ends if e["message"]["role"] == "assistant")
    agent.run("--continue", "q2")
    done = agent.run("--fork", reply_entry, "q3")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "forked\n"
    assert _contents(server.requests[2])[-3:] == ["q1", "one", "q3"]  # q2 is not in the fork
    files = agent.session_files()
    assert len(files) == 2
    forked = next(f for f in files if "q3" in f.read_text())
    header = json.loads(forked.read_text().splitlines()[0])
    assert header["parentSession"]
    bad = agent.run("--fork", "nothere", "q4")
    assert bad.returncode == 2 and "nothere" in bad.stderr


def test_sessions_json_and_search(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("the answer mentions kumquats"), text_reply("plain"))
    agent.run("tell me about fruit")
    agent.run("something else")
    rows = events_of(agent.run("--sessions", "--json").stdout)
    assert {r["first_prompt"] for r in rows} == {"tell me about fruit", "something else"}
    found = agent.run("--search", "kumquats")
    assert found.returncode == 0, found.stderr
    (line,) = found.stdout.splitlines()
    assert "[kumquats]" in line and "assistant" in line
    fruit_id = next(r["id"] for r in rows if r["first_prompt"] == "tell me about fruit")
    assert line.startswith(fruit_id[:8])
    assert agent.run("--search", "unfindable").stdout == "no matches\n"
    odd = agent.run("--search", 'kumquats"(')  # not FTS5 syntax: searched as words
    assert odd.returncode == 0


def test_session_dir_override(agent: Agent, server: ProtocolServer, tmp_path: Path) -> None:
    server.enqueue(text_reply("x"))
    other = tmp_path / "other-sessions"
    assert agent.run("--session-dir", str(other), "hi").returncode == 0
    assert agent.session_files() == []
    assert len(list(other.glob("*/*.jsonl"))) == 1
    listing = agent.run("--session-dir", str(other), "--sessions")
    assert "hi" in listing.stdout


def test_replay_serves_recorded_replies_without_calling_the_model(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(text_reply("recorded ", "reply"))
    agent.run("question")
    (recording,) = agent.session_files()
    server.reset()
    done = agent.run("--replay", str(recording), "--no-session", "question")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "recorded reply\n"
    assert server.requests == []
    missing = agent.run("--replay", "nope.jsonl", "question")
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr
    session_id = recording.stem.split("_", 1)[1]
    by_id = agent.run("--replay", session_id[:8], "--no-session", "question")  # a prefix
    assert by_id.returncode == 0, by_id.stderr
    assert by_id.stdout == "recorded reply\n" and server.requests == []
    unknown = agent.run("--replay", "0123abcd", "question")
    assert unknown.returncode == 2 and "--replay: no session '0123abcd'" in unknown.stderr


def test_agents_sharing_a_session_dir_continue_only_their_own(
    agent: Agent, server: ProtocolServer
) -> None:
    other = replace(agent, path=agent.path.with_name("other.py"))
    other.path.write_text(agent.path.read_text().replace('"tester"', '"other"'))
    server.enqueue(text_reply("t1"), text_reply("o1"), text_reply("t2"), text_reply("o2"))
    assert agent.run("tester asks").returncode == 0
    assert other.run("other asks").returncode == 0  # the newest session is other's
    assert agent.run("--continue", "tester again").returncode == 0
    assert _contents(server.requests[2])[-3:] == ["tester asks", "t1", "tester again"]
    assert other.run("--continue", "other again").returncode == 0
    assert _contents(server.requests[3])[-3:] == ["other asks", "o1", "other again"]
    rows = events_of(agent.run("--sessions", "--json").stdout)
    assert [r["first_prompt"] for r in rows] == ["tester asks"]


def test_continue_keeps_a_model_and_thinking_override(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("from other"), text_reply("still other"))
    keys = {"OTHER_API_KEY": "other-key"}
    first = agent.run("--model", "other", "--thinking", "high", "hi", env=keys)
    assert first.returncode == 0, first.stderr
    again = agent.run("--continue", "and again", env=keys)
    assert again.returncode == 0, again.stderr
    assert [r.json["model"] for r in server.requests] == ["other-model", "other-model"]
    assert server.requests[1].headers["authorization"] == "Bearer other-key"
    (session,) = agent.session_files()
    assert '"thinkingLevel":"high"' in session.read_text().replace(" ", "")
    missing = agent.run("--continue", "no key")  # the recorded model's key is checked
    assert missing.returncode == 2 and "OTHER_API_KEY" in missing.stderr

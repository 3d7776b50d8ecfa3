"""Interactive mode on a pseudo-terminal: /status, /compact, Ctrl-C, steering, pull points."""

from __future__ import annotations

from pathlib import Path

from harnessc.testing import ProtocolServer

from .clikit import Agent, Terminal, text_reply, tool_reply


def _messages(request: object) -> list[tuple[str, str]]:
    messages = request.json["messages"]  # type: ignore[attr-defined]
    return [(m["role"], str(m.get("content"))) for m in messages]


def test_status_ctrl_c_during_a_slow_tool_and_compact(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i")
    terminals.append(term)
    term.expect("/help lists commands")
    term.expect_prompt()

    server.enqueue(text_reply("Hi ", "there"))
    term.sendline("hello")
    term.expect("Hi there")
    term.expect_prompt()

    term.sendline("/status")
    status = term.expect_prompt()
    for part in ("session", "main: test-model", "tools     slow, approve", "context   2 messages"):
        assert part in status, status

    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 30})))
    term.sendline("wait a long time")
    term.expect("slow seconds=30")  # the spinner shows the running tool
    term.sendline("and then tidy up")  # steering for this run
    term.expect("[steering] queued: and then tidy up")
    term.interrupt()
    term.expect("[aborted] the session is kept")
    term.expect("[steering] not sent (the run was aborted): and then tidy up")
    term.expect_prompt()

    server.enqueue(text_reply("still here"))
    term.sendline("are you there?")
    term.expect("still here")
    term.expect_prompt()
    conversation = _messages(server.requests[-1])
    assert ("user", "wait a long time") in conversation  # the session was kept
    assert any("No result provided" in text for role, text in conversation if role == "tool")
    assert not any("tidy up" in text for _, text in conversation)  # dropped with the abort

    before = len(server.requests)
    server.set_handler(lambda request: text_reply("SUMMARY: greeted, waited, aborted."))
    term.sendline("/compact")
    term.expect("compacted: ")
    term.expect_prompt()
    server.set_handler(None)
    summary_requests = server.requests[before:]
    assert summary_requests  # the model was asked for the summary
    assert "summar" in str(summary_requests[0].json).lower()
    term.sendline("/tree")
    tree = term.expect_prompt()
    assert "compaction" in tree and "<- current" in tree

    term.eof()
    assert term.wait() == 0
    (session_file,) = agent.session_files()
    assert '"type":"compaction"' in session_file.read_text().replace(" ", "")


def test_steering_and_answering_an_external_tool(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i")
    terminals.append(term)
    term.expect_prompt()

    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 1.5})), text_reply("steered"))
    term.sendline("start working")
    term.expect("slow seconds=1.5")
    term.sendline("also check the logs")
    term.expect("[steering] queued")
    term.expect("steered")
    term.expect_prompt()
    after_tool = _messages(server.requests[1])
    assert after_tool[-1] == ("user", "also check the logs")
    assert after_tool[-2][0] == "tool"

    server.enqueue(
        tool_reply(("call_2", "approve", {"action": "deploy"})), text_reply("not deployed")
    )
    term.sendline("deploy it")
    term.expect("approve (call_2)")
    term.expect("y = approve, n = deny")
    term.sendline("n")
    term.expect("not deployed")
    term.expect_prompt()
    tool_messages = [text for role, text in _messages(server.requests[-1]) if role == "tool"]
    assert "denied by the user" in tool_messages[-1]

    term.sendline("/quit")
    assert term.wait() == 0


def test_budget_pause_asks_to_extend(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", "--max-turns", "1")
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 0})), text_reply("all done"))
    term.sendline("two turns of work")
    term.expect("budget limit turns hit (1 of 1)")
    term.expect("Extend by [1]")
    term.sendline("")
    term.expect("all done")
    term.expect_prompt()
    term.eof()
    assert term.wait() == 0


def test_templates_skills_and_hot_reload(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal], tmp_path: Path
) -> None:
    resources = tmp_path / "resources"
    (resources / "templates").mkdir(parents=True)
    (resources / "skills" / "tidy").mkdir(parents=True)
    (resources / "templates" / "review.md").write_text(
        "---\ndescription: Review a file\n---\nReview $1 carefully.\n"
    )
    (resources / "skills" / "tidy" / "SKILL.md").write_text(
        "---\nname: tidy\ndescription: Tidy up code\n---\nRemove dead code.\n"
    )
    term = Terminal(agent, "-i", "--watch", env={"AGENT_RESOURCES": str(resources)})
    terminals.append(term)
    term.expect_prompt()
    term.sendline("/templates")
    listing = term.expect_prompt()
    assert "/review" in listing and "Review a file" in listing and "/skill:tidy" in listing

    server.enqueue(text_reply("reviewed"), text_reply("tidied"))
    term.sendline("/review main.py")
    term.expect("reviewed")
    term.expect_prompt()
    assert server.requests[0].json["messages"][-1]["content"] == "Review main.py carefully."
    term.sendline("/skill:tidy now")
    term.expect("tidied")
    term.expect_prompt()
    skill_prompt = str(server.requests[1].json["messages"][-1]["content"])
    assert "Remove dead code." in skill_prompt and "now" in skill_prompt

    # --watch: a new template file is picked up while the REPL runs.
    (resources / "templates" / "explain.md").write_text("Explain $@ simply.\n")
    term.expect("[resources] 1 skills, 2 prompt templates", timeout=10)
    term.expect_prompt()  # the prompt is drawn again below the notice
    term.sendline("/help")
    assert "/explain" in term.expect_prompt()
    term.eof()
    assert term.wait() == 0


def test_settings_fork_and_tree_commands(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", env={"OTHER_API_KEY": "other-key"})
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(text_reply("one"))
    term.sendline("first")
    term.expect("one")
    term.expect_prompt()

    term.sendline("/model other")
    assert "model: other (other-model)" in term.expect_prompt()
    term.sendline("/thinking high")
    assert "thinking: high" in term.expect_prompt()
    term.sendline("/tools -approve")
    assert "active tools: slow" in term.expect_prompt()
    server.enqueue(text_reply("two"))
    term.sendline("second")
    term.expect("two")
    term.expect_prompt()
    request = server.requests[-1]
    assert request.json["model"] == "other-model"
    assert [t["function"]["name"] for t in request.json["tools"]] == ["slow"]
    assert request.headers["authorization"] == "Bearer other-key"

    term.sendline("/tree")
    tree = term.expect_prompt()
    first_reply = next(line for line in tree.splitlines() if "assistant: one" in line)
    entry_id = first_reply.split()[1]
    term.sendline(f"/fork {entry_id}")
    assert "forked" in term.expect_prompt()
    server.enqueue(text_reply("three"))
    term.sendline("third")
    term.expect("three")
    term.expect_prompt()
    contents = [m.get("content") for m in server.requests[-1].json["messages"]]
    assert "second" not in contents and contents[-3:] == ["first", "one", "third"]
    assert len(agent.session_files()) == 2

    term.sendline("/sessions")
    listing = term.expect_prompt()
    assert listing.count("first") == 2  # the original and the fork
    term.eof()
    assert term.wait() == 0


def test_quitting_before_any_prompt_leaves_no_empty_session(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(text_reply("noted"), text_reply("kiwi"))
    assert agent.run("remember kiwi").returncode == 0
    term = Terminal(agent, "-i")
    terminals.append(term)
    term.expect_prompt()
    term.eof()
    assert term.wait() == 0
    assert len(agent.session_files()) == 1  # the empty session of -i is gone
    done = agent.run("--continue", "which fruit?")
    assert done.returncode == 0, done.stderr
    contents = [m.get("content") for m in server.requests[-1].json["messages"]]
    assert contents[-3:] == ["remember kiwi", "noted", "which fruit?"]

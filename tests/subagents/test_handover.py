"""Hand-overs: two in parallel, each sub-agent isolated, a Claude Code file's tools,
the results and what each sub-agent used, events tagged with the agent path, and the
sessions on disk."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

from .kit import EXPLORER_MD, MODEL, Tree, events_of, task, text_reply, tool_reply, tool_texts

LEAD = f"""\
version: 1
name: lead
description: Plans a change and hands parts of it to sub-agents.
{MODEL}system_prompt: You are LEAD. Hand work to your sub-agents.
tools: [read, grep, ls, find, bash]
agents:
  reviewer:
    spec: reviewer.yaml
  code-explorer:
    from: .claude/agents/code-explorer.md
"""

REVIEWER = f"""\
version: 1
name: reviewer
description: Reviews a change and reports problems.
{MODEL}system_prompt: You are REVIEWER. Report problems, most important first.
tools: [read]
"""


def setup(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD)
    tree.write("reviewer.yaml", REVIEWER)
    tree.write(".claude/agents/code-explorer.md", EXPLORER_MD)
    tree.build()


def lead_rule(messages: list[dict[str, Any]]) -> Any:
    results = tool_texts(messages)
    if not results:
        return tool_reply(
            task("h1", "reviewer", "Review the change in app.py"),
            task("h2", "code-explorer", "Trace the login feature"),
        )
    return text_reply("LEAD SUMMARY | " + " | ".join(results))


def test_two_handovers_run_in_parallel_isolated(tree: Tree) -> None:
    setup(tree)
    both = threading.Event()
    overlapped: list[bool] = []

    def reviewer(messages: list[dict[str, Any]]) -> Any:
        both.set()  # the explorer's request must arrive while this one is open
        overlapped.append(explorer_seen.wait(10))
        return text_reply("No problems in app.py.")

    explorer_seen = threading.Event()

    def explorer(messages: list[dict[str, Any]]) -> Any:
        explorer_seen.set()
        both.wait(10)
        return text_reply("login: auth.py, session.py")

    tree.scripts.rules.update(LEAD=lead_rule, REVIEWER=reviewer, EXPLORER=explorer)
    done = tree.run("--json", "Ship the login change. LEAD-ONLY-CONTEXT")
    assert done.returncode == 0, done.stderr
    assert overlapped == [True]

    # Isolation: each sub-agent saw its system prompt and the hand-over prompt only.
    [reviewer_messages] = tree.scripts.seen["REVIEWER"]
    [explorer_messages] = tree.scripts.seen["EXPLORER"]
    for messages, prompt in (
        (reviewer_messages, "Review the change in app.py"),
        (explorer_messages, "Trace the login feature"),
    ):
        assert [m["role"] for m in messages][-1] == "user"
        assert messages[-1]["content"] == prompt
        assert "LEAD-ONLY-CONTEXT" not in json.dumps(messages)
        assert "You are LEAD" not in json.dumps(messages)

    # The lead's model saw one task tool with Claude Code's fields; the Claude Code
    # file's sub-agent got the harnessc tools its Claude Code names map to.
    lead_request = next(
        r.json for r in tree.server.requests if "You are LEAD" in json.dumps(r.json["messages"][0])
    )
    [handover] = [t for t in lead_request["tools"] if t["function"]["name"] == "task"]
    params = handover["function"]["parameters"]
    assert params["properties"]["subagent_type"]["enum"] == ["reviewer", "code-explorer"]
    assert set(params["required"]) == {"subagent_type", "description", "prompt"}
    assert "Reviews a change" in handover["function"]["description"]
    explorer_request = next(
        r.json for r in tree.server.requests if "You are EXPLORER" in json.dumps(r.json)
    )
    assert sorted(t["function"]["name"] for t in explorer_request["tools"]) == [
        "find",
        "grep",
        "ls",
        "read",
    ]
    reviewer_request = next(
        r.json for r in tree.server.requests if "You are REVIEWER" in json.dumps(r.json)
    )
    assert [t["function"]["name"] for t in reviewer_request["tools"]] == ["read"]

    # The results reached the lead, with what each sub-agent used.
    [final] = tree.scripts.seen["LEAD"][-1:]
    first, second = tool_texts(final)
    assert first.startswith("No problems in app.py.")
    assert "[reviewer: 1 turns, 0 tool calls" in first
    assert second.startswith("login: auth.py, session.py")

    # Events: the sub-agents' events in the lead's stream, tagged with the agent path.
    events = events_of(done.stdout)
    tagged = [e for e in events if e["type"] == "subagent"]
    paths = {tuple(e["agent_path"]) for e in tagged}
    assert paths == {("lead", "reviewer"), ("lead", "code-explorer")}
    ends = [e["event"] for e in tagged if e["event"]["type"] == "agent_end"]
    assert len(ends) == 2

    # Sessions: one file per sub-agent under the lead's session folder, linked both ways.
    [lead_file] = tree.sessions()
    children = sorted(lead_file.with_name(lead_file.stem).glob("*.jsonl"))
    assert [c.name for c in children] == ["code-explorer-h2.jsonl", "reviewer-h1.jsonl"]
    header = json.loads(children[1].read_text().splitlines()[0])
    assert header["metadata"]["agent_path"] == ["lead", "reviewer"]
    assert header["metadata"]["parent"]["call"] == "h1"
    lead_id = json.loads(lead_file.read_text().splitlines()[0])["id"]
    assert header["metadata"]["parent"]["session"] == lead_id
    lead_entries = [json.loads(line) for line in lead_file.read_text().splitlines()[1:]]
    results = [
        e["message"]
        for e in lead_entries
        if e.get("type") == "message" and e["message"].get("role") == "toolResult"
    ]
    assert results[0]["details"]["session"] == str(children[1])


def test_the_terminal_and_the_session_listing_show_the_tree(tree: Tree) -> None:
    setup(tree)
    tree.write("reviewer.yaml", REVIEWER)

    def reviewer(messages: list[dict[str, Any]]) -> Any:
        if not tool_texts(messages):
            return tool_reply(("r1", "read", {"path": "lead.yaml"}))
        return text_reply("Reviewed.")

    tree.scripts.rules.update(
        LEAD=lead_rule, REVIEWER=reviewer, EXPLORER=lambda m: text_reply("Explored.")
    )
    done = tree.run("Ship it")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    start = lines.index("> lead > reviewer: Review the change in app.py")
    read = next(i for i, line in enumerate(lines) if line.startswith("  [read] lead.yaml"))
    handover = next(i for i, line in enumerate(lines) if line.startswith("[task]"))
    assert start < read < handover

    listing = tree.run("--sessions")
    assert listing.returncode == 0, listing.stderr
    rows = listing.stdout.splitlines()
    assert len(rows) == 3, rows
    assert rows[1].startswith("  > ") and rows[1].endswith("lead > code-explorer")
    assert rows[2].startswith("  > ") and rows[2].endswith("lead > reviewer")

    # A fork of the lead's session copies the lead's conversation, not its sub-agents'.
    [lead_file] = tree.sessions()
    lead_id = json.loads(lead_file.read_text().splitlines()[0])["id"]
    tree.scripts.rules["LEAD"] = lambda m: text_reply("forked")
    last = json.loads(lead_file.read_text().splitlines()[-1])["id"]
    forked = tree.run("--session", lead_id, "--fork", last, "again")
    assert forked.returncode == 0, forked.stderr
    files = tree.sessions()
    assert len(files) == 2
    [fork_file] = [f for f in files if f != lead_file]
    assert not fork_file.with_name(fork_file.stem).exists()


def test_sub_agents_share_one_connection_pool(tree: Tree) -> None:
    setup(tree)

    def lead(messages: list[dict[str, Any]]) -> Any:
        done = len(tool_texts(messages))
        if done < 2:
            return tool_reply(task(f"h{done}", "reviewer", f"Review part {done}"))
        return text_reply("LEAD DONE")

    tree.scripts.rules.update(LEAD=lead, REVIEWER=lambda m: text_reply("ok"))
    done = tree.run("Review both parts")
    assert done.returncode == 0, done.stderr
    ports = [
        r.client_port for r in tree.server.requests if "You are REVIEWER" in json.dumps(r.json)
    ]
    assert len(ports) == 2 and ports[0] == ports[1]  # the second hand-over reused it


def test_harnessc_run_compiles_the_sub_agents_in_memory(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD)
    tree.write("reviewer.yaml", REVIEWER)
    tree.write(".claude/agents/code-explorer.md", EXPLORER_MD)
    tree.scripts.rules.update(
        LEAD=lead_rule,
        REVIEWER=lambda m: text_reply("Reviewed in memory."),
        EXPLORER=lambda m: text_reply("Explored."),
    )
    done = subprocess.run(
        [sys.executable, "-c", "from harnessc.cli import main; main()", "run", "lead.yaml", "Go"],
        capture_output=True,
        text=True,
        env=tree.env,
        cwd=tree.root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Reviewed in memory." in done.stdout
    assert not (tree.root / "generated").exists()


def test_a_typed_sub_agent_hands_back_its_value(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD)
    tree.write(
        "reviewer.yaml",
        REVIEWER
        + "output:\n  mode: prompted\n  schema:\n    type: object\n"
        + "    properties: {ok: {type: boolean}, problems: {type: integer}}\n"
        + "    required: [ok, problems]\n",
    )
    tree.write(".claude/agents/code-explorer.md", EXPLORER_MD)
    tree.build()
    tree.scripts.rules.update(
        LEAD=lead_rule,
        REVIEWER=lambda m: text_reply('{"ok": false, "problems": 2}'),
        EXPLORER=lambda m: text_reply("Explored."),
    )
    done = tree.run("Go")
    assert done.returncode == 0, done.stderr
    [final] = tree.scripts.seen["LEAD"][-1:]
    reviewed = tool_texts(final)[0]
    assert json.loads(reviewed.split("\n\n")[0]) == {"ok": False, "problems": 2}

"""The tree's usage: the usage line and ``agent_end`` count every agent of the tree, in
total and by agent path, and the total is the sum of the agents'."""

from __future__ import annotations

from typing import Any

from .kit import MODEL, Tree, events_of, task, text_reply, tool_reply, tool_texts

LEAD = f"""\
version: 1
name: lead
description: Hands a job to a worker.
{MODEL}system_prompt: You are LEAD.
agents:
  worker: {{spec: worker.yaml}}
"""

WORKER = f"""\
version: 1
name: worker
description: Works through a job one step at a time.
{MODEL}system_prompt: You are WORKER.
tools: [ls]
"""


def lead(messages: list[dict[str, Any]]) -> Any:
    results = tool_texts(messages)
    if not results:
        return tool_reply(task("h1", "worker", "Do the job in 2 steps"))
    return text_reply("LEAD DONE")


def worker(messages: list[dict[str, Any]]) -> Any:
    steps = len(tool_texts(messages))
    if steps < 2:
        return tool_reply((f"s{steps}", "ls", {}))
    return text_reply(f"WORKER finished {steps} steps")


def setup(tree: Tree) -> None:
    tree.setup({"lead.yaml": LEAD, "worker.yaml": WORKER}, LEAD=lead, WORKER=worker)


def test_the_usage_line_counts_the_whole_tree_and_each_agent(tree: Tree) -> None:
    setup(tree)
    done = tree.run("Do the job")
    assert done.returncode == 0, done.stderr
    # a scripted text reply reports 10 tokens in and 5 out, a tool call reply 20 and 10:
    # the lead took 2 turns and called 1 tool, the worker 3 turns and 2 tools
    lines = [line for line in done.stderr.splitlines() if line.startswith("[usage]")]
    assert lines[0].startswith("[usage] 5 turns, 3 tool calls, 80 tokens in / 40 out"), lines
    assert lines[1:] == [
        "[usage]   lead: 2 turns, 1 tool call, 30 tokens in / 15 out",
        "[usage]   lead > worker: 3 turns, 2 tool calls, 50 tokens in / 25 out",
    ]


def test_agent_end_carries_the_trees_usage(tree: Tree) -> None:
    setup(tree)
    done = tree.run("--json", "Do the job")
    assert done.returncode == 0, done.stderr
    [end] = [e for e in events_of(done.stdout) if e["type"] == "agent_end"]
    usage = end["usage"]
    assert set(usage["agents"]) == {"lead", "lead > worker"}
    assert usage["agents"]["lead > worker"]["turns"] == 3
    assert usage["agents"]["lead"]["tool_calls"] == 1
    for key, value in usage["total"].items():
        assert value == sum(agent[key] for agent in usage["agents"].values()), key
    assert usage["total"]["input_tokens"] == 80 and usage["total"]["output_tokens"] == 40

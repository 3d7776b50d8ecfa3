"""One budget and abort: a limit reached inside a sub-agent pauses the whole run and
a new process resumes it where it stopped; what sub-agents use counts in the top-level
budget; an abort stops every running sub-agent."""

from __future__ import annotations

import json
import signal
import time
from typing import Any

from .kit import MODEL, Tree, events_of, task, text_reply, tool_reply, tool_texts

LEAD = f"""\
version: 1
name: lead
description: Hands a long job to a worker.
{MODEL}system_prompt: You are LEAD.
budget: {{turns: 3}}
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
        return tool_reply(task("h1", "worker", "Do the job in 4 steps"))
    return text_reply("LEAD DONE | " + results[0])


def worker(messages: list[dict[str, Any]]) -> Any:
    steps = len(tool_texts(messages))
    if steps < 4:
        return tool_reply((f"s{steps}", "ls", {}))
    return text_reply(f"WORKER finished {steps} steps")


def setup(tree: Tree) -> None:
    tree.setup({"lead.yaml": LEAD, "worker.yaml": WORKER}, LEAD=lead, WORKER=worker)


def test_a_budget_exhausted_inside_a_sub_agent_pauses_the_run(tree: Tree) -> None:
    setup(tree)
    paused = tree.run("Do the job")
    assert paused.returncode == 3, paused.stderr
    assert "budget limit hit: turns" in paused.stderr
    # The lead used 1 turn of 3: its worker got the 2 left, not a budget of its own.
    assert len(tree.scripts.seen["WORKER"]) == 2
    [lead_file] = tree.sessions()
    pause = [
        json.loads(line) for line in lead_file.read_text().splitlines() if "harnessc.pause" in line
    ]
    assert pause[-1]["data"]["run"]["usage"]["turns"] == 3  # the worker's 2 count in the lead's

    done = tree.run("--continue", "--max-turns", "10")
    assert done.returncode == 0, done.stderr
    assert "LEAD DONE | WORKER finished 4 steps" in done.stdout
    # The worker resumed where it stopped: its steps were not repeated.
    assert len(tree.scripts.seen["WORKER"]) == 5
    assert "[worker: 5 turns, 4 tool calls" in done.stdout


def test_abort_stops_every_running_sub_agent(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD.replace("budget: {turns: 3}\n", ""))
    tree.write("worker.yaml", WORKER)
    tree.build()
    from harnessc.testing import ScriptedResponse
    from harnessc.testing.streams import openai_events

    def slow_worker(messages: list[dict[str, Any]]) -> Any:
        return ScriptedResponse.sse(openai_events(["never", " done"]), chunk_delay_s=20)

    tree.scripts.rules.update(LEAD=lead, WORKER=slow_worker)
    process = tree.popen("--json", "Do the job")
    try:
        deadline = time.monotonic() + 20
        while "WORKER" not in tree.scripts.seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "WORKER" in tree.scripts.seen
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    events = events_of(stdout)
    ends = [
        e["event"] for e in events if e["type"] == "subagent" and e["event"]["type"] == "agent_end"
    ]
    assert [e["status"] for e in ends] == ["aborted"]
    [lead_end] = [e for e in events if e["type"] == "agent_end"]
    assert lead_end["status"] == "aborted"

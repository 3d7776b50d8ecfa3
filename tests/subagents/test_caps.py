"""Caps on hand-overs: ``max_parallel`` (one agent's hand-overs running at once) and
``max_parallel_tree`` (the whole tree's); the rest wait, in the order they were asked."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from harnessc.spec import load_spec

from .kit import MODEL, Tree, events_of, task, text_reply, tool_reply, tool_texts

WORKER = f"""\
version: 1
name: worker
description: Does one job.
{MODEL}system_prompt: You are WORKER.
"""


def running_at_once(events: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """The most sub-agents running at the same time in the lead's event stream, and the
    hand-over call ids in the order their sub-agents started."""
    running: set[tuple[str, ...]] = set()
    most = 0
    started: list[str] = []
    for event in events:
        if event["type"] != "subagent":
            continue
        key = (*event["agent_path"], event["tool_call_id"])
        kind = event["event"]["type"]
        if kind in ("agent_start", "agent_resume"):
            running.add(key)
            started.append(event["tool_call_id"])
        elif kind in ("agent_end", "agent_pause"):
            running.discard(key)
        most = max(most, len(running))
    return most, started


class InFlight:
    """Counts a sub-agent's model requests open at once at the server; each waits until
    ``cap`` are open (or all that are left), so the ones allowed to overlap do."""

    def __init__(self, total: int, cap: int) -> None:
        self.total, self.cap = total, cap
        self.open = self.most = self.finished = 0
        self.lock = threading.Condition()

    def __call__(self, messages: list[dict[str, Any]]) -> Any:
        with self.lock:
            self.open += 1
            self.most = max(self.most, self.open)
            self.lock.notify_all()
            self.lock.wait_for(
                lambda: self.open >= min(self.cap, self.total - self.finished), timeout=10
            )
            self.open -= 1
            self.finished += 1
            self.lock.notify_all()
        return text_reply("done: " + str(messages[-1]["content"]))


def test_ten_hand_overs_run_three_at_a_time_in_order(tree: Tree) -> None:
    tree.write(
        "lead.yaml",
        f"""\
version: 1
name: lead
description: Hands ten jobs out.
{MODEL}system_prompt: You are LEAD.
agents:
  worker: {{spec: worker.yaml}}
max_parallel: 3
""",
    )
    tree.write("worker.yaml", WORKER)
    tree.build()
    jobs = [task(f"h{i}", "worker", f"job {i}") for i in range(10)]

    def lead(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        return text_reply(f"LEAD got {len(results)}") if results else tool_reply(*jobs)

    flight = InFlight(total=10, cap=3)
    tree.scripts.rules.update(LEAD=lead, WORKER=flight)
    done = tree.run("--json", "Do ten jobs")
    assert done.returncode == 0, done.stderr
    assert "LEAD got 10" in done.stdout
    most, started = running_at_once(events_of(done.stdout))
    assert most == 3
    assert flight.most == 3
    assert started == [f"h{i}" for i in range(10)]  # the rest waited, in call order
    # the ones that waited said so while they waited
    waiting = [
        e
        for e in events_of(done.stdout)
        if e["type"] == "tool_execution_update" and "waiting to start" in str(e)
    ]
    assert {e["tool_call_id"] for e in waiting} == {f"h{i}" for i in range(3, 10)}


PLANNER = f"""\
version: 1
name: planner
description: Plans a part and has it checked.
{MODEL}system_prompt: You are PLANNER.
agents:
  checker: {{spec: checker.yaml}}
"""
CHECKER = f"""\
version: 1
name: checker
description: Checks one thing.
{MODEL}system_prompt: You are CHECKER.
"""


def test_the_trees_cap_holds_across_nested_hand_overs(tree: Tree) -> None:
    tree.write(
        "lead.yaml",
        f"""\
version: 1
name: lead
description: Plans in two parts.
{MODEL}system_prompt: You are LEAD.
agents:
  planner: {{spec: planner.yaml}}
max_depth: 2
max_parallel_tree: 3
""",
    )
    tree.write("planner.yaml", PLANNER)
    tree.write("checker.yaml", CHECKER)
    tree.build()

    def lead(messages: list[dict[str, Any]]) -> Any:
        if tool_texts(messages):
            return text_reply("LEAD DONE")
        return tool_reply(task("p1", "planner", "part one"), task("p2", "planner", "part two"))

    def planner(messages: list[dict[str, Any]]) -> Any:
        if tool_texts(messages):
            return text_reply("PLANNED")
        part = messages[-1]["content"].split()[-1]
        return tool_reply(*[task(f"{part}-c{i}", "checker", f"check {i}") for i in range(3)])

    checkers = InFlight(total=6, cap=1)
    tree.scripts.rules.update(LEAD=lead, PLANNER=planner, CHECKER=checkers)
    done = tree.run("--json", "Plan it")
    assert done.returncode == 0, done.stderr
    most, started = running_at_once(events_of(done.stdout))
    assert most == 3  # two planners and one checker
    assert checkers.most == 1
    assert len(started) == 8


def test_a_trees_cap_below_its_depth_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "lead.yaml").write_text(
        f"version: 1\nname: lead\n{MODEL}agents:\n  planner: {{spec: planner.yaml}}\n"
        "max_depth: 2\nmax_parallel_tree: 1\n"
    )
    (tmp_path / "planner.yaml").write_text(PLANNER)
    (tmp_path / "checker.yaml").write_text(CHECKER)
    loaded = load_spec(tmp_path / "lead.yaml")
    [problem] = [d.format() for d in loaded.diagnostics]
    assert problem.endswith(
        "lead.yaml:12:20: error: max_parallel_tree 1 is below the tree's depth 2: the deepest "
        "hand-over could never start (set max_parallel_tree: 2 or more)"
    )

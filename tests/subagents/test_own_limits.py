"""Per-sub-agent limits: ``agents.<name>.budget`` in the parent's spec bounds each
hand-over to that sub-agent beside the tree's budget; hitting one pauses the whole run
like the tree's budget, and a resume raising that limit lets the sub-agent go on where
it stopped (in a new process too)."""

from __future__ import annotations

import json

from .kit import MODEL, Tree
from .test_budget_abort import WORKER, lead, worker

LEAD = f"""\
version: 1
name: lead
description: Hands a long job to a worker.
{MODEL}system_prompt: You are LEAD.
agents:
  worker: {{spec: worker.yaml, budget: {{turns: 2}}}}
"""


def test_a_sub_agents_own_turn_limit_pauses_the_run_and_a_raise_resumes_it(tree: Tree) -> None:
    tree.setup({"lead.yaml": LEAD, "worker.yaml": WORKER}, LEAD=lead, WORKER=worker)
    generated = (tree.root / "generated" / "lead.py").read_text()
    assert "budget=Budget(turns=2)" in generated

    paused = tree.run("--json", "Do the job")
    assert paused.returncode == 3, paused.stderr
    # the lead has no limit: the worker stopped at its own 2 turns
    assert len(tree.scripts.seen["WORKER"]) == 2
    events = [json.loads(line) for line in paused.stdout.splitlines()]
    [pause] = [e for e in events if e["type"] == "agent_pause"]
    assert pause["reason"] == "budget_exceeded:turns", pause

    again = tree.run("--continue", "--json")  # no raise: the worker's limit still holds
    assert again.returncode == 3, again.stderr
    assert len(tree.scripts.seen["WORKER"]) == 2

    done = tree.run("--continue", "--max-turns", "10")  # a new process raises it
    assert done.returncode == 0, done.stderr
    assert "LEAD DONE | WORKER finished 4 steps" in done.stdout
    assert len(tree.scripts.seen["WORKER"]) == 5  # resumed in place, nothing repeated
    assert "[worker: 5 turns, 4 tool calls" in done.stdout

"""``read_only: true`` on a python tool: its batches take no workspace checkpoint; a
python tool that does not declare it may change files and still takes two. The
declaration changes nothing else: a permission ask still holds the call, a budget
still cuts the batch, and a restarted harness keeps the rule."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from harnessc.runtime.checkpoints.history import points
from harnessc.runtime.core.budget import Budget

from .agentkit import MODEL, AgentKit, agent, calls, model, text

__all__ = ["agent", "model"]  # the fixtures

LOOKTOOLS = '''\
"""Python tools of the test agent: one that only reads, one that writes."""

import os


def peek(path: str) -> str:
    """The text of the file at path (in the workspace)."""
    with open(os.path.join(os.environ["FILES_ROOT"], path)) as fh:
        return fh.read()


def jot(path: str, text: str) -> str:
    """Write text to the file at path (in the workspace)."""
    with open(os.path.join(os.environ["FILES_ROOT"], path), "w") as fh:
        fh.write(text)
    return f"wrote {path}"
'''

SPEC = f"""\
version: 1
name: lead
{MODEL}
system_prompt: You are LEAD.
tools:
  - python: {{function: looktools:peek, read_only: true}}
  - python: looktools:jot
"""


def _build(agent: AgentKit, extra: str = "") -> None:
    (agent.root / "looktools.py").write_text(LOOKTOOLS)
    agent.build(SPEC + extra)


def test_the_declaration_reaches_the_tool(agent: AgentKit) -> None:
    _build(agent)
    assert agent.module is not None
    source = Path(agent.module.__file__ or "").read_text()
    assert "read_only=True" in source
    options = agent.module.build_options()
    tools = {t.name: t for t in options.tools}
    assert tools["peek"].read_only is True
    assert tools["jot"].read_only is False  # undeclared: it may change files


def test_a_read_only_batch_takes_no_checkpoint(agent: AgentKit) -> None:
    (agent.ws / "notes.txt").write_text("hello\n")
    agent.script.plays[("LEAD", "look")] = [
        calls(("peek", {"path": "notes.txt"}), ("peek", {"path": "notes.txt"})),
        text("looked"),
    ]
    agent.script.plays[("LEAD", "write")] = [
        calls(("jot", {"path": "out.txt", "text": "x"})),
        text("wrote"),
    ]
    agent.script.plays[("LEAD", "both")] = [
        calls(("peek", {"path": "notes.txt"}), ("jot", {"path": "out.txt", "text": "y"})),
        text("both done"),
    ]
    _build(agent)
    harness = agent.harness()

    async def run(prompt: str) -> Any:
        return await harness.prompt(prompt)

    assert asyncio.run(run("look")).status == "done"
    assert points(harness.session) == []
    assert asyncio.run(run("write")).status == "done"
    assert [p.checkpoint.phase for p in points(harness.session)] == ["before", "after"]
    # a batch with one call that may change files checkpoints, naming that call only
    assert asyncio.run(run("both")).status == "done"
    before = [p.tools for p in points(harness.session) if p.checkpoint.phase == "before"]
    assert before == [["jot"], ["jot"]]
    assert (agent.ws / "out.txt").read_text() == "y"
    asyncio.run(harness.close())


def test_an_ask_a_budget_and_a_restart_hold_for_a_read_only_tool(agent: AgentKit) -> None:
    (agent.ws / "notes.txt").write_text("hello\n")
    agent.script.plays[("LEAD", "many")] = [
        calls(
            ("peek", {"path": "notes.txt"}),
            ("jot", {"path": "a.txt", "text": "a"}),
            ("peek", {"path": "a.txt"}),
        ),
        text("many done"),
    ]
    agent.script.plays[("LEAD", "again")] = [
        calls(("peek", {"path": "a.txt"})),
        text("again done"),
    ]
    _build(agent, "permissions:\n  ask: [peek]\nbudget:\n  tool_calls: 2\n")
    harness = agent.harness()

    async def run() -> Any:
        first = await harness.prompt("many")
        # the ask holds the read-only tool as any other: declaring it grants nothing
        assert first.status == "paused", first
        assert [c.name for c in harness.held_tool_calls] == ["peek"]
        held = harness.held_tool_calls[0]
        second = await harness.resume(approvals={held.id: True})
        # the budget of two calls cuts the batch before the third
        while second.status == "paused" and harness.held_tool_calls:
            second = await harness.resume(approvals={c.id: True for c in harness.held_tool_calls})
        assert second.status == "paused", second
        return await harness.resume(budget=Budget(tool_calls=10), approvals={})

    result = asyncio.run(run())
    while result.status == "paused" and harness.held_tool_calls:
        result = asyncio.run(
            harness.resume(approvals={c.id: True for c in harness.held_tool_calls})
        )
    assert result.status == "done", result
    assert (agent.ws / "a.txt").read_text() == "a"
    session = harness.session
    before = [p.tools for p in points(session) if p.checkpoint.phase == "before"]
    assert before == [["jot"]]  # only the writing call's part of the batch
    path = session.path
    assert path is not None
    asyncio.run(harness.close())

    # a restart: another harness on the same session; the read-only batch takes none
    again = agent.harness(agent.repo.open(path))

    async def resumed() -> Any:
        done = await again.prompt("again")
        while done.status == "paused" and again.held_tool_calls:
            done = await again.resume(approvals={c.id: True for c in again.held_tool_calls})
        return done

    assert asyncio.run(resumed()).status == "done"
    assert len(points(again.session)) == 2  # still only the jot batch's pair
    asyncio.run(again.close())

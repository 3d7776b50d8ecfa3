"""An agent writes, edits, deletes and renames files with every kind of tool (write,
edit, bash, a python tool, an MCP server's tool, a sub-agent) over several turns;
rewinding to each earlier entry restores the workspace byte for byte, the conversation
follows the chosen mode, and an outside edit is reported, not lost. With a permission
ask, a budget pause and a restart too."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from harnessc.runtime.checkpoints.history import points
from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.messages import message_text

from .agentkit import AgentKit, agent, calls, lead_spec, model, text
from .conftest import tree_state

TURNS: dict[str, list[Any]] = {
    "turn one": [
        calls(
            ("write", {"path": "a.txt", "content": "alpha\n"}),
            ("make_file", {"path": "run.sh", "text": "#!/bin/sh\necho hi\n", "mode": 0o755}),
        ),
        text("one done"),
    ],
    "turn two": [
        calls(
            ("edit", {"path": "a.txt", "edits": [{"old_text": "alpha", "new_text": "beta"}]}),
            ("bash", {"command": "mkdir -p d && ln -s ../a.txt d/link && mv run.sh tool.sh"}),
        ),
        text("two done"),
    ],
    "turn three": [
        calls(("task", {"subagent_type": "helper", "description": "tidy", "prompt": "tidy up"})),
        text("three done"),
    ],
    "turn four": [
        calls(
            ("mcp__files__save", {"path": "mcp.txt", "text": "from mcp\n"}),
            ("bash", {"command": "mv d e && rm e/link && ln -s ../tool.sh e/link2"}),
        ),
        text("four done"),
    ],
    "turn five": [text("five done")],
}
__all__ = ["agent", "model"]  # the fixtures

HELPER_TURN = [
    calls(
        ("bash", {"command": "rm a.txt && printf 'x\\000y' > new.bin && chmod 600 new.bin"}),
        ("write", {"path": "notes/n.md", "content": "# notes\n"}),
    ),
    text("tidied"),
]


def _play(agent: AgentKit) -> None:
    for prompt, replies in TURNS.items():
        agent.script.plays[("LEAD", prompt)] = replies
    agent.script.plays[("HELPER", "tidy up")] = HELPER_TURN


def _user_entries(session: Any) -> dict[str, str]:
    return {message_text(e.message): e.id for e in session.entries() if e.role == "user"}


def _last_user(harness: Any) -> str:
    users = [m for m in harness.messages if m.role == "user"]
    return message_text(users[-1])


def test_every_kind_of_tool_rewinds_byte_for_byte_in_each_mode(agent: AgentKit) -> None:
    _play(agent)
    agent.build(lead_spec())
    (agent.ws / "README").write_text("there before the agent\n")
    harness = agent.harness()
    states = [tree_state(agent.ws)]

    async def work() -> None:
        for prompt in ("turn one", "turn two", "turn three", "turn four"):
            result = await harness.prompt(prompt)
            assert result.status == "done", (prompt, result)
            states.append(tree_state(agent.ws))

    asyncio.run(work())
    # every tool changed the workspace as scripted
    assert states[1]["run.sh"] == ("file", 0o755, b"#!/bin/sh\necho hi\n")
    assert states[2]["d/link"] == ("link", "../a.txt") and "tool.sh" in states[2]
    assert states[2]["a.txt"][2] == b"beta\n"
    assert "a.txt" not in states[3] and states[3]["new.bin"] == ("file", 0o600, b"x\0y")
    assert states[4]["mcp.txt"][2] == b"from mcp\n" and states[4]["e/link2"][0] == "link"
    session = harness.session
    # a checkpoint before and after each batch, beside the reply that asked for it
    phases = [p.checkpoint.phase for p in points(session)]
    assert phases == ["before", "after"] * 4
    tools = [p.tools for p in points(session) if p.checkpoint.phase == "before"]
    assert tools == [
        ["write", "make_file"],
        ["edit", "bash"],
        ["task"],
        ["mcp__files__save", "bash"],
    ]
    replies = {p.guards for p in points(session)}
    assert all(session.get_entry(g).role == "assistant" for g in replies)  # type: ignore[union-attr]
    users = _user_entries(session)
    tip = session.leaf_id
    assert tip is not None

    async def rewind(target: str, mode: str, **kw: Any) -> Any:
        return await harness.rewind(target, mode=mode, **kw)

    # both: back to each turn's prompt, newest first
    for number, prompt in reversed(
        list(enumerate(["turn one", "turn two", "turn three", "turn four"]))
    ):
        report = asyncio.run(rewind(users[prompt], "both"))
        assert report.done and report.moved, report.note
        assert tree_state(agent.ws) == states[number], prompt
        assert _last_user(harness) == prompt
    # and forward again to where the session was: the files of the tip
    report = asyncio.run(rewind(tip, "both"))
    assert tree_state(agent.ws) == states[4]
    assert message_text(harness.messages[-1]) == "four done"

    # files only: the conversation stays
    report = asyncio.run(rewind(users["turn two"], "files"))
    assert tree_state(agent.ws) == states[1] and not report.moved
    assert message_text(harness.messages[-1]) == "four done"
    # conversation only: the files stay
    report = asyncio.run(rewind(users["turn three"], "conversation"))
    assert tree_state(agent.ws) == states[1] and report.moved
    assert _last_user(harness) == "turn three"

    # the shown diff, before anything changes
    asyncio.run(rewind(tip, "both"))
    dry = asyncio.run(rewind(users["turn two"], "both", dry_run=True))
    assert dry.plan is not None and not dry.done and tree_state(agent.ws) == states[4]
    assert "D mcp.txt" in dry.plan.lines()
    assert "-from mcp" in dry.diff

    # an outside edit since the checkpoint is reported and kept
    (agent.ws / "tool.sh").write_text("the user's own edit\n")
    report = asyncio.run(rewind(users["turn two"], "both"))
    assert [k.path for k in report.outcome.kept] == ["tool.sh"]
    assert report.plan is not None
    assert [c.path for c in report.plan.conflicts] == ["tool.sh"]
    assert (agent.ws / "tool.sh").read_text() == "the user's own edit\n"
    expected = dict(states[1])
    expected["tool.sh"] = tree_state(agent.ws)["tool.sh"]
    assert tree_state(agent.ws) == expected
    report = asyncio.run(rewind(users["turn two"], "files", force=True))
    assert tree_state(agent.ws) == states[1]

    # the next prompt goes on from the rewound conversation
    async def five() -> Any:
        return await harness.prompt("turn five")

    assert asyncio.run(five()).status == "done"
    sent = [message_text_of(m) for m in agent.script.seen[-1] if m["role"] == "user"]
    assert sent == ["turn one", "turn two", "turn five"]
    asyncio.run(harness.close())


def message_text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


SOLO = """\
version: 1
name: lead
{model}
system_prompt: You are LEAD.
tools: [write, bash]
permissions:
  ask: ["Bash(*)"]
budget:
  tool_calls: 2
"""


def test_a_permission_ask_a_budget_pause_and_a_restart(agent: AgentKit) -> None:
    from .agentkit import MODEL

    agent.script.plays[("LEAD", "many")] = [
        calls(
            ("write", {"path": "one.txt", "content": "1\n"}),
            ("bash", {"command": "echo 2 > two.txt && chmod 700 two.txt"}),
            ("write", {"path": "three.txt", "content": "3\n"}),
        ),
        text("many done"),
    ]
    agent.build(SOLO.format(model=MODEL))
    (agent.ws / "keep.txt").write_text("before\n")
    before = tree_state(agent.ws)
    harness = agent.harness()

    async def run() -> Any:
        first = await harness.prompt("many")
        # the ask holds bash: write ran, its checkpoints are taken, bash waits
        assert first.status == "paused", first
        held = harness.held_tool_calls
        assert [c.name for c in held] == ["bash"]
        assert (agent.ws / "one.txt").exists() and not (agent.ws / "two.txt").exists()
        second = await harness.resume(approvals={held[0].id: True})
        # the budget of two calls cut the batch before the third
        assert second.status == "paused", second
        assert (agent.ws / "two.txt").exists() and not (agent.ws / "three.txt").exists()
        return await harness.resume(budget=Budget(tool_calls=10))

    assert asyncio.run(run()).status == "done"
    after = tree_state(agent.ws)
    assert after["three.txt"][2] == b"3\n" and after["two.txt"][1] == 0o700
    session = harness.session
    phases = [p.checkpoint.phase for p in points(session)]
    assert phases == ["before", "after"] * 3  # one pair for each part of the batch
    path = session.path
    assert path is not None
    asyncio.run(harness.close())

    # a restart: the session opened by another harness (the stat cache from disk)
    again = agent.harness(agent.repo.open(path))
    users = _user_entries(again.session)
    report = asyncio.run(again.rewind(users["many"], mode="both"))
    assert report.done and tree_state(agent.ws) == before
    assert _last_user(again) == "many"
    report = asyncio.run(again.rewind(again.session.branch()[-1].id, mode="files"))
    asyncio.run(again.close())
    del report


def test_checkpoints_off_take_none(agent: AgentKit) -> None:
    from .agentkit import MODEL

    agent.script.plays[("LEAD", "write")] = [
        calls(("write", {"path": "x.txt", "content": "x"})),
        text("ok"),
    ]
    agent.build(
        SOLO.format(model=MODEL).replace("permissions:", "checkpoints: false\npermissions:")
    )
    harness = agent.harness()
    assert asyncio.run(harness.prompt("write")).status == "done"
    assert points(harness.session) == []
    assert os.path.exists(agent.ws / "x.txt")
    asyncio.run(harness.close())
    Path(agent.ws / "x.txt").unlink()


def test_a_rewind_while_a_permission_ask_holds_the_run(agent: AgentKit) -> None:
    """Paused at an ask: a rewind of the files leaves the run paused (the answer then runs
    the held call on the rewound files); a rewind of both leaves the pause on the old
    branch, and a process opening the session afterwards finds no paused run."""
    from .agentkit import MODEL

    agent.script.plays[("LEAD", "held")] = [
        calls(
            ("write", {"path": "one.txt", "content": "1\n"}),
            ("bash", {"command": "cat one.txt > copy.txt || echo none > copy.txt"}),
        ),
        text("held done"),
    ]
    agent.build(SOLO.format(model=MODEL).replace("tool_calls: 2", "tool_calls: 20"))
    before = tree_state(agent.ws)
    harness = agent.harness()

    async def files_then_resume() -> Any:
        first = await harness.prompt("held")
        assert first.status == "paused" and (agent.ws / "one.txt").exists()
        users = _user_entries(harness.session)
        report = await harness.rewind(users["held"], mode="files")
        assert report.done and tree_state(agent.ws) == before
        [held] = harness.held_tool_calls  # still paused, on the same branch
        return await harness.resume(approvals={held.id: True})

    assert asyncio.run(files_then_resume()).status == "done"
    assert (agent.ws / "copy.txt").read_text() == "none\n"  # one.txt was rewound away
    asyncio.run(harness.close())
    for name in ("copy.txt",):
        (agent.ws / name).unlink()

    again = agent.harness()

    async def both_while_paused() -> None:
        first = await again.prompt("held")
        assert first.status == "paused" and (agent.ws / "one.txt").exists()
        users = _user_entries(again.session)
        report = await again.rewind(users["held"], mode="both", force=True)
        assert report.done and report.moved
        assert again.held_tool_calls == []

    asyncio.run(both_while_paused())
    assert tree_state(agent.ws) == before
    path = again.session.path
    assert path is not None
    asyncio.run(again.close())
    reopened = agent.harness(agent.repo.open(path))
    assert reopened.held_tool_calls == []
    assert _last_user(reopened) == "held"
    asyncio.run(reopened.close())

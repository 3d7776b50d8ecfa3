"""Hot reload while a harness runs: new skills reach the next turn, never the current one."""

from __future__ import annotations

import asyncio

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.resources import load_resources
from harnessc.runtime.tools import create_read_tool, python_tool


def _skill(description: str) -> str:
    return f"---\nname: alpha\ndescription: {description}\n---\nAlpha body.\n"


BROKEN = "---\nname: alpha\ndescription: 'never closed\n---\n"


def test_edit_break_fix_skill_while_running(tmp_path):
    skills = tmp_path / "skills"
    (skills / "alpha").mkdir(parents=True)
    skill_file = skills / "alpha" / "SKILL.md"
    skill_file.write_text(_skill("version one"))
    prompts: list[str] = []
    harness_box: list[AgentHarness] = []

    async def write_skill(text: str) -> str:
        """Rewrite the skill file and wait until the watcher has seen it."""
        harness = harness_box[0]
        skill_file.write_text(text)
        for _ in range(200):  # the harness keeps the change pending: mid-turn
            if harness.pending_resources is not None:
                return "written"
            await asyncio.sleep(0.02)
        return "watcher did not notice"

    steps = [
        reply_tool_calls([("write_skill", {"text": _skill("version two")})]),
        reply_tool_calls([("write_skill", {"text": BROKEN})]),
        reply_tool_calls([("write_skill", {"text": _skill("version three")})]),
        reply_text("all done"),
    ]

    def model(context: Context):
        prompts.append(context.system_prompt)
        return steps[len(prompts) - 1]

    async def scenario():
        harness = AgentHarness(
            AgentHarnessOptions(
                models={"main": Model(id="scripted-1", api="scripted", provider="test")},
                tools=[python_tool(write_skill), create_read_tool()],  # skills need read
                provider=ScriptedProvider(model),
                resources=load_resources(skills=[skills]),
                system_prompt="You are a test agent.",
            )
        )
        harness_box.append(harness)
        log = EventLog()
        harness.subscribe(log)
        await harness.watch_resources()
        try:
            result = await harness.prompt("go")
        finally:
            await harness.close()
        return result, log

    result, log = asyncio.run(scenario())
    assert result.status == "done"
    assert len(prompts) == 4
    assert "<description>version one</description>" in prompts[0]
    assert "<description>version two</description>" in prompts[1]
    # broken file: the last good version stays in the prompt
    assert "<description>version two</description>" in prompts[2]
    assert "<description>version three</description>" in prompts[3]
    for prompt in prompts:
        assert prompt.startswith("You are a test agent.") and "<available_skills>" in prompt

    tool_results = [e for e in log if e.type == "tool_execution_end"]
    assert len(tool_results) == 3
    events = [
        e
        for e in log
        if e.type in ("resources_update", "turn_end", "turn_start", "tool_execution_end")
    ]
    kinds = [e.type for e in events]
    updates = [e for e in events if e.type == "resources_update"]
    assert len(updates) == 3
    # each update lands after the turn that caused it ended, before the next turn starts
    for update in updates:
        index = kinds.index("resources_update", events.index(update))
        assert kinds[index - 1] == "turn_end"
        assert kinds[index + 1] == "turn_start"
    assert updates[0].skills == ["alpha"] and updates[0].diagnostics == []
    assert any("not closed" in d for d in updates[1].diagnostics)
    assert any("kept the previous version" in d for d in updates[1].diagnostics)
    assert updates[2].diagnostics == []

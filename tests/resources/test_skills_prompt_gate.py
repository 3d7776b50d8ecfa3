"""The skills block reaches the system prompt only while `read` is active (pi's rule)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text
from harnessc.runtime.resources import load_resources
from harnessc.runtime.tools import create_ls_tool, create_read_tool


def _prompts(tmp_path: Path, tools: list, active: list[str] | None) -> list[str]:
    skill = tmp_path / "skills" / "alpha"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: alpha\ndescription: does alpha\n---\nBody.\n")
    prompts: list[str] = []

    def model(context: Context):
        prompts.append(context.system_prompt)
        return reply_text("ok")

    async def scenario() -> None:
        harness = AgentHarness(
            AgentHarnessOptions(
                models={"main": Model(id="scripted-1", api="scripted", provider="test")},
                tools=tools,
                active_tool_names=active,
                provider=ScriptedProvider(model),
                resources=load_resources(skills=[tmp_path / "skills"]),
                system_prompt="Base prompt.",
            )
        )
        try:
            await harness.prompt("hi")
            if active is not None and "read" not in active:
                await harness.set_active_tools([*active, "read"])
                await harness.prompt("again")
        finally:
            await harness.close()

    asyncio.run(scenario())
    return prompts


def test_no_skills_block_without_read(tmp_path: Path) -> None:
    [prompt] = _prompts(tmp_path, [create_ls_tool()], None)
    assert prompt == "Base prompt."


def test_skills_block_with_read(tmp_path: Path) -> None:
    [prompt] = _prompts(tmp_path, [create_read_tool()], None)
    assert prompt.startswith("Base prompt.\n\n")
    assert "<name>alpha</name>" in prompt and "does alpha" in prompt


def test_skills_block_follows_the_active_tools(tmp_path: Path) -> None:
    before, after = _prompts(tmp_path, [create_read_tool(), create_ls_tool()], ["ls"])
    assert before == "Base prompt."
    assert "<name>alpha</name>" in after

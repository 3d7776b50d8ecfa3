"""The project's context files: which are read, their order, limits, problems, hot reload."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.resources import (
    ContextFileSettings,
    context_prompt_block,
    load_context_files,
    load_resources,
)
from harnessc.runtime.tools import create_read_tool, python_tool


def _project(tmp_path: Path) -> tuple[Path, Path, Path]:
    """tmp/proj (AGENTS.md and CLAUDE.md), tmp/proj/pkg/sub (CLAUDE.md only), a user file."""
    proj = tmp_path / "proj"
    sub = proj / "pkg" / "sub"
    sub.mkdir(parents=True)
    (proj / "AGENTS.md").write_text("Project rules.\n")
    (proj / "CLAUDE.md").write_text("Shadowed by AGENTS.md.\n")
    (sub / "CLAUDE.md").write_text("Sub-package rules.\n")
    user = tmp_path / "home" / ".config" / "harnessc" / "AGENTS.md"
    user.parent.mkdir(parents=True)
    user.write_text("The user's own rules.\n")
    return proj, sub, user


def _ours(tmp_path: Path, paths: list[str]) -> list[str]:
    """The paths below ``tmp_path`` (a stray file above the temporary folder is not ours)."""
    return [p for p in paths if p.startswith(str(tmp_path) + os.sep)]


def test_nested_project_user_file_first_then_root_down(tmp_path):
    proj, sub, user = _project(tmp_path)
    settings = ContextFileSettings(user=str(user))
    files, diagnostics = load_context_files(settings, str(sub))
    assert diagnostics == []
    paths = [f.path for f in files]
    assert paths[0] == str(user)
    assert _ours(tmp_path, paths) == [str(user), str(proj / "AGENTS.md"), str(sub / "CLAUDE.md")]
    block = context_prompt_block(files)
    assert block.index("The user's own rules.") < block.index("Project rules.")
    assert block.index("Project rules.") < block.index("Sub-package rules.")
    assert f"## {proj / 'AGENTS.md'}\n\nProject rules." in block
    assert "Shadowed" not in block


def test_names_order_and_home_expansion(tmp_path, monkeypatch):
    proj, sub, user = _project(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    files, _ = load_context_files(ContextFileSettings(names=("CLAUDE.md",)), str(proj))
    paths = [f.path for f in files]
    assert paths[0] == str(user)  # the default ~/.config/harnessc/AGENTS.md
    assert _ours(tmp_path, paths)[-1] == str(proj / "CLAUDE.md")
    files, _ = load_context_files(ContextFileSettings(user=None), str(proj))
    assert _ours(tmp_path, [f.path for f in files]) == [str(proj / "AGENTS.md")]


def test_oversized_file_is_cut_with_a_note(tmp_path):
    (tmp_path / "AGENTS.md").write_text("é" * 40)  # 80 bytes; the cut splits a character
    settings = ContextFileSettings(user=None, max_bytes=11)
    files, diagnostics = load_context_files(settings, str(tmp_path))
    mine = [f for f in files if f.path == str(tmp_path / "AGENTS.md")]
    assert len(mine) == 1 and mine[0].truncated and mine[0].size == 80
    assert mine[0].content == "é" * 5
    assert [d.severity for d in diagnostics if d.path == mine[0].path] == ["warning"]
    assert "80 bytes" in diagnostics[-1].message and "first 11" in diagnostics[-1].message
    block = context_prompt_block(mine)
    assert "[truncated: the file is 80 bytes; only the first 10 are shown]" in block


def test_unreadable_file_is_a_warning_and_the_run_goes_on(tmp_path):
    proj, sub, user = _project(tmp_path)
    (sub / "AGENTS.md").mkdir()  # exists, shadows CLAUDE.md, cannot be read as a file
    prompts: list[str] = []

    def model(context: Context):
        prompts.append(context.system_prompt)
        return reply_text("fine")

    resources = load_resources(context_files=ContextFileSettings(user=str(user)), cwd=sub)
    problems = [d for d in resources.diagnostics if d.path == str(sub / "AGENTS.md")]
    assert [d.severity for d in problems] == ["warning"]
    assert "not read" in problems[0].message

    async def scenario():
        harness = AgentHarness(
            AgentHarnessOptions(
                models={"main": Model(id="scripted-1", api="scripted", provider="test")},
                provider=ScriptedProvider(model),
                resources=resources,
                system_prompt="You are a test agent.",
            )
        )
        try:
            return await harness.prompt("go")
        finally:
            await harness.close()

    result = asyncio.run(scenario())
    assert result.status == "done"
    assert "Project rules." in prompts[0] and "Sub-package rules." not in prompts[0]


def test_prompt_order_spec_prompt_context_then_skills(tmp_path):
    proj, sub, user = _project(tmp_path)
    skills = tmp_path / "skills" / "alpha"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: alpha\ndescription: a skill\n---\nBody.\n")
    prompts: list[str] = []

    def model(context: Context):
        prompts.append(context.system_prompt)
        return reply_text("ok")

    async def scenario():
        harness = AgentHarness(
            AgentHarnessOptions(
                models={"main": Model(id="scripted-1", api="scripted", provider="test")},
                tools=[create_read_tool()],
                provider=ScriptedProvider(model),
                resources=load_resources(
                    skills=[tmp_path / "skills"],
                    context_files=ContextFileSettings(user=str(user)),
                    cwd=sub,
                ),
                system_prompt="You are a test agent.",
            )
        )
        try:
            await harness.prompt("go")
        finally:
            await harness.close()

    asyncio.run(scenario())
    prompt = prompts[0]
    assert prompt.startswith("You are a test agent.\n\n# Project context")
    assert prompt.index("Sub-package rules.") < prompt.index("<available_skills>")


def test_context_file_change_while_running_reaches_the_next_turn(tmp_path):
    proj, sub, user = _project(tmp_path)
    prompts: list[str] = []
    box: list[AgentHarness] = []

    async def edit_rules(text: str) -> str:
        """Rewrite the sub-package's CLAUDE.md and wait until the watcher has seen it."""
        (sub / "CLAUDE.md").write_text(text)
        for _ in range(250):
            if box[0].pending_resources is not None:
                return "written"
            await asyncio.sleep(0.02)
        return "watcher did not notice"

    async def add_agents(text: str) -> str:
        """Create an AGENTS.md in the project's parent folder."""
        (tmp_path / "AGENTS.md").write_text(text)
        for _ in range(250):
            if box[0].pending_resources is not None:
                return "written"
            await asyncio.sleep(0.02)
        return "watcher did not notice"

    steps = [
        reply_tool_calls([("edit_rules", {"text": "Sub rules, second edition.\n"})]),
        reply_tool_calls([("add_agents", {"text": "Parent folder rules.\n"})]),
        reply_text("done"),
    ]

    def model(context: Context):
        prompts.append(context.system_prompt)
        return steps[len(prompts) - 1]

    async def scenario():
        harness = AgentHarness(
            AgentHarnessOptions(
                models={"main": Model(id="scripted-1", api="scripted", provider="test")},
                tools=[python_tool(edit_rules), python_tool(add_agents)],
                provider=ScriptedProvider(model),
                resources=load_resources(
                    context_files=ContextFileSettings(user=str(user)), cwd=sub
                ),
                system_prompt="You are a test agent.",
            )
        )
        box.append(harness)
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
    assert "Sub-package rules." in prompts[0]
    assert "Sub rules, second edition." in prompts[1] and "Sub-package rules." not in prompts[1]
    assert "Parent folder rules." not in prompts[1]
    assert "Parent folder rules." in prompts[2]
    assert prompts[2].index("Parent folder rules.") < prompts[2].index("Project rules.")
    updates = [e for e in log if e.type == "resources_update"]
    assert len(updates) == 2
    assert str(tmp_path / "AGENTS.md") in updates[1].context_files


def test_a_durable_run_keeps_the_context_files_it_started_with(tmp_path):
    import json

    from harnessc.runtime.durable.pinning import dump_resources
    from harnessc.runtime.durable.pinning import load_resources as load_pinned

    proj, sub, user = _project(tmp_path)
    resources = load_resources(
        context_files=ContextFileSettings(user=str(user), max_bytes=8), cwd=sub
    )
    pinned = json.loads(json.dumps(dump_resources(resources)))  # a step's JSON output
    (sub / "CLAUDE.md").write_text("Edited after the run started.\n")
    again = load_pinned(pinned)
    assert again == resources
    assert again.context_settings == ContextFileSettings(user=str(user), max_bytes=8)

"""Hot reload under abuse: a skill file saved half-written, replaced by a directory,
rewritten 1,000 times in a second, deleted. The agent keeps running on the last good
resources: every turn's system prompt lists a complete, valid version of each skill."""

from __future__ import annotations

import asyncio
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.resources import ResourceWatcher, load_resources
from harnessc.runtime.tools import create_read_tool, python_tool

STORM_WRITES = 1000


def skill_text(description: str) -> str:
    return f"---\nname: alpha\ndescription: {description}\n---\nAlpha body for {description}.\n"


def descriptions(prompt: str, name: str) -> list[str]:
    """The descriptions listed for skill ``name`` in a system prompt."""
    pattern = rf"<name>{name}</name>\s*<description>(.*?)</description>"
    return re.findall(pattern, prompt, flags=re.S)


def _storm(path: Path, stop_at: float) -> int:
    """Rewrite ``path`` 1,000 times within about a second (plain, non-atomic writes,
    some of them cut short), then leave the final version."""
    written = 0
    pause = 1.0 / STORM_WRITES
    for i in range(STORM_WRITES):
        text = skill_text(f"storm {i}")
        with open(path, "w", encoding="utf-8") as fh:
            if i % 7 == 3:  # a save caught half-way
                fh.write(text[: len(text) // 2])
            else:
                fh.write(text)
        written += 1
        time.sleep(pause * 0.5)
        if time.monotonic() > stop_at:
            break
    path.write_text(skill_text("final"), encoding="utf-8")
    return written


def test_agent_keeps_the_last_good_skills(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    alpha_dir = skills / "alpha"
    alpha_dir.mkdir(parents=True)
    (skills / "beta").mkdir()
    (skills / "beta" / "SKILL.md").write_text(
        "---\nname: beta\ndescription: always here\n---\nBeta.\n"
    )
    alpha = alpha_dir / "SKILL.md"
    alpha.write_text(skill_text("version one"))

    prompts: list[str] = []
    watcher_box: list[ResourceWatcher] = []
    storm_info: dict[str, Any] = {}

    async def settle(reloads_before: int) -> None:
        """Wait until the watcher has reloaded after a change (and then went quiet)."""
        watcher = watcher_box[0]
        deadline = time.monotonic() + 5
        while watcher.reload_count <= reloads_before and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        last = -1
        while last != watcher.reload_count and time.monotonic() < deadline:
            last = watcher.reload_count
            await asyncio.sleep(0.15)

    async def mutate(step: str) -> str:
        """Change the skill folder as the step says, then wait for the watcher."""
        before = watcher_box[0].reload_count
        if step == "half-written":
            alpha.write_text(skill_text("version two")[:25])
        elif step == "directory":
            alpha.unlink()
            alpha.mkdir()
            (alpha / "junk.txt").write_text("not a skill")
        elif step == "restore":
            shutil.rmtree(alpha)
            alpha.write_text(skill_text("version two"))
        elif step == "storm":
            stop_at = time.monotonic() + 1.0
            thread = threading.Thread(
                target=lambda: storm_info.update(written=_storm(alpha, stop_at)), daemon=True
            )
            storm_info["started"] = time.monotonic()
            thread.start()
            storm_info["thread"] = thread
            return "storm started"
        elif step == "storm-wait":
            await asyncio.to_thread(storm_info["thread"].join)
            storm_info["seconds"] = time.monotonic() - storm_info["started"]
        elif step == "delete":
            shutil.rmtree(alpha_dir)
        elif step == "tick":
            await asyncio.sleep(0.05)
            return "tick"
        await settle(before)
        return f"{step} done"

    steps = ["half-written", "directory", "restore", "storm"]
    steps += ["tick"] * 8 + ["storm-wait", "delete"]
    script = [reply_tool_calls([("mutate", {"step": s})]) for s in steps] + [reply_text("bye")]

    def model(context: Context) -> Any:
        prompts.append(context.system_prompt)
        return script[len(prompts) - 1]

    async def scenario() -> tuple[Any, EventLog]:
        harness = AgentHarness(
            AgentHarnessOptions(
                models={"main": Model(id="scripted", api="scripted", provider="test")},
                tools=[python_tool(mutate), create_read_tool()],  # skills need read
                provider=ScriptedProvider(model),
                resources=load_resources(skills=[skills]),
                system_prompt="You are a test agent.",
            )
        )
        log = EventLog()
        harness.subscribe(log)

        async def on_change(resources: Any, diagnostics: Any) -> None:
            await harness.set_resources(resources)

        watcher = ResourceWatcher([skills], [], on_change, debounce_ms=20, poll_interval_ms=50)
        watcher.seed(harness.resources)
        watcher_box.append(watcher)
        await watcher.start()
        try:
            result = await harness.prompt("go")
        finally:
            await watcher.stop()
        return result, log

    result, log = asyncio.run(scenario())
    assert result.status == "done" and result.text == "bye", result.reason
    assert not [e for e in log if e.type == "error"]
    assert len(prompts) == len(script)
    alpha_seen = [descriptions(p, "alpha") for p in prompts]
    for index, prompt in enumerate(prompts):
        assert descriptions(prompt, "beta") == ["always here"], index
    valid = {"version one", "version two", "final"} | {f"storm {i}" for i in range(STORM_WRITES)}
    for seen in alpha_seen[:-1]:
        assert len(seen) == 1 and seen[0] in valid, seen  # never missing, never half
    assert alpha_seen[0] == ["version one"]
    assert alpha_seen[1] == ["version one"], "half-written save replaced the good version"
    assert alpha_seen[2] == ["version one"], "a directory in place of the file lost the skill"
    assert alpha_seen[3] == ["version two"]
    assert alpha_seen[-2] == ["final"], "the last write of the storm was not picked up"
    assert alpha_seen[-1] == [], "a deleted skill stays listed"
    print(
        f"\nhot reload: {storm_info.get('written')} writes in {storm_info.get('seconds', 0):.2f} s, "
        f"{watcher_box[0].reload_count} reloads; {len(prompts)} turns, all on valid skills"
    )

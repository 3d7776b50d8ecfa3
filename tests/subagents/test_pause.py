"""One pause: an external tool and a permission ask three levels down pause the
top-level run (exit 3), named with the agent path, and are answered in a new process;
the sub-agent resumes in place and its result reaches the top."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from typing import Any

import pytest

from harnessc.runtime.agent.harness import AgentHarness

from .kit import MODEL, Tree, task, text_reply, tool_reply, tool_texts

LEAD = f"""\
version: 1
name: lead
description: Hands the release to the planner.
{MODEL}system_prompt: You are LEAD.
agents:
  planner: {{spec: planner.yaml}}
max_depth: 3
"""

PLANNER = f"""\
version: 1
name: planner
description: Plans a release and has it checked.
{MODEL}system_prompt: You are PLANNER.
agents:
  checker: {{spec: checker.yaml}}
"""

CHECKER = f"""\
version: 1
name: checker
description: Checks a release with a human.
{MODEL}system_prompt: You are CHECKER.
tools:
  - bash
  - external:
      name: request_approval
      description: Ask a human to approve the release.
      parameters:
        type: object
        properties:
          summary: {{type: string}}
        required: [summary]
permissions:
  default: ask
  allow: [request_approval]
"""


def lead(messages: list[dict[str, Any]]) -> Any:
    results = tool_texts(messages)
    if not results:
        return tool_reply(task("h1", "planner", "Plan the release"))
    return text_reply("LEAD DONE | " + results[0])


def planner(messages: list[dict[str, Any]]) -> Any:
    results = tool_texts(messages)
    if not results:
        return tool_reply(task("p1", "checker", "Check the release"))
    return text_reply("PLANNER | " + results[0])


def setup(tree: Tree, checker: Any) -> None:
    tree.write("lead.yaml", LEAD)
    tree.write("planner.yaml", PLANNER)
    tree.write("checker.yaml", CHECKER)
    tree.build()
    tree.scripts.rules.update(LEAD=lead, PLANNER=planner, CHECKER=checker)


def test_an_external_tool_three_levels_down_is_answered_in_a_new_process(tree: Tree) -> None:
    def checker(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(("x1", "request_approval", {"summary": "release 2.0"}))
        return text_reply("CHECKER approved=" + results[0])

    setup(tree, checker)
    paused = tree.run("Ship 2.0")
    assert paused.returncode == 3, paused.stderr
    assert "request_approval  id=x1" in paused.stderr
    assert "(in lead > planner > checker)" in paused.stderr
    assert "--resume-with" in paused.stderr
    assert len(tree.scripts.seen["CHECKER"]) == 1

    # The lead's run-state record holds the sub-agents' pause on its hand-over call.
    [lead_file] = tree.sessions()
    pauses = [
        json.loads(line)
        for line in lead_file.read_text().splitlines()
        if '"harnessc.pause"' in line
    ]
    [call] = pauses[-1]["data"]["run"]["calls"]
    assert call["nested"]["path"] == ["lead", "planner"]
    assert call["nested"]["pending"][0]["path"] == "lead > planner > checker"

    done = tree.run("--continue", "--resume-with", '{"x1": "yes, ship it"}')
    assert done.returncode == 0, done.stderr
    assert "LEAD DONE | PLANNER | CHECKER approved=yes, ship it" in done.stdout
    # Each agent's model was asked again only where its run continued.
    assert len(tree.scripts.seen["LEAD"]) == 2
    assert len(tree.scripts.seen["PLANNER"]) == 2
    assert len(tree.scripts.seen["CHECKER"]) == 2


def test_a_permission_ask_in_a_sub_agent_is_approved_in_a_new_process(tree: Tree) -> None:
    marker = tree.root / "released"

    def checker(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(("b1", "bash", {"command": f"touch {marker}"}))
        return text_reply("CHECKER ran: " + results[0].strip())

    setup(tree, checker)
    paused = tree.run("Ship 2.0")
    assert paused.returncode == 3, paused.stderr
    assert "permission needed" in paused.stderr
    assert "--approve b1" in paused.stderr and "(in lead > planner > checker)" in paused.stderr
    assert not marker.exists()

    done = tree.run("--continue", "--approve", "b1")
    assert done.returncode == 0, done.stderr
    assert marker.exists()
    assert "LEAD DONE | PLANNER | CHECKER ran" in done.stdout


def test_a_denied_ask_in_a_sub_agent_reaches_its_model_as_an_error(tree: Tree) -> None:
    marker = tree.root / "released"

    def checker(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(("b1", "bash", {"command": f"touch {marker}"}))
        return text_reply("CHECKER saw: " + results[0].strip())

    setup(tree, checker)
    assert tree.run("Ship 2.0").returncode == 3
    done = tree.run("--continue", "--deny", "b1")
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "denied by the user" in done.stdout


def test_the_python_api_resumes_a_nested_pause_in_process(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    def checker(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(("x1", "request_approval", {"summary": "release 2.0"}))
        return text_reply("CHECKER approved=" + results[0])

    setup(tree, checker)
    for key, value in tree.env.items():
        if key.startswith("TEST_"):
            monkeypatch.setenv(key, value)
    monkeypatch.chdir(tree.root)
    spec = importlib.util.spec_from_file_location(
        "lead_in_process", tree.root / "generated" / "lead.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    seen: list[tuple[str, str]] = []

    async def main() -> None:
        harness = AgentHarness(module.build_options())
        # before / after tool call hooks see the held hand-over once, in process too
        harness.on("before_tool_call", lambda e: seen.append(("before", e.tool_call_id)))
        harness.on("after_tool_call", lambda e: seen.append(("after", e.tool_call_id)))
        try:
            paused = await harness.prompt("Ship 2.0")
            assert paused.status == "paused"
            assert harness.paused_reason == "awaiting_tool"
            assert [c.id for c in paused.pending_tool_calls] == ["x1"]
            with pytest.raises(ValueError, match="missing: x1"):
                await harness.resume({})
            done = await harness.resume({"x1": "go"})
            assert done.status == "done", done
            assert done.text.startswith("LEAD DONE | PLANNER | CHECKER approved=go")
        finally:
            await harness.close()

    asyncio.run(main())
    assert len(tree.scripts.seen["CHECKER"]) == 2
    assert seen == [("before", "h1"), ("after", "h1")]


HOOK = """\
#!/bin/sh
cat >> hook-log.jsonl
echo >> hook-log.jsonl
"""


def test_hooks_see_a_held_handover_once_across_its_pause(tree: Tree) -> None:
    """The hand-over call a sub-agent's pause holds passed its tool_call hooks when it
    was made: resumed (in a new process), it is not shown to them again; its
    tool_result hooks run once, with the final result."""
    hooks = """\
hooks:
  tool_call:
    - command: hooks/log.sh
      matcher: Task
  tool_result:
    - command: hooks/log.sh
      matcher: Task
"""
    tree.write("hooks/log.sh", HOOK).chmod(0o755)

    def checker(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(("x1", "request_approval", {"summary": "release 2.0"}))
        return text_reply("CHECKER approved=" + results[0])

    setup(tree, checker)
    tree.write("lead.yaml", LEAD + hooks)
    tree.build()
    assert tree.run("Ship 2.0").returncode == 3
    done = tree.run("--continue", "--resume-with", '{"x1": "yes"}')
    assert done.returncode == 0, done.stderr
    assert "LEAD DONE | PLANNER | CHECKER approved=yes" in done.stdout

    log = [
        json.loads(line)
        for line in (tree.root / "hook-log.jsonl").read_text().splitlines()
        if line.strip()
    ]
    events = [(e["hook_event_name"], e["tool_use_id"]) for e in log]
    assert events == [("PreToolUse", "h1"), ("PostToolUse", "h1")]
    assert "CHECKER approved=yes" in json.dumps(log[1]["tool_response"])

"""Hooks and permission rules see the hand-over as Claude Code's Agent tool (a ``Task``
matcher matches too), with its fields in ``tool_input``; ``Agent(name)`` rules pick
the sub-agent."""

from __future__ import annotations

import json
import os
from typing import Any

from .kit import EXPLORER_MD, MODEL, Tree, task, text_reply, tool_reply, tool_texts

LEAD = f"""\
version: 1
name: lead
description: Hands work to sub-agents under a hook and rules.
{MODEL}system_prompt: You are LEAD.
tools: [read, grep, ls, find]
agents:
  reviewer: {{spec: reviewer.yaml}}
  code-explorer: {{from: .claude/agents/code-explorer.md}}
hooks:
  tool_call:
    - command: hooks/log.sh
      matcher: Task
permissions:
  default: allow
  deny: ["Agent(code-explorer)"]
"""

REVIEWER = f"""\
version: 1
name: reviewer
description: Reviews a change.
{MODEL}system_prompt: You are REVIEWER.
"""

HOOK = """\
#!/bin/sh
cat >> hook-log.jsonl
echo >> hook-log.jsonl
"""


def test_a_task_hook_and_an_agent_rule_see_the_handover(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD)
    tree.write("reviewer.yaml", REVIEWER)
    tree.write(".claude/agents/code-explorer.md", EXPLORER_MD)
    hook = tree.write("hooks/log.sh", HOOK)
    os.chmod(hook, 0o755)
    tree.build()

    def lead(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(
                task("h1", "reviewer", "Review app.py"),
                task("h2", "code-explorer", "Trace login"),
            )
        return text_reply("LEAD | " + " | ".join(results))

    tree.scripts.rules.update(
        LEAD=lead,
        REVIEWER=lambda m: text_reply("reviewed"),
        EXPLORER=lambda m: text_reply("explored"),
    )
    done = tree.run("Go")
    assert done.returncode == 0, done.stderr
    assert "EXPLORER" not in tree.scripts.seen  # the rule refused it
    [final] = tree.scripts.seen["LEAD"][-1:]
    reviewed, refused = tool_texts(final)
    assert reviewed.startswith("reviewed")
    assert "Agent(code-explorer)" in refused

    log = [
        json.loads(line)
        for line in (tree.root / "hook-log.jsonl").read_text().splitlines()
        if line.strip()
    ]
    seen = {entry["tool_input"]["subagent_type"]: entry for entry in log}
    assert set(seen) == {"reviewer", "code-explorer"}
    entry = seen["reviewer"]
    assert entry["tool_name"] == "Agent"
    assert entry["tool_input"] == {
        "subagent_type": "reviewer",
        "description": "Review app.py",
        "prompt": "Review app.py",
    }


PLANNER_MD = """\
---
name: planner
description: Plans without changing anything.
tools: Bash, Read
permissionMode: plan
---

You are PLANNER-MD. Read, never change.
"""


def test_a_claude_code_files_permission_mode_applies_to_its_calls(tree: Tree) -> None:
    lead_spec = f"""\
version: 1
name: lead
description: Hands planning to a read-only sub-agent.
{MODEL}system_prompt: You are LEAD.
tools: [read, bash]
agents:
  planner: {{from: planner.md}}
permissions:
  default: allow
"""
    tree.write("lead.yaml", lead_spec)
    tree.write("planner.md", PLANNER_MD)
    tree.build()
    marker = tree.root / "changed"

    def lead(messages: list[dict[str, Any]]) -> Any:
        if not tool_texts(messages):
            return tool_reply(task("h1", "planner", "Plan it"))
        return text_reply("LEAD | " + tool_texts(messages)[0])

    def planner(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(("b1", "bash", {"command": f"touch {marker}"}))
        return text_reply("PLANNER saw: " + results[0])

    tree.scripts.rules.update(LEAD=lead, **{"PLANNER-MD": planner})
    done = tree.run("Plan")
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert "PLANNER saw: Tool call blocked" in done.stdout and "plan" in done.stdout

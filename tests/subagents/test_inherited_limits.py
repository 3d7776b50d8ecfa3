"""Issue 41, items 5 and 6: a parent's deny and ask rules and its sandbox hold for every
sub-agent below it (a sub-agent may add rules and narrow the sandbox, never lift or
widen them; ``harnessc check`` says when one asks for more), and a tree's depth has a
ceiling that ends it with a clear error."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from harnessc.cli import cli
from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, ToolResultMessage
from harnessc.runtime.agent.subagents import SubAgent, SubAgents
from harnessc.runtime.core.options import MAX_SUBAGENT_DEPTH
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.sandbox import SandboxPolicy
from harnessc.runtime.session import JsonlSessionRepo
from tests.sandboxing import require_sandbox

from .kit import MODEL, Tree, task, text_reply, tool_reply, tool_texts

LEAD = f"""\
version: 1
name: lead
description: Hands the clean-up to a worker.
{MODEL}system_prompt: You are LEAD.
tools: [bash]
agents:
  worker: {{spec: worker.yaml}}
permissions:
  deny: ["Bash(rm *)"]
  ask: ["Bash(git push *)"]
sandbox: {{mode: MODE}}
"""

WORKER = f"""\
version: 1
name: worker
description: Cleans up files.
{MODEL}system_prompt: You are WORKER.
tools: [bash]
sandbox: off
"""


def _script(tree: Tree, commands: list[str]) -> None:
    def lead(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(task("h1", "worker", "clean up"))
        return text_reply("LEAD | " + " | ".join(results))

    def worker(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if len(results) < len(commands):
            command = commands[len(results)]
            return tool_reply((f"w{len(results)}", "bash", {"command": command}))
        return text_reply("WORKER | " + " | ".join(results))

    tree.scripts.rules = {"You are LEAD": lead, "You are WORKER": worker}


def test_a_parents_deny_rule_holds_for_a_sub_agent_without_rules(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD.replace("MODE", "auto"))
    tree.write("worker.yaml", WORKER)
    victim = tree.write("f", "keep me\n")
    tree.build()
    _script(tree, ["rm f", "git push origin main"])
    done = tree.run("--json", "clean up")
    assert done.returncode in (0, 3), done.stderr  # 3: paused on the ask
    assert victim.read_text() == "keep me\n"
    worker_saw = tree.scripts.seen["You are WORKER"][-1]
    assert any("denied by the rule Bash(rm *)" in t for t in tool_texts(worker_saw))


def test_check_says_when_a_sub_agent_has_more_than_its_parent(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD.replace("MODE", "on"))
    tree.write("worker.yaml", WORKER)
    result = CliRunner().invoke(cli, ["check", str(tree.root / "lead.yaml")])
    assert result.exit_code == 0, result.output
    said = result.stderr
    assert (
        "sub-agent 'worker' has more than its parent: lacks the parent's deny rule Bash(rm *)"
        in said
    )
    assert "lacks the parent's ask rule Bash(git push *)" in said
    assert "sandbox: sandbox off under a parent with sandbox on" in said


def test_a_sub_agent_runs_inside_its_parents_sandbox(tree: Tree) -> None:
    require_sandbox()
    home = Path(os.environ["HOME"])
    marker = home / f"pwned-{os.getpid()}"
    tree.write("lead.yaml", LEAD.replace("MODE", "on"))
    tree.write("worker.yaml", WORKER)
    tree.build()
    _script(tree, [f"echo x > {marker}; ls {marker}"])
    # bypass: no rule asks about the write; the sandbox alone stands in its way
    done = tree.run("--json", "--permission-mode", "bypass", "clean up")
    assert done.returncode == 0, done.stderr
    assert not marker.exists()  # the worker's own "sandbox: off" does not lift the lead's
    # the operator's --sandbox off is the one way to lift it, for the whole tree
    done = tree.run("--json", "--permission-mode", "bypass", "--sandbox", "off", "clean up")
    assert done.returncode == 0, done.stderr
    assert marker.exists()
    marker.unlink()


def test_max_depth_has_a_ceiling_in_the_spec(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD.replace("MODE", "auto") + "max_depth: 100000\n")
    tree.write("worker.yaml", WORKER)
    result = CliRunner().invoke(cli, ["check", str(tree.root / "lead.yaml")])
    assert result.exit_code == 1
    assert (
        f"max_depth 100000 is over the ceiling of {MAX_SUBAGENT_DEPTH}: each level is a whole "
        "agent running inside its parent's tool call" in result.stderr
    )
    assert "Traceback" not in result.output


def test_a_self_delegating_tree_ends_at_the_ceiling_with_a_clear_error(tmp_path: Path) -> None:
    """A tree built in code past the spec's check (``max_depth=100000``) whose every agent
    hands the work on: it ends at the ceiling with an error naming it, never with a
    RecursionError."""

    def reply(context: Any) -> Any:
        results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return reply_tool_calls(
                [("task", {"subagent_type": "self", "description": "d", "prompt": "go"})]
            )
        return reply_text("up: " + results[-1].text[:300])

    def build(**kwargs: Any) -> AgentHarnessOptions:
        return AgentHarnessOptions(
            session=kwargs.get("session"),
            models={"main": Model(id="scripted-1", api="scripted", provider="test")},
            provider=ScriptedProvider(reply),
            extensions=[
                SubAgents(
                    [SubAgent("self", "itself", tools=("task",))], max_depth=100_000, build=build
                )
            ],
        )

    session = JsonlSessionRepo(tmp_path / "sessions").create(cwd=str(tmp_path))
    harness = AgentHarness(build(session=session))
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done", result.reason
    assert f"sub-agents nest at most {MAX_SUBAGENT_DEPTH} levels" in result.text
    assert "RecursionError" not in result.text
    assert SandboxPolicy  # the tree's sandbox: tests/sandbox

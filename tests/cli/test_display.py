"""What runs print: the usage summary, numbers, /status, /reload (issue 17 display defects)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harnessc.runtime.cli.output import format_number
from harnessc.runtime.cli.pause import describe_pause
from harnessc.runtime.cli.summary import RunSummary, format_cost
from harnessc.runtime.core.events import MessageEndEvent, ToolExecutionEndEvent, TurnStartEvent
from harnessc.runtime.core.messages import AssistantMessage, Cost, Usage
from harnessc.testing import ProtocolServer

from .clikit import Agent, text_reply, tool_reply


def test_small_numbers_keep_their_digits() -> None:
    assert format_number(0.0002) == "0.0002"
    assert format_number(3.0) == "3"
    assert format_number(12.345) == "12.35"
    lines = describe_pause(
        "budget_exceeded:cost_usd", [], awaiting_tool=False, limit_used=(0.00021, 0.0002)
    )
    assert lines == ["paused: budget limit hit: cost_usd (0.00021 of 0.0002 used)"]
    assert format_cost(0.00123) == "$0.0012" and format_cost(2.5) == "$2.50"
    assert format_cost(0.00008) == "$0.00008" and format_cost(0.0000123) == "$0.000012"


def test_the_summary_counts_turns_tools_tokens_and_cost() -> None:
    summary = RunSummary(priced=True)
    usage = Usage(input=1200, output=56, cache_read=800, cost=Cost(total=0.0012))
    for event in (
        TurnStartEvent(turn=1),
        MessageEndEvent(message=AssistantMessage(content=[], usage=usage)),
        ToolExecutionEndEvent(tool_call_id="a", tool_name="bash"),
        TurnStartEvent(turn=2),
    ):
        summary(event)
    summary.stop()
    line = summary.line()
    assert line.startswith("2 turns, 1 tool call, 1,200 tokens in (800 cached) / 56 out, $0.0012, ")


def test_a_one_shot_run_ends_with_a_usage_line(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(tool_reply(("c1", "slow", {"seconds": 0})), text_reply("done"))
    done = agent.run("go")
    assert done.returncode == 0, done.stderr
    usage = done.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"\[usage\] 2 turns, 1 tool call, \d+ tokens in / \d+ out, [\d.]+s", usage)
    assert "[usage]" not in done.stdout
    server.enqueue(text_reply("json"))
    json_run = agent.run("--json", "again")
    assert json_run.returncode == 0, json_run.stderr
    assert "[usage]" not in json_run.stdout + json_run.stderr


def test_status_omits_thinking_for_a_model_without_reasoning_and_reload_says_it_once(
    agent: Agent, server: ProtocolServer, tmp_path: Path
) -> None:
    resources = tmp_path / "resources"
    (resources / "templates").mkdir(parents=True)
    (resources / "skills").mkdir()
    (resources / "templates" / "review.md").write_text("Review $1.\n")
    done = agent.run("-i", stdin="/status\n/reload\n", env={"AGENT_RESOURCES": str(resources)})
    assert done.returncode == 0, done.stderr
    status = next(line for line in done.stdout.splitlines() if "main: test-model" in line)
    assert "thinking" not in status
    assert "reloaded: 0 skills, 1 prompt templates" in done.stdout
    assert "[resources]" not in done.stderr


def test_the_agent_prints_a_completion_script(agent: Agent) -> None:
    import shutil
    import subprocess

    done = agent.run("--completion", "bash")
    assert done.returncode == 0, done.stderr
    assert "--resume-with" in done.stdout and "complete -o default -F" in done.stdout
    assert '--thinking) COMPREPLY=($(compgen -W "off minimal' in done.stdout
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n"], input=done.stdout, text=True).returncode == 0


def test_the_last_allowed_turn_is_not_called_nearing_the_limit(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(tool_reply(("c1", "slow", {"seconds": 0})), text_reply("done"))
    done = agent.run("--max-turns", "2", "go")
    assert done.returncode == 0, done.stderr
    assert "nearing the limit" not in done.stderr
    assert "[budget] turns: 2 of 2 used, the last one allowed" in done.stderr


def test_the_usage_line_counts_the_time_the_budget_counts() -> None:
    """MCP servers start (and before_agent_start hooks run) before agent_start: the run's
    time on the usage line includes them, as its wall-clock budget does."""
    import asyncio

    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Budget, HookSpec, Model
    from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text

    async def slow_start(event: object) -> None:
        await asyncio.sleep(0.2)  # a server starting

    harness = AgentHarness(
        AgentHarnessOptions(
            models={"main": Model(id="m", api="scripted", provider="test")},
            provider=ScriptedProvider([reply_text("hi")]),
            hooks=[HookSpec("before_agent_start", slow_start)],
            budget=Budget(wall_clock_s=600),
        )
    )
    summary = RunSummary()
    harness.subscribe(summary)
    summary.start()
    asyncio.run(harness.prompt("hello"))
    summary.stop()
    assert summary.seconds >= harness.budget.used("wall_clock_s") > 0.2


def test_the_status_line_shows_each_working_hand_over_with_its_turn_and_tokens() -> None:
    import asyncio
    import io

    from harnessc.runtime.cli.output import TextPrinter
    from harnessc.runtime.core.events import AgentEndEvent, AgentStartEvent, SubagentEvent

    def of(path: list[str], call: str, inner: Any) -> SubagentEvent:
        return SubagentEvent(agent_path=path, tool_call_id=call, event=inner)

    usage = Usage(input=1000, output=200, cache_read=300)
    reply = MessageEndEvent(message=AssistantMessage(content=[], usage=usage))

    async def show() -> tuple[str, str, str]:
        err = io.StringIO()
        printer = TextPrinter(io.StringIO(), err, spinner=True)
        printer(of(["lead", "a"], "h1", AgentStartEvent(prompt="one")))
        printer(of(["lead", "b"], "h2", AgentStartEvent(prompt="two")))
        for _ in range(2):
            printer(of(["lead", "a"], "h1", TurnStartEvent(turn=1)))
            printer(of(["lead", "a"], "h1", reply))
        printer(of(["lead", "b"], "h2", TurnStartEvent(turn=1)))
        both = printer.handovers_label()
        printer(of(["lead", "a"], "h1", AgentEndEvent()))
        one = printer.handovers_label()
        printer.close()
        return both, one, err.getvalue()

    both, one, drawn = asyncio.run(show())
    assert both == "lead > a: turn 2, 3000 tokens; lead > b: turn 1, 0 tokens"
    assert one == "lead > b: turn 1, 0 tokens"
    assert "lead > a: turn 2, 3000 tokens" in drawn  # on the terminal's status line

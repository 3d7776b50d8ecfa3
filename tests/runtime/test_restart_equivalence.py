"""Restart equivalence: a run continued by a fresh harness opened from the session file
at every pull point behaves exactly like the same run in one harness.

Compared: the session entries (ids, timestamps and run ids aside), the sequence of event
types, the number of model requests and the number of executions of each tool.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnessc.runtime import (
    AgentHarness,
    AgentHarnessOptions,
    Budget,
    Model,
    PauseRequest,
    Usage,
)
from harnessc.runtime.core.messages import AssistantMessage, Cost, TextContent, ToolCall
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools.base import ExternalTool, Tool, text_result

MODELS = {"main": Model(id="scripted-1", api="scripted", provider="test", context_window=4000)}
OBJ = {"type": "object", "properties": {}}
SYSTEM = "You are the equivalence tester."

# A reply kind -> the tool calls it asks for ("text" answers, "abort" aborts in a tool).
KINDS: dict[str, list[str]] = {
    "local": ["bash"],
    "parallel": ["bash", "grep"],
    "external": ["approve"],
    "two_external": ["approve", "approve"],
    "local_then_external": ["bash", "approve"],
    "external_then_local": ["approve", "bash"],
}
BUDGETS = {
    "none": None,
    "turns": ("turns", 2, 1),
    "tool_calls": ("tool_calls", 2, 2),
    "tokens": ("tokens", 250, 200),
    "cost": ("cost_usd", 0.025, 0.02),
}


@dataclass
class World:
    """What both executions share: the scripted model and the tools' side effects."""

    plan: list[str]
    runs: dict[str, int] = field(default_factory=lambda: {"bash": 0, "grep": 0})
    requests: int = 0
    current: list[AgentHarness] = field(default_factory=list)

    def reply(self, context: Context) -> AssistantMessage:
        if context.system_prompt != SYSTEM:  # a compaction summary request
            return AssistantMessage(content=[TextContent("summary of the work so far")])
        index = self.requests
        self.requests += 1
        usage = Usage(input=60, output=40, total_tokens=100, cost=Cost(total=0.01))
        if index >= len(self.plan):
            return AssistantMessage(content=[TextContent("all done")], usage=usage)
        kind = self.plan[index]
        if kind == "text":
            return AssistantMessage(content=[TextContent("all done")], usage=usage)
        names = ["abort_me"] if kind == "abort" else KINDS[kind]
        calls = [ToolCall(f"r{index}_{i}_{n}", n, {}) for i, n in enumerate(names)]
        return AssistantMessage(content=list(calls), stop_reason="toolUse", usage=usage)

    def tools(self) -> list[Any]:
        def counting(name: str) -> Tool:
            async def run(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
                self.runs[name] += 1
                await asyncio.sleep(0)
                return text_result(f"{name} #{self.runs[name]}")

            return Tool(name, f"The {name} tool.", OBJ, run)

        async def abort_me(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
            self.current[-1].abort("test abort")
            await asyncio.sleep(5)
            return text_result("never")

        return [
            counting("bash"),
            counting("grep"),
            ExternalTool("approve", "Ask for approval.", OBJ),
            Tool("abort_me", "Aborts the run.", OBJ, abort_me),
        ]


@dataclass(frozen=True)
class Scenario:
    plan: tuple[str, ...]
    budget: str
    hook_pause_turn: int | None
    compact_at_pauses: bool


def _open(
    world: World, scenario: Scenario, path: str, root: Path, events: list[str]
) -> AgentHarness:
    limit = BUDGETS[scenario.budget]
    budget = Budget(**{limit[0]: limit[1]}) if limit else None
    harness = AgentHarness(
        AgentHarnessOptions(
            session=JsonlSessionRepo(root).open(path),
            models=MODELS,
            tools=world.tools(),
            provider=ScriptedProvider(world.reply),
            system_prompt=SYSTEM,
            budget=budget,
        )
    )
    harness.subscribe(lambda e: events.append(e.type))
    turn = scenario.hook_pause_turn
    if turn is not None:
        harness.on("after_step", lambda e: PauseRequest("review") if e.turn == turn else None)
    world.current.append(harness)
    return harness


async def _execute(scenario: Scenario, root: Path, restart: bool) -> dict[str, Any]:
    world = World(list(scenario.plan))
    events: list[str] = []
    session = JsonlSessionRepo(root).create(cwd=str(root))
    path = session.path
    assert path is not None
    session.close()
    harness = _open(world, scenario, path, root, events)
    result = await harness.prompt("start the work")
    raises = 0
    for _ in range(12):  # every pull point, answered the same way in both executions
        if result.status not in ("paused", "awaiting_tool"):
            break
        if restart:
            await harness.close()
            harness = _open(world, scenario, path, root, events)
        if result.status == "awaiting_tool":
            answers = {c.id: f"approved {c.id}" for c in harness.pending_tool_calls}
            result = await harness.resume(answers)
            continue
        if scenario.compact_at_pauses:
            await harness.compact()
        budget = None
        limit = BUDGETS[scenario.budget]
        if result.reason.startswith("budget_exceeded:") and limit:
            raises += 1
            budget = Budget(**{limit[0]: limit[1] + raises * limit[2]})
        result = await harness.resume(budget=budget)
    entries = [_stable(e.to_dict()) for e in harness.session.entries()]
    await harness.close()
    return {
        "status": result.status,
        "entries": entries,
        "events": events,
        "requests": world.requests,
        "runs": dict(world.runs),
    }


_VOLATILE = {
    "id",
    "parentId",
    "timestamp",
    "run_id",
    "wall_clock_s",
    "duration_ms",
    "firstKeptEntryId",
}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _check(scenario: Scenario, root: Path) -> None:
    one = asyncio.run(_execute(scenario, root / "one", restart=False))
    again = asyncio.run(_execute(scenario, root / "restart", restart=True))
    assert again["status"] == one["status"]
    assert again["requests"] == one["requests"]
    assert again["runs"] == one["runs"]
    assert again["events"] == one["events"]
    assert again["entries"] == one["entries"]


plans = st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4).flatmap(
    lambda steps: st.sampled_from(["text", "abort"]).map(lambda end: (*steps, end))
)
scenarios = st.builds(
    Scenario,
    plan=plans,
    budget=st.sampled_from(sorted(BUDGETS)),
    hook_pause_turn=st.sampled_from([None, 1, 2]),
    compact_at_pauses=st.booleans(),
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(scenario=scenarios)
def test_restart_at_every_pull_point_changes_nothing(
    scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _check(scenario, tmp_path_factory.mktemp("equiv"))


@pytest.mark.parametrize(
    "scenario",
    [
        Scenario(("external_then_local", "text"), "none", None, False),
        Scenario(("local_then_external", "parallel", "text"), "tool_calls", None, False),
        Scenario(("local", "local", "local", "text"), "turns", 1, True),
        Scenario(("parallel", "external", "local", "text"), "tokens", None, True),
        Scenario(("two_external", "local", "abort"), "cost", 2, False),
    ],
)
def test_restart_equivalence_named_scenarios(scenario: Scenario, tmp_path: Path) -> None:
    _check(scenario, tmp_path)

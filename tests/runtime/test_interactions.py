"""The seams as a standing guarantee: one property test draws runs that combine tools,
permission rules, hooks, batch modes, budgets and interruptions, and checks what must
hold in every combination.

Drawn: each model reply's tool calls, each call of a kind {local, python, MCP (a real
SDK server over streamable HTTP), one that raises, one that hangs past its timeout,
external}, a permission {allow, ask then
approve, ask then refuse, deny} and a hook {none, block, modify its input}; the batch
mode {parallel, sequential}; a budget {none, turns, tool calls, tokens, cost, wall
clock}; an interruption {none, a hook pause resumed in the same harness, a hook pause
resumed in a new harness opened from the session file}; the door the run goes through
{the harness itself, the run-control layer (``runs.PlainRuns``), the native HTTP API
(the server's ASGI application, in process, through httpx)}: a restart through a door
is a new run-control layer (a new server) finding the paused run again by its id.

Invariants: every allowed call's side effect happens exactly once and a denied, refused
or blocked call's never; a sequential batch keeps its order; every approval and every
external answer is honoured once; no limit is exceeded before the caller raises it;
every pause resumes to the end; a run restarted at every pull point equals the run that
never stopped (session, events, side effects); each tool's events are ordered and none
arrives after its run returned; no task or child process outlives the run.

``HARNESSC_INTERACTION_EXAMPLES=1000 python3 -m pytest tests/runtime/test_interactions.py``
runs a thousand examples (CI runs a bounded number).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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
    HookSpec,
    Model,
    PauseRequest,
    ToolResultMessage,
    Usage,
)
from harnessc.runtime.core.hooks import ToolCallResult
from harnessc.runtime.core.messages import AssistantMessage, Cost, TextContent, ToolCall
from harnessc.runtime.permissions.gate import permission_hook
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools.base import ExternalTool, Tool, text_result
from harnessc.runtime.tools.pyfunc import python_tool

HERE = Path(__file__).resolve().parent
SYSTEM = "You are the interaction tester."
MODELS = {"main": Model(id="scripted-1", api="scripted", provider="test", context_window=100_000)}
TAG = {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]}
EXAMPLES = int(os.environ.get("HARNESSC_INTERACTION_EXAMPLES", "25"))

KINDS = ("local", "python", "mcp", "raises", "hangs", "external")
TOOL_NAMES = {
    "local": "local",
    "python": "python_rec",
    "mcp": "mcp__fx__record",
    "raises": "raises",
    "hangs": "hangs",
    "external": "ask_user",
}
PERMISSIONS = ("allow", "approve", "refuse", "deny")
HOOKS = ("none", "block", "modify")
# limit -> (first value, raised by at each budget pause, used per model reply)
LIMITS: dict[str, tuple[float, float] | None] = {
    "none": None,
    "turns": (2, 1),
    "tool_calls": (2, 2),
    "tokens": (250, 200),
    "cost_usd": (0.025, 0.02),
    "wall_clock_s": (2.5, 2.0),
}
INTERRUPTIONS = ("none", "in_process", "new_process")
DOORS = ("harness", "runs", "native")


@dataclass(frozen=True)
class McpHttpServer:
    url: str
    pid: int


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[McpHttpServer]:
    """The effects server over streamable HTTP on 127.0.0.1, shared by every example (a
    restarted harness connects to it again, as an agent restarted in a new process would)."""
    pytest.importorskip("mcp")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(HERE / "effects_server.py"), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the effects MCP server did not start")
                time.sleep(0.05)
        yield McpHttpServer(f"http://127.0.0.1:{port}/mcp", process.pid)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@dataclass(frozen=True)
class Call:
    kind: str
    permission: str
    hook: str


@dataclass(frozen=True)
class Scenario:
    batches: tuple[tuple[Call, ...], ...]
    sequential: bool
    limit: str
    interruption: str
    door: str = "harness"

    def calls(self) -> dict[str, tuple[int, Call]]:
        """call id -> (position in the whole run, call)."""
        found: dict[str, tuple[int, Call]] = {}
        for b, batch in enumerate(self.batches):
            for i, call in enumerate(batch):
                found[f"b{b}c{i}"] = (len(found), call)
        return found


@dataclass
class World:
    """What every harness of one execution shares: the model, the clock, the effects."""

    scenario: Scenario
    effects_file: Path
    mcp_url: str
    requests: int = 0
    now: float = 0.0
    limit_value: float | None = None
    violations: list[str] = field(default_factory=list)

    # -- the model -----------------------------------------------------------------------

    def reply(self, context: Context) -> AssistantMessage:
        if context.system_prompt != SYSTEM:  # a compaction summary request
            return AssistantMessage(content=[TextContent("summary")])
        self._check_budget_before_request()
        index = self.requests
        self.requests += 1
        self.now += 1.0
        usage = Usage(input=60, output=40, total_tokens=100, cost=Cost(total=0.01))
        if index >= len(self.scenario.batches):
            return AssistantMessage(content=[TextContent("all done")], usage=usage)
        calls = []
        for i, call in enumerate(self.scenario.batches[index]):
            arguments = {"tag": f"b{index}c{i}"}
            if call.kind == "mcp":
                arguments["log"] = str(self.effects_file)
            calls.append(ToolCall(f"b{index}c{i}", TOOL_NAMES[call.kind], arguments))
        return AssistantMessage(content=list(calls), stop_reason="toolUse", usage=usage)

    def _check_budget_before_request(self) -> None:
        limit, value = self.scenario.limit, self.limit_value
        if value is None:
            return
        used = {
            "turns": self.requests + 1,
            "tokens": 100 * self.requests,
            "cost_usd": 0.01 * self.requests,
            "wall_clock_s": self.now,
        }.get(limit)
        over = used is not None and (used > value if limit == "turns" else used >= value)
        if over:
            self.violations.append(f"a model request with {limit} at {used} of {value}")

    def budget_reached(self) -> bool:
        """Whether the run has used its whole limit (so a budget pause is due)."""
        value = self.limit_value
        assert value is not None
        asked = sum(len(b) for b in self.scenario.batches[: self.requests])
        used = {
            "turns": self.requests,
            "tool_calls": asked,
            "tokens": 100 * self.requests,
            "cost_usd": 0.01 * self.requests,
            "wall_clock_s": self.now,
        }[self.scenario.limit]
        return used > value if self.scenario.limit == "tool_calls" else used >= value

    # -- the tools -----------------------------------------------------------------------

    def effects(self) -> list[str]:
        if not self.effects_file.exists():
            return []
        return self.effects_file.read_text(encoding="utf-8").splitlines()

    def _effect(self, line: str) -> None:
        if self.scenario.limit == "tool_calls" and self.limit_value is not None:
            if len(self.effects()) + 1 > self.limit_value:
                self.violations.append(f"a tool ran past tool_calls {self.limit_value}: {line}")
        with self.effects_file.open("a", encoding="utf-8") as log:
            log.write(line + "\n")

    def tools(self) -> list[Any]:
        async def local(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
            on_update(text_result(f"working on {params['tag']}"))
            await asyncio.sleep(0)
            self._effect(f"local:{params['tag']}")
            return text_result(f"local {params['tag']}")

        async def raises(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
            self._effect(f"raises:{params['tag']}")
            raise RuntimeError(f"raises {params['tag']} failed")

        async def hangs(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
            self._effect(f"hangs:{params['tag']}")
            await asyncio.sleep(3600)  # past its own timeout: the loop ends the call
            return text_result("never")

        def python_rec(tag: str) -> str:
            """Record a tag."""
            self._effect(f"python:{tag}")
            return f"python {tag}"

        return [
            Tool("local", "Record a tag.", TAG, local),
            Tool("raises", "Record a tag, then fail.", TAG, raises),
            Tool("hangs", "Record a tag, then hang.", TAG, hangs, timeout_s=0.2),
            python_tool(python_rec),
            ExternalTool("ask_user", "Ask the user.", TAG),
        ]


def _rules(scenario: Scenario) -> dict[str, Any]:
    rules: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
    for call_id, (_, call) in scenario.calls().items():
        rule = f"{TOOL_NAMES[call.kind]}({call_id})"
        if call.permission == "deny":
            rules["deny"].append(rule)
        elif call.permission in ("approve", "refuse"):
            rules["ask"].append(rule)
    return {**rules, "default": "allow"}


def _hooks(scenario: Scenario) -> list[HookSpec]:
    calls = scenario.calls()

    def tool_call(event: Any) -> Any:
        tag = (event.input or {}).get("tag")
        entry = calls.get(tag) if isinstance(tag, str) else None
        if entry is None:
            return None
        hook = entry[1].hook
        if hook == "block":
            return ToolCallResult(block=True, reason=f"blocked {tag}")
        if hook == "modify":
            return ToolCallResult(input={**event.input, "tag": f"{tag}-mod"})
        return None

    hooks = [permission_hook(_rules(scenario)), HookSpec("tool_call", tool_call)]
    if scenario.interruption != "none":

        def review(event: Any) -> Any:
            return PauseRequest("review") if event.turn == 1 else None

        hooks.append(HookSpec("after_step", review))
    return hooks


class Clock:
    def __init__(self, world: World) -> None:
        self.world = world
        self.ids = 0

    def clock(self) -> float:
        return self.world.now

    def new_run_id(self) -> str:
        self.ids += 1
        return f"run{self.ids}"


@dataclass
class Execution:
    world: World
    root: Path
    path: str
    events: list[tuple[str, str | None]] = field(default_factory=list)
    late: list[str] = field(default_factory=list)
    harnesses: list[AgentHarness] = field(default_factory=list)
    returned: bool = False

    def options(self, session: Any) -> AgentHarnessOptions:
        from harnessc.runtime.mcp import McpServerConfig, McpToolset

        scenario = self.world.scenario
        limit = LIMITS[scenario.limit]
        budget = None
        if limit is not None:
            if self.world.limit_value is None:
                self.world.limit_value = limit[0]
            budget = Budget(**{scenario.limit: _typed(scenario.limit, self.world.limit_value)})
        extensions: list[Any] = []
        if any(c.kind == "mcp" for _, c in scenario.calls().values()):
            server = McpServerConfig(name="fx", url=self.world.mcp_url, timeout_s=60)
            extensions.append(McpToolset([server], log_dir=self.root / "mcp-logs"))
        return AgentHarnessOptions(
            session=session,
            models=MODELS,
            tools=self.world.tools(),
            provider=ScriptedProvider(self.world.reply),
            system_prompt=SYSTEM,
            budget=budget,
            hooks=_hooks(scenario),
            sequential_tools=scenario.sequential,
            extensions=extensions,
            run_inputs=Clock(self.world),
        )

    def open(self) -> AgentHarness:
        session = JsonlSessionRepo(self.root / "sessions").open(self.path)
        return self.watch(AgentHarness(self.options(session)))

    def watch(self, harness: AgentHarness) -> AgentHarness:
        async def listen(event: Any) -> None:
            await asyncio.sleep(0)
            if self.returned:
                self.late.append(event.type)
            self.events.append((event.type, getattr(event, "tool_call_id", None)))

        harness.subscribe(listen)
        self.harnesses.append(harness)
        return harness


def _typed(limit: str, value: float) -> float | int:
    return int(value) if limit in ("turns", "tool_calls", "tokens") else value


async def _execute(scenario: Scenario, root: Path, restart: bool, mcp_url: str) -> dict[str, Any]:
    root.mkdir(parents=True)
    world = World(scenario, root / "effects.log", mcp_url)
    session = JsonlSessionRepo(root / "sessions").create(cwd=str(root))
    assert session.path is not None
    session.close()
    run = Execution(world, root, session.path)
    door: Door = HarnessDoor(run) if scenario.door == "harness" else LayerDoor(run, session.id)
    calls = scenario.calls()
    answered: dict[str, str] = {}
    approvals_given: dict[str, bool] = {}
    state = await door.start("start the work")
    run.returned = True
    await asyncio.sleep(0.01)
    rounds = 0
    while state.status in ("paused", "awaiting_tool"):
        rounds += 1
        assert rounds <= 40, f"the run never finished: {state.status} {state.reason}"
        if restart:
            state = await door.restart()
        run.returned = False
        if state.status == "awaiting_tool":
            answers = {}
            for call in state.pending:
                assert call not in answered, f"{call} was asked for twice"
                answers[call] = answered[call] = f"answer {call}"
            state = await door.answer(results=answers)
        elif state.reason.startswith("budget_exceeded:"):
            limit = LIMITS[scenario.limit]
            assert limit is not None and state.reason == f"budget_exceeded:{scenario.limit}"
            assert world.limit_value is not None
            assert world.budget_reached(), f"a pause on {state.reason} before the limit"
            world.limit_value += limit[1]
            state = await door.answer(budget={scenario.limit: world.limit_value})
        elif state.reason.startswith("permission needed"):
            approvals = {}
            assert set(state.held) <= set(state.pending)
            for call_id in state.held:
                permission = calls[call_id][1].permission
                assert permission in ("approve", "refuse"), f"{call_id} held: {permission}"
                assert call_id not in approvals_given, f"{call_id} was held twice"
                approvals[call_id] = approvals_given[call_id] = permission == "approve"
            assert approvals, f"a permission pause with nothing pending: {state.reason}"
            state = await door.answer(approvals=approvals)
        else:
            assert state.reason == "review", state.reason
            state = await door.answer()
        run.returned = True
        await asyncio.sleep(0.01)
    assert state.status == "done", (state.status, state.reason)
    messages, entries = await door.finish()
    results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
    entries = [_stable(e.to_dict(), str(root)) for e in entries]
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    return {
        "effects": world.effects(),
        "violations": world.violations,
        "requests": world.requests,
        "results": {k: (v.is_error, v.text) for k, v in results.items()},
        "entries": entries,
        "events": run.events,
        "late": run.late,
        "answered": answered,
        "leftover_tasks": [repr(t) for t in leftover],
    }


@dataclass
class State:
    """Where a run stands, as any door says it."""

    status: str
    reason: str = ""
    pending: list[str] = field(default_factory=list)  # the calls the pause holds
    held: list[str] = field(default_factory=list)  # those an approval answers


class Door:
    async def start(self, prompt: str) -> State: ...

    async def answer(
        self,
        results: dict[str, str] | None = None,
        approvals: dict[str, bool] | None = None,
        budget: dict[str, float] | None = None,
    ) -> State: ...

    async def restart(self) -> State: ...

    async def finish(self) -> tuple[list[Any], list[Any]]: ...


class HarnessDoor(Door):
    """The harness itself (``prompt`` / ``resume``)."""

    def __init__(self, run: Execution) -> None:
        self.run = run
        self.harness = run.open()

    def _state(self, result: Any) -> State:
        pending = [c.id for c in self.harness.pending_tool_calls]
        held = [c.id for c in self.harness.held_tool_calls]
        return State(result.status, result.reason, pending, held)

    async def start(self, prompt: str) -> State:
        return self._state(await self.harness.prompt(prompt))

    async def answer(
        self,
        results: dict[str, str] | None = None,
        approvals: dict[str, bool] | None = None,
        budget: dict[str, float] | None = None,
    ) -> State:
        limits = {k: _typed(k, v) for k, v in (budget or {}).items()}
        raised = Budget(**limits) if limits else None
        return self._state(await self.harness.resume(results, budget=raised, approvals=approvals))

    async def restart(self) -> State:
        await self.harness.close()
        self.harness = self.run.open()
        return State(
            "awaiting_tool" if self.harness.paused_reason == "awaiting_tool" else "paused",
            _reason(self.harness),
            [c.id for c in self.harness.pending_tool_calls],
            [c.id for c in self.harness.held_tool_calls],
        )

    async def finish(self) -> tuple[list[Any], list[Any]]:
        messages, entries = list(self.harness.messages), list(self.harness.session.entries())
        await self.harness.close()
        return messages, entries


def _reason(harness: AgentHarness) -> str:
    from harnessc.runtime.runs.pauses import pause_of

    pause = pause_of(harness)
    assert pause is not None
    return pause.reason


class LayerDoor(Door):
    """The run-control layer: in Python (``runs``), or its native HTTP door (``native``,
    the server's application in process); a restart is a new layer (a new server)."""

    def __init__(self, run: Execution, session_id: str) -> None:
        self.run = run
        self.session_id = session_id
        self.native = run.world.scenario.door == "native"
        self.run_id = ""
        self._open()

    def _open(self) -> None:
        from harnessc.runtime.runs.agent import AgentSource
        from harnessc.runtime.runs.plain import PlainRuns

        execution = self.run

        class Source(AgentSource):
            def harness(self, session: Any, client_tools: Any = ()) -> AgentHarness:
                return execution.watch(super().harness(session, client_tools))

        source = Source(
            lambda *, session, cwd: execution.options(session),
            agent_name="tester",
            cwd=str(execution.root),
            store=JsonlSessionRepo(execution.root / "sessions"),
        )
        self.runs = PlainRuns(source)
        self.client: Any = None
        if self.native:
            import httpx

            from harnessc.runtime.serve.app import build_app
            from harnessc.runtime.serve.config import ServeConfig
            from harnessc.runtime.serve.state import ServeState

            app = build_app(ServeState(config=ServeConfig(), runs=self.runs))
            self.client = httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://test"
            )

    async def _settled(self) -> State:
        if self.native:
            while True:
                found = (await self.client.get(f"/v1/runs/{self.run_id}")).json()
                if found["status"] not in ("running", "queued"):
                    break
                await asyncio.sleep(0.005)
            pause = found.get("pause") or {}
            calls = pause.get("calls") or []
            return State(
                found["status"],
                found["reason"],
                [c["id"] for c in calls],
                [c["id"] for c in calls if c.get("held")],
            )
        run = await self.runs.get(self.run_id)
        await self.runs.settled(run)
        pause = run.pause
        calls = pause.calls if pause is not None and run.paused else []
        return State(run.status, run.reason, [c.id for c in calls], [c.id for c in calls if c.held])

    async def start(self, prompt: str) -> State:
        from harnessc.runtime.runs.control import RunRequest

        if self.native:
            started = await self.client.post(
                "/v1/runs", json={"prompt": prompt, "session_id": self.session_id}
            )
            assert started.status_code == 201, started.text
            self.run_id = started.json()["run_id"]
        else:
            run = await self.runs.start(RunRequest(prompt, session=self.session_id))
            self.run_id = run.id
        return await self._settled()

    async def answer(
        self,
        results: dict[str, str] | None = None,
        approvals: dict[str, bool] | None = None,
        budget: dict[str, float] | None = None,
    ) -> State:
        from harnessc.runtime.runs.answers import Answer

        if self.native:
            body = {"results": results, "approvals": approvals, "budget": budget}
            done = await self.client.post(
                f"/v1/runs/{self.run_id}/resume", json={k: v for k, v in body.items() if v}
            )
            assert done.status_code == 200, done.text
        else:
            decisions: dict[str, Any] = {
                k: "allow" if v else "deny" for k, v in (approvals or {}).items()
            }
            answer = Answer(results=results or {}, approvals=decisions, budget=budget or {})
            await self.runs.answer(await self.runs.get(self.run_id), answer)
        return await self._settled()

    async def restart(self) -> State:
        await self._close()
        self._open()
        return await self._settled()  # the paused run, found again through its session

    async def _close(self) -> None:
        from harnessc.runtime.runs import plain

        await self.runs.drain(0)
        if self.client is not None:
            await self.client.aclose()
        while plain._closing:  # the harnesses closed on tasks of their own
            await asyncio.gather(*list(plain._closing), return_exceptions=True)

    async def finish(self) -> tuple[list[Any], list[Any]]:
        await self._close()
        session = JsonlSessionRepo(self.run.root / "sessions").open(self.run.path)
        try:
            return list(session.context().messages), list(session.entries())
        finally:
            session.close()


_VOLATILE = {"id", "parentId", "timestamp", "run_id", "wall_clock_s", "duration_ms"}


def _stable(value: Any, root: str) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v, root) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, "<root>")
    return value


def _children(server: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return [p for p in found if p != server and _running(p)]


def _running(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def _check(scenario: Scenario, outcome: dict[str, Any]) -> None:
    calls = scenario.calls()
    assert outcome["violations"] == []
    assert outcome["late"] == [], "events arrived after the run returned"
    assert outcome["leftover_tasks"] == []
    expected: list[str] = []
    for call_id, (_, call) in calls.items():
        runs = call.permission in ("allow", "approve") and call.hook != "block"
        tag = f"{call_id}-mod" if call.hook == "modify" else call_id
        result = outcome["results"].get(call_id)
        assert result is not None, f"{call_id} has no result"
        if call.kind == "external":
            if runs:
                assert result == (False, f"answer {call_id}"), (call_id, result)
            else:
                assert call_id not in outcome["answered"], f"{call_id} was refused yet asked"
                assert result[0], (call_id, result)
            continue
        if runs:
            expected.append(f"{call.kind}:{tag}")
            assert result[0] == (call.kind in ("raises", "hangs")), (call_id, result)
        else:
            assert result[0], f"{call_id} should have been refused: {result}"
    effects = outcome["effects"]
    assert sorted(effects) == sorted(expected), "each allowed call exactly once, no other"
    if scenario.sequential:
        assert effects == expected, "a sequential batch keeps its order"
    else:  # batches follow each other
        batch_of = {e: e.split(":", 1)[1].split("c", 1)[0] for e in effects}
        assert [batch_of[e] for e in effects] == sorted(batch_of[e] for e in effects)
    for call_id in calls:
        kinds = [t for t, cid in outcome["events"] if cid == call_id]
        if "tool_execution_end" in kinds:
            end = kinds.index("tool_execution_end")
            assert "tool_execution_update" not in kinds[end:], f"{call_id}: update after end"
            if "tool_execution_start" in kinds:
                assert kinds.index("tool_execution_start") < end


def _run(scenario: Scenario, root: Path, server: McpHttpServer) -> None:
    # folders of one length: the MCP calls' arguments name a file in them, and their
    # length decides how the scripted model cuts the arguments into stream deltas
    one = asyncio.run(_execute(scenario, root / "run1", False, server.url))
    _check(scenario, one)
    assert _children(server.pid) == [], "a child process outlived the run"
    if scenario.interruption == "new_process":
        again = asyncio.run(_execute(scenario, root / "run2", True, server.url))
        _check(scenario, again)
        assert _children(server.pid) == [], "a child process outlived the run"
        for key in ("requests", "results", "entries", "answered"):
            assert again[key] == one[key], key
        order = (lambda e: e) if scenario.sequential else sorted
        assert order(again["effects"]) == order(one["effects"])

        # a restarted process starts its MCP servers again and says so (a notice)
        def kinds(events: list[tuple[str, str | None]]) -> list[str]:
            return [t for t, _ in events if t != "notice"]

        assert kinds(again["events"]) == kinds(one["events"])


calls = st.builds(
    Call,
    kind=st.sampled_from(KINDS),
    permission=st.sampled_from(PERMISSIONS),
    hook=st.sampled_from(HOOKS),
)
scenarios = st.builds(
    Scenario,
    batches=st.lists(
        st.lists(calls, min_size=1, max_size=3).map(tuple), min_size=1, max_size=3
    ).map(tuple),
    sequential=st.booleans(),
    limit=st.sampled_from(sorted(LIMITS)),
    interruption=st.sampled_from(INTERRUPTIONS),
    door=st.sampled_from(DOORS),
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 100,
    database=None,  # nothing written beside the tests
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(scenario=scenarios)
def test_every_combination_keeps_the_invariants(
    scenario: Scenario, tmp_path: Path, mcp_server: McpHttpServer
) -> None:
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        _run(scenario, Path(folder), mcp_server)


def _one(*batches: tuple[Call, ...], **options: Any) -> Scenario:
    return Scenario(
        batches=tuple(batches),
        sequential=options.get("sequential", False),
        limit=options.get("limit", "none"),
        interruption=options.get("interruption", "none"),
        door=options.get("door", "harness"),
    )


@pytest.mark.parametrize(
    "scenario",
    [
        # an approved call held as the last one the tool_calls budget allows
        _one(
            (Call("local", "allow", "none"), Call("local", "approve", "none")), limit="tool_calls"
        ),
        # a held call holds the sequential batch behind it
        _one((Call("local", "approve", "none"), Call("local", "allow", "none")), sequential=True),
        # every kind in one batch, restarted at each pull point
        _one(
            tuple(Call(k, "allow", "none") for k in KINDS),
            (Call("mcp", "approve", "modify"), Call("external", "refuse", "none")),
            interruption="new_process",
        ),
        # the same through the native API, each restart a new server
        _one(
            tuple(Call(k, "allow", "none") for k in KINDS),
            (Call("mcp", "approve", "modify"), Call("external", "refuse", "none")),
            interruption="new_process",
            limit="tool_calls",
            door="native",
        ),
        # the run-control layer, a budget and an ask in one sequential batch
        _one(
            (Call("local", "approve", "none"), Call("python", "allow", "block")),
            (Call("external", "allow", "none"),),
            sequential=True,
            limit="turns",
            interruption="in_process",
            door="runs",
        ),
    ],
    ids=[
        "held-last-tool-call",
        "held-holds-sequential",
        "every-kind-restarted",
        "every-kind-native-restarted",
        "runs-budget-ask",
    ],
)
def test_known_seams(scenario: Scenario, tmp_path: Path, mcp_server: McpHttpServer) -> None:
    _run(scenario, tmp_path, mcp_server)

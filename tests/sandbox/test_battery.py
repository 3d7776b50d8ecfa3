"""The hostile battery inside the sandbox, through each door a program comes in by: the
model's bash calls, command hooks, a stdio MCP server. No permission rule stands in the
way (whatever the rules decide, the sandbox holds): afterwards no file outside the
workspace has changed, no denied file's bytes came back (not in a result, an event or
the session file), nothing reached the server the policy does not name, and the allowed
host answered through the sandbox's proxy."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, ToolResultMessage
from harnessc.runtime.core.options import ToolContextSource
from harnessc.runtime.extensions import command_hook
from harnessc.runtime.mcp import McpServerConfig, McpToolset
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.sandbox import SandboxPolicy
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools import create_bash_tool, create_read_tool

from .battery import commands
from .conftest import SECRET, SESSION_TEXT, SSH_KEY, Server, World

HERE = Path(__file__).resolve().parent
LEAKS = (SECRET, SSH_KEY.split()[-1], "recorded-conversation", "OUTSIDE-LEAK")


def _harness(
    world: World, policy: SandboxPolicy, calls: list[tuple[str, dict[str, Any]]], **options: Any
) -> tuple[AgentHarness, list[Any], Path]:
    session_dir = world.base / "sessions"
    session = JsonlSessionRepo(session_dir).create(cwd=str(world.ws))
    provider = ScriptedProvider([reply_tool_calls(calls), reply_text("done")])
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models={"main": Model(id="scripted-1", api="scripted", provider="test")},
            provider=provider,
            tool_context=ToolContextSource({"workspace": str(world.ws)}),
            sequential_tools=True,
            sandbox=policy,
            **options,
        )
    )
    events: list[Any] = []
    harness.subscribe(events.append)
    return harness, events, Path(session.path or "")


def _run(harness: AgentHarness) -> None:
    async def go() -> None:
        try:
            result = await harness.prompt("go")
            assert result.status == "done", result.reason
        finally:
            await harness.close()

    asyncio.run(go())


def _everything_said(harness: AgentHarness, events: list[Any], session_file: Path) -> str:
    said = [json.dumps(repr(e)) for e in events]
    said += [m.text for m in harness.messages if isinstance(m, ToolResultMessage)]
    if session_file.is_file():
        said.append(session_file.read_text())
    return "\n".join(said)


def _held(world: World, before: dict[str, str], said: str, outside: Server) -> None:
    assert world.snapshot() == before, "a file outside the workspace changed"
    for leak in LEAKS:
        assert leak not in said, f"{leak!r} came back"
    assert outside.hits == [], f"the outside server was reached: {outside.hits}"
    assert not (world.base / "new-file").exists()


def test_the_models_bash_calls_stay_inside(world: World, servers: tuple[Server, Server]) -> None:
    allowed, outside = servers
    battery = commands(str(world.outside), str(world.home), outside.url, outside.port)
    calls = [("bash", {"command": c}) for c in battery]
    calls += [
        ("bash", {"command": f"curl -s --max-time 10 {allowed.url}"}),
        ("bash", {"command": "echo made > inside.txt && cat inside.txt"}),
        # no tool argument switches the sandbox off
        ("bash", {"command": f"rm {world.outside}/f", "sandbox": False}),
    ]
    policy = world.policy(f"127.0.0.1:{allowed.port}")
    before = world.snapshot()
    harness, events, session_file = _harness(
        world, policy, calls, tools=[create_bash_tool(timeout_s=60)]
    )
    _run(harness)
    results = [m.text for m in harness.messages if isinstance(m, ToolResultMessage)]
    _held(world, before, _everything_said(harness, events, session_file), outside)
    assert "hello from the allowed host" in results[-3]
    assert results[-2].strip() == "made" and (world.ws / "inside.txt").read_text() == "made\n"
    assert "sandbox" in results[-1] and results[-1].startswith("Validation")
    assert allowed.hits == ["/"]


def test_command_hooks_stay_inside(world: World, servers: tuple[Server, Server]) -> None:
    allowed, outside = servers
    battery = commands(str(world.outside), str(world.home), outside.url, outside.port)
    # each hook copies what it could read into the workspace, where the test looks
    hooks = [
        command_hook("tool_call", f"({c}) > hook-{i}.out 2>&1; exit 0", timeout_s=60)
        for i, c in enumerate(battery)
    ]
    hooks.append(
        command_hook("tool_call", f"curl -s --max-time 10 {allowed.url} > allowed.out; exit 0")
    )
    before = world.snapshot()
    harness, events, session_file = _harness(
        world,
        world.policy(f"127.0.0.1:{allowed.port}"),
        [("read", {"path": "f"})],
        tools=[create_read_tool()],
        hooks=hooks,
    )
    _run(harness)
    outputs = "\n".join(p.read_text(errors="replace") for p in world.ws.glob("hook-*.out"))
    assert len(list(world.ws.glob("hook-*.out"))) == len(battery)
    said = _everything_said(harness, events, session_file) + outputs
    _held(world, before, said, outside)
    assert (world.ws / "allowed.out").read_text() == "hello from the allowed host\n"


def test_a_stdio_mcp_server_stays_inside(world: World, servers: tuple[Server, Server]) -> None:
    allowed, outside = servers
    battery = commands(str(world.outside), str(world.home), outside.url, outside.port)
    calls = [("mcp__escape__run", {"command": c}) for c in battery]
    calls.append(("mcp__escape__run", {"command": f"curl -s --max-time 10 {allowed.url}"}))
    toolset = McpToolset(
        [
            McpServerConfig(
                name="escape",
                command=sys.executable,
                args=[str(HERE / "escape_server.py")],
                cwd=str(world.ws),
                timeout_s=90,
            )
        ],
        log_dir=world.base / "logs",
    )
    before = world.snapshot()
    harness, events, session_file = _harness(
        world, world.policy(f"127.0.0.1:{allowed.port}"), calls, extensions=[toolset]
    )
    _run(harness)
    results = [m.text for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == len(calls), results[:3]
    _held(world, before, _everything_said(harness, events, session_file), outside)
    assert "hello from the allowed host" in results[-1]


def test_an_unsandboxed_mcp_server_is_the_specs_explicit_choice(
    world: World, servers: tuple[Server, Server]
) -> None:
    """``unsandboxed: reason`` lets one server out (and only it): it reads the home folder."""
    _, outside = servers
    toolset = McpToolset(
        [
            McpServerConfig(
                name="escape",
                command=sys.executable,
                args=[str(HERE / "escape_server.py")],
                cwd=str(world.ws),
                unsandboxed="it drives the host's browser",
            )
        ],
        log_dir=world.base / "logs",
    )
    harness, _, _ = _harness(
        world,
        world.policy(),
        [("mcp__escape__run", {"command": f"cat {world.home}/.ssh/id_rsa"})],
        extensions=[toolset],
    )
    _run(harness)
    results = [m.text for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert SSH_KEY in results[0]
    assert outside.hits == []
    assert SESSION_TEXT  # the data folder stays as it was


def test_without_the_sandbox_the_same_battery_escapes(
    world: World, servers: tuple[Server, Server]
) -> None:
    """The control: the battery has teeth (``sandbox: off`` is the spec's explicit choice)."""
    allowed, outside = servers
    battery = commands(str(world.outside), str(world.home), outside.url, outside.port)
    harness, events, session_file = _harness(
        world,
        SandboxPolicy("off"),
        [("bash", {"command": c}) for c in battery],
        tools=[create_bash_tool(timeout_s=60)],
    )
    _run(harness)
    said = _everything_said(harness, events, session_file)
    assert not world.outside.exists()
    assert SECRET in said and SSH_KEY.split()[-1] in said and "recorded-conversation" in said
    assert outside.hits

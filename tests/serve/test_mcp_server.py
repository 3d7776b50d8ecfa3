"""The agent served as an MCP server (issue 44), called with the mcp SDK's own client:
``--serve --mcp`` over stdin and stdout, and ``/mcp`` (streamable HTTP) on a served
agent behind its token. A permission ``ask``, an external tool's result and a budget
limit reach the client as elicitation (on the 2026-07-28 revision as ``input_required``
rounds, on 2025-11-25 as ``elicitation/create`` requests); a client without elicitation
gets an error result naming the run and answers it by calling the tool again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessc.testing import ProtocolServer

from .servekit import SPEC, AgentKit, Served, compile_agent
from .typedkit import TYPED_SPEC, VALUE, model_reply

pytest.importorskip("mcp.client")

BUDGET_SPEC = SPEC.replace('permissions:\n  ask: ["Bash(*)"]\n', "") + "budget: {turns: 1}\n"
Elicit = Callable[[Any, Any], Awaitable[Any]]


@pytest.fixture(scope="module")
def typed_model() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        running.set_handler(model_reply)
        yield running


def _kit(tmp: Path, url: str, spec: str) -> Iterator[AgentKit]:
    made = compile_agent(tmp, url, spec)
    with made:
        yield made


@pytest.fixture(scope="module")
def typed(
    tmp_path_factory: pytest.TempPathFactory, typed_model: ProtocolServer
) -> Iterator[AgentKit]:
    yield from _kit(tmp_path_factory.mktemp("mcp-typed"), typed_model.url, TYPED_SPEC)


@pytest.fixture(scope="module")
def limited(
    tmp_path_factory: pytest.TempPathFactory, typed_model: ProtocolServer
) -> Iterator[AgentKit]:
    yield from _kit(tmp_path_factory.mktemp("mcp-budget"), typed_model.url, BUDGET_SPEC)


@pytest.fixture(scope="module")
def served(typed: AgentKit) -> Served:
    return typed.serve()


def _answering(*replies: dict[str, Any]) -> tuple[Elicit, list[Any]]:
    """An elicitation callback giving ``replies`` in turn; the requests it got."""
    import mcp_types as types

    asked: list[Any] = []

    async def callback(context: Any, params: Any) -> Any:
        asked.append(params)
        reply = replies[min(len(asked), len(replies)) - 1]
        return types.ElicitResult(**reply)

    return callback, asked


@asynccontextmanager
async def _stdio(kit: AgentKit, **options: Any) -> Any:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=kit.command()[0],
        args=[*kit.command()[1:], "--serve", "--mcp"],
        env=kit.env,
        cwd=str(kit.workdir),
    )
    async with Client(params, read_timeout_seconds=60, **options) as client:
        yield client


@asynccontextmanager
async def _http(server: Served, **options: Any) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=server.headers, timeout=60) as http:
        transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
        async with Client(transport, read_timeout_seconds=60, **options) as client:
            yield client


def _meta(result: Any) -> dict[str, Any]:
    meta = result.meta or {}
    return dict(meta.get("harnessc") or {})


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


# -- stdio ----------------------------------------------------------------------------------


def test_stdio_lists_the_agent_as_a_tool_and_runs_a_prompt(typed: AgentKit) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async with _stdio(typed) as client:
            tools = await client.list_tools()
            plain = await client.call_tool("helper", {"prompt": "hello there"})
            value = await client.call_tool("helper", {"prompt": "verdict please"})
            return tools, plain, value

    tools, plain, value = asyncio.run(scenario())
    [tool] = tools.tools
    assert tool.name == "helper" and "echoes" in (tool.description or "")
    assert tool.output_schema["properties"]["verdict"]["enum"] == ["approve", "reject"]
    assert "prompt" in tool.input_schema["properties"]
    # a typed agent: the value as structured content (and its JSON as the text)
    assert value.structured_content == VALUE and json.loads(_text(value)) == VALUE
    meta = _meta(value)
    assert meta["status"] == "done" and meta["usage"]["turns"] == 1
    assert meta["usage"]["input_tokens"] == 10 and meta["usage"]["output_tokens"] == 5
    # a reply that is no value: the run ends in error, an error result
    assert plain.is_error and _meta(plain)["status"] == "error"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_stdio_a_permission_ask_is_an_elicitation(typed: AgentKit, mode: str) -> None:
    """auto: the 2026-07-28 revision (input_required rounds); legacy: 2025-11-25
    (elicitation/create). Allow runs the command; decline refuses it."""
    allowed = typed.workdir / f"allowed-{mode}.txt"
    refused = typed.workdir / f"refused-{mode}.txt"
    allow, asked = _answering({"action": "accept", "content": {"decision": "allow"}})
    decline, declined = _answering({"action": "decline"})

    async def scenario() -> tuple[Any, Any, str]:
        async with _stdio(typed, mode=mode, elicitation_callback=allow) as client:
            first = await client.call_tool(
                "helper", {"prompt": f'call bash {{"command": "touch {allowed.name}"}}'}
            )
            version = client.protocol_version
        async with _stdio(typed, mode=mode, elicitation_callback=decline) as client:
            second = await client.call_tool(
                "helper", {"prompt": f'call bash {{"command": "touch {refused.name}"}}'}
            )
        return first, second, version

    first, second, version = asyncio.run(scenario())
    assert (version == "2026-07-28") == (mode == "auto")
    assert len(asked) == 1 and "bash" in asked[0].message and allowed.name in asked[0].message
    assert asked[0].requested_schema["properties"]["decision"]["enum"] == [
        "allow",
        "deny",
        "always",
    ]
    assert first.structured_content == VALUE and allowed.exists()
    assert len(declined) == 1
    assert second.structured_content == VALUE and not refused.exists()


def test_stdio_an_external_tool_result_is_asked_for(typed: AgentKit) -> None:
    """The external tool ask_human: the form has one field per pending call."""
    import mcp_types as types

    asked: list[Any] = []

    async def answer(context: Any, params: Any) -> Any:
        asked.append(params)
        [call_id] = params.requested_schema["required"]
        return types.ElicitResult(action="accept", content={call_id: "Ada"})

    async def scenario() -> Any:
        async with _stdio(typed, elicitation_callback=answer) as client:
            return await client.call_tool(
                "helper", {"prompt": 'call ask_human {"question": "your name?"}'}
            )

    result = asyncio.run(scenario())
    assert "ask_human" in asked[0].message and "your name?" in asked[0].message
    assert result.structured_content == VALUE
    assert _meta(result)["usage"]["tool_calls"] == 2  # ask_human, final_result


def test_stdio_a_budget_limit_is_asked_to_be_raised(limited: AgentKit) -> None:
    raise_it, asked = _answering({"action": "accept", "content": {"raise_to": 3}})
    stop, stopped = _answering({"action": "decline"})

    async def scenario() -> tuple[Any, Any]:
        async with _stdio(limited, elicitation_callback=raise_it) as client:
            raised = await client.call_tool(
                "helper", {"prompt": 'call bash {"command": "echo hi"}'}
            )
        async with _stdio(limited, elicitation_callback=stop) as client:
            ended = await client.call_tool("helper", {"prompt": 'call bash {"command": "echo ho"}'})
        return raised, ended

    raised, ended = asyncio.run(scenario())
    assert "turns" in asked[0].message and "raise_to" in asked[0].requested_schema["properties"]
    assert not raised.is_error and _text(raised).startswith("done: hi")
    assert _meta(raised)["usage"]["turns"] == 2
    # declining a budget raise ends the run (nothing can go on past the limit)
    assert len(stopped) == 1 and ended.is_error and _meta(ended)["status"] == "aborted"


def test_stdio_without_elicitation_the_result_names_how_to_resume(typed: AgentKit) -> None:
    marker = typed.workdir / "resumed.txt"

    async def scenario() -> tuple[Any, Any]:
        async with _stdio(typed) as client:
            paused = await client.call_tool(
                "helper", {"prompt": f'call bash {{"command": "touch {marker.name}"}}'}
            )
            meta = _meta(paused)
            [call] = meta["pause"]["calls"]
            answer = {"approvals": {call["id"]: "allow"}}
            done = await client.call_tool("helper", {"run_id": meta["run_id"], "answer": answer})
            return paused, done

    paused, done = asyncio.run(scenario())
    assert paused.is_error
    meta = _meta(paused)
    assert meta["status"] == "paused" and meta["pause"]["kind"] == "approval"
    assert meta["run_id"] in _text(paused) and '"answer"' in _text(paused)
    assert not marker.exists() or done is not None
    assert done.structured_content == VALUE and marker.exists()


def test_stdio_bad_calls_are_error_results(typed: AgentKit) -> None:
    async def scenario() -> list[Any]:
        async with _stdio(typed) as client:
            return [
                await client.call_tool("helper", {}),
                await client.call_tool("helper", {"run_id": "nope.1234", "answer": {}}),
                await client.call_tool("helper", {"prompt": "hi", "session_id": "missing"}),
            ]

    empty, unknown, session = asyncio.run(scenario())
    assert empty.is_error and "'prompt' is required" in _text(empty)
    assert unknown.is_error and "nope.1234" in _text(unknown)
    assert session.is_error and "missing" in _text(session)


# -- streamable HTTP ----------------------------------------------------------------------


def test_http_needs_the_token(served: Served) -> None:
    response = httpx.post(
        f"{served.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_runs_the_agent_with_a_permission_ask(served: Served, mode: str) -> None:
    allow, asked = _answering({"action": "accept", "content": {"decision": "allow"}})
    marker = served.log.parent / f"http-{mode}.txt"
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async def scenario() -> tuple[Any, Any]:
        async with _http(served, mode=mode, elicitation_callback=allow) as client:
            tools = await client.list_tools()
            result = await client.call_tool(
                "helper",
                {"prompt": f'call bash {{"command": "touch {marker.name}"}}'},
                progress_callback=on_progress,
            )
            return tools, result

    tools, result = asyncio.run(scenario())
    assert [t.name for t in tools.tools] == ["helper"]
    assert len(asked) == 1 and result.structured_content == VALUE
    assert marker.exists()
    assert progress  # the run's events came as progress notifications
    # the run is the served agent's: the native API knows it
    with served.client() as http:
        run = http.get(f"/v1/runs/{_meta(result)['run_id']}").json()
    assert run["status"] == "done" and run["output"] == VALUE


def test_http_session_goes_on(served: Served) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with _http(served) as client:
            first = await client.call_tool("helper", {"prompt": "first"})
            second = await client.call_tool(
                "helper", {"prompt": "second", "session_id": _meta(first)["session_id"]}
            )
            return first, second

    first, second = asyncio.run(scenario())
    assert _meta(first)["session_id"] == _meta(second)["session_id"]
    with served.client() as http:
        transcript = http.get(f"/v1/sessions/{_meta(first)['session_id']}").json()
    texts = json.dumps(transcript)
    assert "first" in texts and "second" in texts


def test_http_a_cancelled_call_aborts_its_run(served: Served) -> None:
    """The client gives up on a call paused at a question: the run is aborted."""
    import anyio

    started = asyncio.Event()

    async def hang(context: Any, params: Any) -> Any:
        started.set()
        await asyncio.sleep(3600)

    async def scenario() -> None:
        async with _http(served, mode="legacy", elicitation_callback=hang) as client:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await client.call_tool(
                        "helper", {"prompt": 'call bash {"command": "touch never.txt"}'}
                    )

                group.start_soon(call)
                await started.wait()
                group.cancel_scope.cancel()

    asyncio.run(scenario())
    with served.client() as http:
        listed = http.get("/v1/sessions").json()["sessions"]
        [session] = [s for s in listed if "never.txt" in (s["first_prompt"] or "")]
        run = http.get(f"/v1/runs/{session['latest_run']}").json()
    assert run["status"] == "aborted" and "cancelled by the MCP client" in run["reason"]
    assert not (served.log.parent / "never.txt").exists()


def test_harnessc_serve_mcp_from_a_claude_code_mcp_json(
    tmp_path: Path, typed_model: ProtocolServer
) -> None:
    """``harnessc serve NAME --mcp`` as Claude Code's ``.mcp.json`` names it, started by
    the SDK's client from that file: the agent answers, a pause is elicited."""
    import shutil

    from mcp import Client, StdioServerParameters

    kit = compile_agent(tmp_path, typed_model.url, TYPED_SPEC)
    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "helper.yaml").write_text(TYPED_SPEC)
    command = shutil.which("harnessc") or "harnessc"
    (project / ".mcp.json").write_text(
        json.dumps(
            {"mcpServers": {"helper": {"command": command, "args": ["serve", "helper", "--mcp"]}}}
        )
    )
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["helper"]
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=kit.env, cwd=str(project)
    )
    allow, asked = _answering({"action": "accept", "content": {"decision": "allow"}})

    async def scenario() -> tuple[Any, Any]:
        async with Client(params, read_timeout_seconds=60, elicitation_callback=allow) as client:
            value = await client.call_tool("helper", {"prompt": "verdict now"})
            asked_run = await client.call_tool(
                "helper", {"prompt": 'call bash {"command": "touch cli-allowed.txt"}'}
            )
            return value, asked_run

    value, asked_run = asyncio.run(scenario())
    assert value.structured_content == VALUE
    assert len(asked) == 1 and asked_run.structured_content == VALUE
    assert (project / "cli-allowed.txt").exists()


def test_a_harnessc_agent_calls_a_served_agent_as_an_mcp_tool(
    tmp_path: Path, typed_model: ProtocolServer
) -> None:
    """Agents as tools of agents: a lead whose ``mcp:`` reads the same ``.mcp.json``
    calls the typed helper (``harnessc serve helper --mcp``) as ``mcp__helper__helper``
    and gets its value."""
    import shutil
    import subprocess

    project = tmp_path / "project"
    (project / "agents").mkdir(parents=True)
    (project / "agents" / "helper.yaml").write_text(TYPED_SPEC)
    server = {
        "command": shutil.which("harnessc") or "harnessc",
        "args": ["serve", "helper", "--mcp"],
        "cwd": str(project),
        "env": {name: f"${{{name}}}" for name in ("TEST_API_KEY", "TEST_BASE_URL", "PYTHONPATH")},
    }
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"helper": server}}))
    # the helper (an MCP server of the lead's) reaches the model on this machine's
    # loopback, which a sandboxed server's own network namespace does not have
    lead_spec = SPEC.replace("name: helper", "name: lead") + (
        "mcp:\n  from: ../project/.mcp.json\nsandbox: off\n"
    )
    kit = compile_agent(tmp_path, typed_model.url, lead_spec)
    done = subprocess.run(
        kit.command('call mcp__helper__helper {"prompt": "verdict for the lead"}'),
        env=kit.env,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    reply = done.stdout.strip()
    assert reply.startswith("done: ") and json.loads(reply.removeprefix("done: ")) == VALUE

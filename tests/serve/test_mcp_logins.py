"""An MCP login and an MCP server's question are pauses of a served run (issue 44).

A served agent uses a real OAuth-protected MCP server (``OAuthMcpServer``, on loopback
in this process). A tool call that meets a login (the ``admin`` tool's step-up to the
``admin`` scope) or a question (the ``ask`` tool's form) pauses the run with the
authorization URL or the question and its schema; the caller's answer (the redirect
the browser was sent to, or the form) resumes it, through the native API and A2A. A
sub-agent's login pauses the whole tree. The tokens reach no session or log.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessc.testing import ProtocolServer

from .servekit import AgentKit, Served, compile_agent, wait_status

pytest.importorskip("mcp")
pytest.importorskip("a2a.client")

from harnessc.testing.mcp_oauth import OAuthMcpServer  # noqa: E402

SPEC = """\
version: 1
name: helper
description: A test agent whose MCP server needs a login.
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
system_prompt: You are a test agent.
session:
  dir: ./sessions
mcp:
  notes:
    url: ${NOTES_URL}
    timeout_s: 30
agents:
  scout: {from: scout.md}
"""
SCOUT = """\
---
name: scout
description: Looks things up.
---
You are the scout.
"""


@pytest.fixture(scope="module")
def oauth() -> Iterator[OAuthMcpServer]:
    with OAuthMcpServer() as running:
        yield running


@pytest.fixture(scope="module")
def logged_in(tmp_path_factory: pytest.TempPathFactory, oauth: OAuthMcpServer) -> Iterator[Path]:
    """A data folder holding a token of the server (no ``admin`` scope): the login a
    person made once on a terminal."""
    home = tmp_path_factory.mktemp("data")
    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(home)
    try:
        from harnessc.runtime.mcp.client import ServerConnection
        from harnessc.runtime.mcp.config import McpServerConfig
        from harnessc.runtime.mcp.user_bridge import UserBridge

        config = McpServerConfig(name="notes", url=oauth.url, timeout_s=15)
        config.validate()
        connection = ServerConnection(
            config, environ=os.environ, log_dir=home, user=UserBridge(_Browser())
        )

        async def login() -> None:
            await connection.start()
            await connection.close()

        asyncio.run(login())
        shutil.copytree(home / "harnessc", home / "first-login")
        yield home
    finally:
        if before is None:
            os.environ.pop("XDG_DATA_HOME", None)
        else:
            os.environ["XDG_DATA_HOME"] = before


class _Browser:
    """Logs in by following the authorization URL (the server approves at once)."""

    async def login(self, request: Any) -> Any:
        from harnessc.runtime.mcp.user_types import LoginAnswer

        return LoginAnswer(follow(request.url))

    async def elicit(self, request: Any) -> Any:
        raise AssertionError(f"asked {request.message!r} while logging in")


def follow(url: str) -> str:
    """Where the authorization server sends the browser back (the login's answer)."""
    response = httpx.get(url, timeout=30)
    assert response.status_code == 302, response.text
    return response.headers["location"]


@pytest.fixture(scope="module")
def kit(
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ProtocolServer,
    oauth: OAuthMcpServer,
    logged_in: Path,
) -> Iterator[AgentKit]:
    tmp = tmp_path_factory.mktemp("logins")
    (tmp / "spec").mkdir()
    (tmp / "spec" / "scout.md").write_text(SCOUT)
    made = compile_agent(tmp, model_server.url, SPEC)
    made.env.update(NOTES_URL=oauth.url, XDG_DATA_HOME=str(logged_in))
    with made:
        yield made


@pytest.fixture(scope="module")
def server(kit: AgentKit) -> Served:
    return kit.serve()


@pytest.fixture
def no_admin(logged_in: Path) -> None:
    """The token of the first login again (a step-up made by an earlier test stored one
    with the ``admin`` scope): ``admin`` meets a login. Only the tokens go back: the
    served agents write their logs and checkpoints in the same data folder meanwhile."""
    tokens = logged_in / "harnessc" / "mcp-auth"
    shutil.rmtree(tokens, ignore_errors=True)
    shutil.copytree(logged_in / "first-login" / "mcp-auth", tokens)


def _paused(client: httpx.Client, prompt: str, timeout: float = 60) -> tuple[str, dict[str, Any]]:
    """A new run on ``prompt``, once it paused or ended; its id and status."""
    run_id = client.post("/v1/runs", json={"prompt": prompt}).json()["run_id"]
    return run_id, wait_status(client, run_id, "paused", "done", "error", timeout=timeout)


def _no_token_kept(kit: AgentKit, served: Served, texts: list[str], *servers: Any) -> None:
    """No token of ``servers`` in the session files, the agent's data folder but for its
    token files (its logs), the server's output or ``texts`` (the run's events)."""
    tokens = [t for s in servers for t in s.state.tokens()]
    assert tokens
    kept = [p for p in (kit.workdir / "sessions").rglob("*") if p.is_file()]
    assert kept
    data = Path(kit.env["XDG_DATA_HOME"]) / "harnessc"
    kept += [p for p in data.rglob("*") if p.is_file() and "mcp-auth" not in p.parts]
    for text in [served.output(), *texts, *(p.read_text(errors="replace") for p in kept)]:
        for token in tokens:
            assert token not in text


def test_a_login_in_a_tool_call_pauses_a_served_run_and_the_redirect_resumes_it(
    kit: AgentKit, server: Served, oauth: OAuthMcpServer, no_admin: None
) -> None:
    """The step-up of ``admin`` needs a login: the run pauses (``mcp_login``) with the
    authorization URL; a resume with no answer pauses again; one with a wrong answer
    is refused (409); the redirect resumes it and the call gets its result."""
    with server.client() as client:
        run_id, status = _paused(client, "call mcp__notes__admin {}")
        assert status["status"] == "paused", status
        pause = status["pause"]
        assert pause["kind"] == "mcp_login", pause
        payload = pause["payload"]
        assert payload["server"] == "notes"
        assert "admin" in payload["scopes"]
        assert payload["url"] in status["reason"]
        bad = client.post(f"/v1/runs/{run_id}/resume", json={"payload": {"action": "accept"}})
        assert bad.status_code == 409, bad.text
        assert "redirect" in bad.json()["error"]["message"]
        back = follow(payload["url"])
        done = client.post(f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": back}})
        assert done.status_code == 200, done.text
        status = wait_status(client, run_id, "done", "error", "paused", timeout=60)
        assert status["status"] == "done", status
        assert status["text"].startswith("done: admin ok"), status["text"]
    _no_token_kept(kit, server, [], oauth)


def test_a_question_in_a_tool_call_pauses_a_served_run_and_the_form_resumes_it(
    server: Served,
) -> None:
    """The ``ask`` tool's form: the pause (``mcp_elicitation``) carries the message and
    the schema; an answer that does not fit the schema is refused; the form resumes."""
    with server.client() as client:
        run_id, status = _paused(client, "call mcp__notes__ask {}")
        pause = status["pause"]
        assert pause["kind"] == "mcp_elicitation", status
        assert pause["payload"]["mode"] == "form"
        assert "name" in pause["payload"]["schema"]["properties"]
        bad = client.post(
            f"/v1/runs/{run_id}/resume",
            json={"payload": {"action": "accept", "content": {"legs": 3}}},
        )
        assert bad.status_code == 409, bad.text
        assert "'name'" in bad.json()["error"]["message"]
        answer = {"action": "accept", "content": {"name": "Rex", "legs": 3}}
        client.post(f"/v1/runs/{run_id}/resume", json={"payload": answer}).raise_for_status()
        status = wait_status(client, run_id, "done", "error", "paused", timeout=60)
        assert status["text"] == "done: pet Rex with 3 legs, a cat", status


def test_a_sub_agents_login_pauses_the_whole_tree(server: Served, no_admin: None) -> None:
    """A hand-over whose sub-agent meets the login: the lead's run pauses on it, the
    pause names the sub-agent's call and path, and the redirect resumes the tree."""
    prompt = 'call task {"subagent_type": "scout", "description": "d", "prompt": ' + (
        '"call mcp__notes__admin {}"}'
    )
    with server.client() as client:
        run_id, status = _paused(client, prompt)
        pause = status["pause"]
        assert pause["kind"] == "mcp_login", status
        assert pause["payload"]["path"] == "helper > scout"
        back = follow(pause["payload"]["url"])
        client.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": back}}
        ).raise_for_status()
        status = wait_status(client, run_id, "done", "error", "paused", timeout=60)
        assert status["status"] == "done", status
        assert "admin ok" in status["text"]


def test_an_a2a_task_is_input_required_on_a_login_and_a_question(
    server: Served, no_admin: None
) -> None:
    """Through A2A: the login's task is input-required with the URL, the next message
    (the redirect) answers it; a question is input-required with its schema, a data
    part with the form answers it."""
    from a2a.types import a2a_pb2 as a2a

    from .test_a2a import _final_state, _send

    items = asyncio.run(_send(server, "call mcp__notes__admin {}", streaming=True))
    state, text, task_id = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED, text
    assert "needs a login" in text
    url = text.split("open ", 1)[1].split(" and log in", 1)[0]
    context_id = _context(items)
    items = asyncio.run(
        _send(server, follow(url), streaming=False, task_id=task_id, context_id=context_id)
    )
    state, text, _ = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_COMPLETED, text
    assert text.startswith("done: admin ok")

    items = asyncio.run(_send(server, "call mcp__notes__ask {}", streaming=True))
    state, text, task_id = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED, text
    assert '"name"' in text  # the form's schema
    items = asyncio.run(
        _send_data(server, {"name": "Tom"}, task_id=task_id, context_id=_context(items))
    )
    state, text, _ = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_COMPLETED, text
    assert text == "done: pet Tom with 4 legs, a cat"


def _context(items: list[Any]) -> str:
    return next(
        (i.task.context_id for i in items if i.HasField("task")),
        next(i.status_update.context_id for i in items if i.HasField("status_update")),
    )


async def _send_data(server: Served, data: dict[str, Any], **ids: str) -> list[Any]:
    import uuid

    from a2a.client import ClientConfig, create_client
    from a2a.types import a2a_pb2 as a2a
    from google.protobuf.struct_pb2 import Struct, Value

    struct = Struct()
    struct.update(data)
    message = a2a.SendMessageRequest(
        message=a2a.Message(
            message_id=str(uuid.uuid4()),
            role=a2a.Role.ROLE_USER,
            parts=[a2a.Part(data=Value(struct_value=struct))],
            **ids,
        )
    )
    async with httpx.AsyncClient(headers=server.headers, timeout=30) as http:
        client = await create_client(
            server.url, client_config=ClientConfig(streaming=False, httpx_client=http)
        )
        try:
            return [item async for item in client.send_message(message)]
        finally:
            await client.close()


# -- a durable run: its worker waits for the answer; a worker killed meanwhile ----------


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def durable(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ProtocolServer,
    oauth: OAuthMcpServer,
    logged_in: Path,
) -> Iterator[Any]:
    from .test_durable import _database, served_durably

    tmp = tmp_path_factory.mktemp("logins-durable")
    (tmp / "spec").mkdir()
    (tmp / "spec" / "scout.md").write_text(SCOUT)
    spec = (
        SPEC + "durable:\n  database_url: ${DURABLE_URL}\n  queue: {name: logins}\n  lease_s: 2\n"
    )
    with _database(request.param) as url:
        made = compile_agent(tmp, model_server.url, spec)
        made.env.update(NOTES_URL=oauth.url, XDG_DATA_HOME=str(logged_in), DURABLE_URL=url)
        with served_durably(made) as running:
            yield running


def _pause_url(client: httpx.Client, run_id: str, other_than: str = "") -> str:
    """The URL of the run's login pause (one other than ``other_than``)."""
    deadline = time.monotonic() + 90
    while True:
        status = client.get(f"/v1/runs/{run_id}").json()
        pause = status.get("pause") or {}
        url = (pause.get("payload") or {}).get("url")
        if pause.get("kind") == "mcp_login" and url and url != other_than:
            return str(url)
        assert status["status"] not in ("done", "error"), (status, status.get("text"))
        assert time.monotonic() < deadline, status
        time.sleep(0.1)


def test_a_durable_runs_login_survives_a_worker_kill_with_a_fresh_url(
    durable: Any, no_admin: None, oauth: OAuthMcpServer
) -> None:
    """The worker waits at the login; SIGKILLed, the next worker recovers the run and
    the first URL's redirect (its verifier died with the first worker) gets a fresh
    login URL instead of failing the call; the first URL's redirect is then refused
    (409, naming the fresh URL), and the fresh one's resumes the run in the worker.
    Then a question of a durable run is declined the same way."""
    workers = durable.workers
    victim = workers.start("lw1")
    with durable.server.client(timeout=90) as client:
        run_id = client.post("/v1/runs", json={"prompt": "call mcp__notes__admin {}"}).json()[
            "run_id"
        ]
        first = _pause_url(client, run_id)
        victim.kill()
        victim.wait(30)
        workers.start("lw1")  # the same id: it recovers its runs at once
        # the redirect of the first URL reaches the new worker, whose verifier is not
        # that URL's: the run shows a fresh login URL
        client.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(first)}}
        ).raise_for_status()
        fresh = _pause_url(client, run_id, other_than=first)
        stale = client.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(first)}}
        )
        assert stale.status_code == 409, stale.text
        assert fresh in stale.json()["error"]["message"]
        client.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(fresh)}}
        ).raise_for_status()
        status = wait_status(client, run_id, "done", "error", timeout=90)
        assert status["text"].startswith("done: admin ok"), status

        asked = client.post("/v1/runs", json={"prompt": "call mcp__notes__ask {}"}).json()
        status = wait_status(client, asked["run_id"], "paused", "done", timeout=90)
        assert status["pause"]["kind"] == "mcp_elicitation", status
        answer = {"action": "decline"}
        client.post(
            f"/v1/runs/{asked['run_id']}/resume", json={"payload": answer}
        ).raise_for_status()
        status = wait_status(client, asked["run_id"], "done", "error", timeout=90)
        assert status["text"] == "done: no pet: decline", status


# -- the MCP door: the calling client's elicitation answers the agent's MCP pauses -------


def test_the_mcp_door_puts_a_login_as_url_elicitation_and_a_question_as_its_form(
    server: Served, no_admin: None
) -> None:
    """The official SDK's client calls the agent through ``/mcp``: the agent's login is
    a URL-mode elicitation of the authorization URL (the client's "browser" follows it
    and comes back to the redirect, which the agent's loopback callback catches; the
    client accepts), the server's question reaches the client as a form with the
    server's schema; the run's events come as progress notifications."""
    import mcp_types as types

    from .test_mcp_server import _http, _meta, _text

    asked: list[Any] = []
    progress: list[str | None] = []

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append(params)
        if params.mode == "url":
            back = await asyncio.to_thread(follow, params.url)
            assert (await asyncio.to_thread(httpx.get, back, timeout=30)).status_code == 200
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"name": "Rex", "legs": 3})

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async def scenario() -> tuple[Any, Any]:
        async with _http(server, elicitation_callback=on_elicit) as client:
            login = await client.call_tool(
                "helper", {"prompt": "call mcp__notes__admin {}"}, progress_callback=on_progress
            )
            question = await client.call_tool("helper", {"prompt": "call mcp__notes__ask {}"})
            return login, question

    login, question = asyncio.run(scenario())
    assert not login.is_error, _text(login)
    assert _text(login).startswith("done: admin ok"), _text(login)
    assert _meta(login)["status"] == "done"
    url_asks = [a for a in asked if a.mode == "url"]
    assert len(url_asks) == 1 and "needs a login" in url_asks[0].message
    assert _text(question) == "done: pet Rex with 3 legs, a cat"
    [form] = [a for a in asked if a.mode != "url"]
    assert "mcp server 'notes' asks" in form.message
    assert "name" in form.requested_schema["properties"]
    assert "tool_execution_start: mcp__notes__admin" in progress


def test_an_agui_run_ends_with_an_interrupt_per_login_and_question(
    server: Served, no_admin: None
) -> None:
    """Through AG-UI: the login is an interrupt (id = the call id) whose metadata holds
    the URL, resolved with the redirect; the question an interrupt whose response
    schema holds the server's form, resolved with its fields."""
    from .test_agui import _input, _run

    login = {"id": "u1", "role": "user", "content": "call mcp__notes__admin {}"}
    events = _run(server, _input("mcp-thread", "r1", [login]))
    [interrupt] = events[-1].outcome.interrupts
    assert interrupt.reason == "mcp_login"
    back = follow(interrupt.metadata["url"])
    resolved = {"interruptId": interrupt.id, "status": "resolved", "payload": {"redirect": back}}
    events = _run(server, _input("mcp-thread", "r2", [login], resume=[resolved]))
    result = next(e for e in events if e.type.value == "TOOL_CALL_RESULT")
    assert "admin ok" in result.content

    ask = {"id": "u2", "role": "user", "content": "call mcp__notes__ask {}"}
    events = _run(server, _input("mcp-thread", "r3", [login, ask]))
    [interrupt] = events[-1].outcome.interrupts
    assert interrupt.reason == "mcp_elicitation"
    assert "name" in interrupt.response_schema["properties"]["content"]["properties"]
    form = {"interruptId": interrupt.id, "status": "resolved", "payload": {"name": "Ada"}}
    events = _run(server, _input("mcp-thread", "r4", [login, ask], resume=[form]))
    result = next(e for e in events if e.type.value == "TOOL_CALL_RESULT")
    assert result.content == "pet Ada with 4 legs, a cat"


def test_an_openai_completion_names_the_login_and_the_native_resume_finishes_it(
    server: Served, no_admin: None
) -> None:
    """The OpenAI-compatible door cannot carry an answer: its reply names the login's
    URL and the run to resume; the native API's resume with the redirect finishes it."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=server.token or "x")
    reply = client.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "call mcp__notes__admin {}"}]
    )
    text = reply.choices[0].message.content or ""
    assert "needs a login" in text and "/resume]" in text, text
    url = text.split("open ", 1)[1].split(" and log in", 1)[0]
    run_id = text.split("/v1/runs/", 1)[1].split("/resume", 1)[0]
    with server.client() as http:
        http.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(url)}}
        ).raise_for_status()
        status = wait_status(http, run_id, "done", "error", "paused", timeout=60)
    assert status["text"].startswith("done: admin ok"), status

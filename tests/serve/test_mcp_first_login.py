"""A login met while listing an MCP server's tools, and a sub-agent's own MCP servers, in
served runs (issue 44).

The lead's server ``notes`` and the sub-agent ``scout``'s own server ``desk`` are real
OAuth-protected MCP servers (``OAuthMcpServer``, two of them, on loopback in this
process). With no token stored, the toolset's start meets a login while it lists the
tools: the run pauses (``mcp_login``, the server and the authorization URL) before the
model is asked anything, and the caller's answer (the redirect, or ``done`` after a
login made elsewhere) lists the tools and the run goes on with them, through the native
API, A2A and AG-UI, and in a durable worker killed while it waits. ``scout`` (a ``spec:``
sub-agent) starts ``desk`` itself: its first login, its step-up in a call and its form
question each pause the whole tree, and the answer goes back to the sub-agent, whose
result reaches the lead. No token reaches a session file, the server's log or its events.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessc.testing import ProtocolServer

from .servekit import MODEL, AgentKit, Served, compile_with_subagent, wait_status

pytest.importorskip("mcp")
pytest.importorskip("a2a.client")

from harnessc.testing.mcp_oauth import OAuthMcpServer  # noqa: E402

from .test_mcp_logins import (  # noqa: E402
    _Browser,
    _context,
    _no_token_kept,
    _pause_url,
    _paused,
    follow,
)

LEAD = f"""\
version: 1
name: helper
description: A lead whose MCP server needs a first login.
{MODEL}system_prompt: You are a test agent.
session:
  dir: ./sessions
mcp:
  notes:
    url: ${{NOTES_URL}}
    timeout_s: 30
agents:
  scout: {{spec: scout.yaml}}
"""
SCOUT = f"""\
version: 1
name: scout
description: Looks things up on its own MCP server.
{MODEL}system_prompt: You are the scout.
mcp:
  desk:
    url: ${{DESK_URL}}
    timeout_s: 30
"""


def _handover(prompt: str) -> str:
    args = {"subagent_type": "scout", "description": "d", "prompt": prompt}
    return "call task " + json.dumps(args)


@pytest.fixture(scope="module")
def notes() -> Iterator[OAuthMcpServer]:
    with OAuthMcpServer() as running:
        yield running


@pytest.fixture(scope="module")
def desk() -> Iterator[OAuthMcpServer]:
    with OAuthMcpServer() as running:
        yield running


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The data folder of the served agent (its MCP tokens)."""
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def kit(
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ProtocolServer,
    notes: OAuthMcpServer,
    desk: OAuthMcpServer,
    home: Path,
) -> Iterator[AgentKit]:
    made = compile_with_subagent(
        tmp_path_factory.mktemp("first-login"), model_server.url, LEAD, "scout.yaml", SCOUT
    )
    made.env.update(NOTES_URL=notes.url, DESK_URL=desk.url, XDG_DATA_HOME=str(home))
    with made:
        yield made


@pytest.fixture(scope="module")
def server(kit: AgentKit) -> Served:
    return kit.serve()


@pytest.fixture
def no_tokens(home: Path) -> Path:
    """No login made yet: every server meets its first login (only the token files go:
    the served agents write their logs beside them meanwhile)."""
    tokens = home / "harnessc" / "mcp-auth"
    if tokens.exists():
        shutil.rmtree(tokens)
    return home


def _log_in(home: Path, url: str, name: str) -> None:
    """A login made elsewhere (a terminal of the same user): a token stored in ``home``."""
    from harnessc.runtime.mcp.client import ServerConnection
    from harnessc.runtime.mcp.config import McpServerConfig
    from harnessc.runtime.mcp.user_bridge import UserBridge

    before = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(home)
    try:
        config = McpServerConfig(name=name, url=url, timeout_s=15)
        config.validate()
        connection = ServerConnection(
            config, environ=os.environ, log_dir=home, user=UserBridge(_Browser())
        )

        async def login() -> None:
            await connection.start()
            await connection.close()

        asyncio.run(login())
    finally:
        if before is None:
            os.environ.pop("XDG_DATA_HOME", None)
        else:
            os.environ["XDG_DATA_HOME"] = before


@pytest.fixture
def desk_logged_in(no_tokens: Path, desk: OAuthMcpServer, notes: OAuthMcpServer) -> None:
    """Both servers logged in once (no ``admin`` scope): only a step-up meets a login."""
    _log_in(no_tokens, notes.url, "notes")
    _log_in(no_tokens, desk.url, "desk")


def _whoami(text: str) -> bool:
    """Whether ``text`` holds the ``whoami`` tool's answer: a client id and the scope
    ``mcp`` of the token the call came with."""
    return re.search(r"(^|: )\S+ mcp(\s|$)", text) is not None


def _asked(model: ProtocolServer, prompt: str) -> int:
    """How many model requests carried ``prompt``."""
    return sum(prompt in json.dumps(r.json) for r in model.requests)


def _events(server: Served, run_id: str) -> str:
    with server.client() as client, client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
        return "\n".join(line for line in stream.iter_lines())


def _login_pause(status: dict[str, Any], server: str) -> dict[str, Any]:
    assert status["status"] == "paused", status
    pause = status["pause"]
    assert pause["kind"] == "mcp_login", pause
    payload = pause["payload"]
    assert payload["server"] == server, payload
    assert payload["url"].startswith("http://127.0.0.1:"), payload
    assert payload["url"] in status["reason"], status
    assert isinstance(payload["call_id"], str) and payload["call_id"], payload
    return dict(payload)


# -- gap 1: a first login met while listing the tools ------------------------------------


def test_a_first_login_while_listing_pauses_before_the_model_and_the_redirect_resumes(
    kit: AgentKit,
    server: Served,
    model_server: ProtocolServer,
    notes: OAuthMcpServer,
    no_tokens: Path,
) -> None:
    """No token: the run pauses with the login's URL before any model request; a resume
    without an answer pauses again; the redirect lists the tools and the model's call
    of one of them gets its result."""
    prompt = "call mcp__notes__whoami {}"
    with server.client() as client:
        run_id, status = _paused(client, prompt, timeout=90)
        payload = _login_pause(status, "notes")
        assert _asked(model_server, prompt) == 0, "the model was asked before the login"
        again = client.post(f"/v1/runs/{run_id}/resume", json={})
        assert again.status_code == 200, again.text
        status = wait_status(client, run_id, "paused", "done", "error", timeout=60)
        assert _login_pause(status, "notes")["url"] == payload["url"]
        back = follow(payload["url"])
        done = client.post(f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": back}})
        assert done.status_code == 200, done.text
        status = wait_status(client, run_id, "done", "error", "paused", timeout=60)
        assert status["status"] == "done", status
        assert _whoami(status["text"]), status
    assert _asked(model_server, prompt) >= 1
    _no_token_kept(kit, server, [_events(server, run_id)], notes)


def test_done_after_a_login_made_elsewhere_lists_the_tools(
    server: Served, notes: OAuthMcpServer, desk: OAuthMcpServer, no_tokens: Path
) -> None:
    """The pause answered ``done`` once the user logged in elsewhere (a token stored):
    the start is made afresh with that token."""
    with server.client() as client:
        run_id, status = _paused(client, "call mcp__notes__whoami {}", timeout=90)
        _login_pause(status, "notes")
        _log_in(no_tokens, notes.url, "notes")
        client.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": "done"}}
        ).raise_for_status()
        status = wait_status(client, run_id, "done", "error", "paused", timeout=60)
        assert status["status"] == "done" and _whoami(status["text"]), status


def test_an_a2a_task_is_input_required_on_a_first_login(server: Served, no_tokens: Path) -> None:
    """Through A2A: the task is input-required with the URL; the redirect as the next
    message completes it."""
    from a2a.types import a2a_pb2 as a2a

    from .test_a2a import _final_state, _send

    items = asyncio.run(_send(server, "call mcp__notes__whoami {}", streaming=True))
    state, text, task_id = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED, text
    assert "mcp server 'notes' needs a login" in text
    url = text.split("open ", 1)[1].split(" and log in", 1)[0]
    items = asyncio.run(
        _send(server, follow(url), streaming=False, task_id=task_id, context_id=_context(items))
    )
    state, text, _ = _final_state(items)
    assert state == a2a.TaskState.TASK_STATE_COMPLETED, text
    assert _whoami(text), text


def test_an_agui_run_ends_with_an_interrupt_for_a_first_login(
    server: Served, no_tokens: Path
) -> None:
    """Through AG-UI: the first login is an interrupt whose metadata holds the URL;
    resolved with the redirect, the tool call runs."""
    pytest.importorskip("ag_ui.core")
    from .test_agui import _input, _run

    message = {"id": "u1", "role": "user", "content": "call mcp__notes__whoami {}"}
    events = _run(server, _input("first-thread", "r1", [message]))
    [interrupt] = events[-1].outcome.interrupts
    assert interrupt.reason == "mcp_login"
    assert interrupt.metadata["server"] == "notes"
    assert interrupt.tool_call_id is None  # no tool call holds it: the start does
    back = follow(interrupt.metadata["url"])
    resolved = {"interruptId": interrupt.id, "status": "resolved", "payload": {"redirect": back}}
    events = _run(server, _input("first-thread", "r2", [message], resume=[resolved]))
    result = next(e for e in events if e.type.value == "TOOL_CALL_RESULT")
    assert _whoami(result.content), result.content


def test_an_openai_completion_names_the_first_login_and_the_native_resume_finishes_it(
    server: Served, no_tokens: Path
) -> None:
    """The OpenAI-compatible door cannot carry an answer: its reply names the first
    login's URL and the run to resume; the native resume with the redirect lists the
    tools and the call runs."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=server.token or "x")
    reply = client.chat.completions.create(
        model="helper", messages=[{"role": "user", "content": "call mcp__notes__whoami {}"}]
    )
    text = reply.choices[0].message.content or ""
    assert "needs a login" in text and "/resume]" in text, text
    assert "approv" not in text.lower(), text  # a login, not an approval
    url = text.split("open ", 1)[1].split(" and log in", 1)[0]
    run_id = text.split("/v1/runs/", 1)[1].split("/resume", 1)[0]
    with server.client() as http:
        resumed = http.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(url)}}
        )
        assert resumed.status_code == 200, resumed.text
        status = wait_status(http, run_id, "done", "error", "paused", timeout=60)
    assert status["status"] == "done" and _whoami(status["text"]), status


def test_the_mcp_door_puts_a_first_login_as_url_elicitation(
    server: Served, no_tokens: Path
) -> None:
    """The official SDK's client calls the agent through ``/mcp``: the agent's first
    login, met while it lists its server's tools, is a URL-mode elicitation of the
    authorization URL; the client's "browser" follows it, the agent's loopback callback
    catches the redirect, the client accepts, and the call's answer comes back."""
    import mcp_types as types

    from .test_mcp_server import _http, _text

    asked: list[Any] = []

    async def on_elicit(context: Any, params: Any) -> Any:
        asked.append(params)
        if params.mode == "url":
            back = await asyncio.to_thread(follow, params.url)
            assert (await asyncio.to_thread(httpx.get, back, timeout=30)).status_code == 200
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="decline")

    async def scenario() -> Any:
        async with _http(server, elicitation_callback=on_elicit) as client:
            return await client.call_tool("helper", {"prompt": "call mcp__notes__whoami {}"})

    answer = asyncio.run(scenario())
    assert not answer.is_error, _text(answer)
    assert _whoami(_text(answer)), _text(answer)
    assert [a.mode for a in asked] == ["url"], asked
    assert "needs a login" in asked[0].message


def test_a_first_login_pause_survives_a_restart_of_the_server(
    kit: AgentKit, notes: OAuthMcpServer, no_tokens: Path
) -> None:
    """The server is stopped while its run waits at a first login; the next server
    shows the pause (its start key, stale: the login's verifier went with the process),
    a resume with the old URL's redirect meets the login afresh with a new URL, and
    that one's redirect finishes the run."""
    first = kit.serve()
    with first.client() as client:
        run_id, status = _paused(client, "call mcp__notes__whoami {}", timeout=90)
        old = _login_pause(status, "notes")["url"]
    assert first.stop() == 0
    second = kit.serve()
    try:
        with second.client() as client:
            status = client.get(f"/v1/runs/{run_id}").json()
            assert status["status"] == "paused", status
            pause = status["pause"]
            assert pause["kind"] == "mcp_login", pause
            assert pause["payload"] == {"call_id": "mcp-start:notes", "stale": True}
            client.post(
                f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(old)}}
            ).raise_for_status()
            status = wait_status(client, run_id, "paused", "done", "error", timeout=60)
            fresh = _login_pause(status, "notes")["url"]
            assert fresh != old
            client.post(
                f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(fresh)}}
            ).raise_for_status()
            status = wait_status(client, run_id, "done", "error", "paused", timeout=60)
            assert status["status"] == "done" and _whoami(status["text"]), status
        _no_token_kept(kit, second, [first.output()], notes)
    finally:
        second.stop()


# -- gap 2: a sub-agent's own MCP servers --------------------------------------------------


def test_a_sub_agents_first_login_on_its_own_server_pauses_the_tree(
    kit: AgentKit,
    server: Served,
    notes: OAuthMcpServer,
    desk: OAuthMcpServer,
    no_tokens: Path,
) -> None:
    """The lead logs in to ``notes`` first (its own start); then the scout's own server
    ``desk`` meets its first login: the whole run pauses with desk's URL, the redirect
    goes back to the scout, whose tool result reaches the lead."""
    _log_in(no_tokens, notes.url, "notes")
    with server.client() as client:
        run_id, status = _paused(client, _handover("call mcp__desk__whoami {}"), timeout=90)
        payload = _login_pause(status, "desk")
        assert payload.get("path") == "helper > scout", payload
        back = follow(payload["url"])
        client.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": back}}
        ).raise_for_status()
        status = wait_status(client, run_id, "done", "error", "paused", timeout=90)
        assert status["status"] == "done", status
        assert _whoami(status["text"]), status
    _no_token_kept(kit, server, [_events(server, run_id)], notes, desk)


def test_a_sub_agents_step_up_on_its_own_server_pauses_the_tree(
    server: Served, desk_logged_in: None
) -> None:
    """``admin`` on the scout's own server needs a step-up: the tree pauses on the
    scout's call (its path), the redirect resumes the scout and the lead gets the
    result."""
    with server.client() as client:
        run_id, status = _paused(client, _handover("call mcp__desk__admin {}"), timeout=90)
        payload = _login_pause(status, "desk")
        assert payload.get("path") == "helper > scout", payload
        assert "admin" in payload["scopes"]
        back = follow(payload["url"])
        client.post(
            f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": back}}
        ).raise_for_status()
        status = wait_status(client, run_id, "done", "error", "paused", timeout=90)
        assert status["status"] == "done", status
        assert "admin ok" in status["text"], status


def test_a_sub_agents_own_servers_question_pauses_the_tree(
    server: Served, desk_logged_in: None
) -> None:
    """The scout's own server asks a form question: the tree pauses
    (``mcp_elicitation``, the schema, the scout's path); the form goes back to it."""
    with server.client() as client:
        run_id, status = _paused(client, _handover("call mcp__desk__ask {}"), timeout=90)
        assert status["status"] == "paused", status
        pause = status["pause"]
        assert pause["kind"] == "mcp_elicitation", pause
        assert pause["payload"]["server"] == "desk"
        assert pause["payload"].get("path") == "helper > scout"
        assert "name" in pause["payload"]["schema"]["properties"]
        answer = {"action": "accept", "content": {"name": "Rex", "legs": 3}}
        client.post(f"/v1/runs/{run_id}/resume", json={"payload": answer}).raise_for_status()
        status = wait_status(client, run_id, "done", "error", "paused", timeout=90)
        assert status["status"] == "done", status
        assert "pet Rex with 3 legs, a cat" in status["text"], status


# -- a durable worker: killed while the first login waits ----------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def durable(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ProtocolServer,
    notes: OAuthMcpServer,
    desk: OAuthMcpServer,
    home: Path,
) -> Iterator[Any]:
    from .test_durable import _database, served_durably

    spec = LEAD + "durable:\n  database_url: ${DURABLE_URL}\n  queue: {name: first}\n  lease_s: 2\n"
    with _database(request.param) as url:
        made = compile_with_subagent(
            tmp_path_factory.mktemp("first-durable"), model_server.url, spec, "scout.yaml", SCOUT
        )
        made.env.update(
            NOTES_URL=notes.url, DESK_URL=desk.url, XDG_DATA_HOME=str(home), DURABLE_URL=url
        )
        with served_durably(made) as running:
            yield running


def _again_after_a_kill(
    durable: Any, client: httpx.Client, run_id: str, first: str, victim: Any, worker_id: str
) -> str:
    """Kill ``victim``, the only worker (waiting at the login of ``first``), start one
    under its id (it recovers its runs at once), answer with ``first``'s redirect, which
    the new worker cannot use, and log in at the fresh URL it shows; the run's events."""
    victim.kill()
    victim.wait(30)
    durable.workers.start(worker_id)
    client.post(
        f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(first)}}
    ).raise_for_status()
    fresh = _pause_url(client, run_id, other_than=first)
    client.post(
        f"/v1/runs/{run_id}/resume", json={"payload": {"redirect": follow(fresh)}}
    ).raise_for_status()
    status = wait_status(client, run_id, "done", "error", timeout=90)
    assert status["status"] == "done", status
    assert _whoami(status["text"]), status
    return _events(durable.server, run_id)


def test_a_durable_first_login_survives_a_worker_kill_with_a_fresh_url(
    durable: Any, model_server: ProtocolServer, notes: OAuthMcpServer, no_tokens: Path
) -> None:
    """The worker waits at the first login, before any model request; SIGKILLed, the
    next worker recovers the run and meets the login again with a fresh URL (the first
    one's verifier died with the first worker); its redirect lists the tools and the
    run ends with the tool's result."""
    prompt = "call mcp__notes__whoami {}"
    asked = _asked(model_server, prompt)  # by the runs before this one
    workers = durable.workers
    workers.stop()  # an earlier test's: the victim is the only worker
    victim = workers.start("fw1")
    with durable.server.client(timeout=90) as client:
        run_id = client.post("/v1/runs", json={"prompt": prompt}).json()["run_id"]
        first = _pause_url(client, run_id)
        assert _asked(model_server, prompt) == asked, "the model was asked before the login"
        events = _again_after_a_kill(durable, client, run_id, first, victim, "fw1")
    _no_token_kept(durable.kit, durable.server, [events], notes)


def test_a_durable_sub_agents_first_login_on_its_own_server_survives_a_worker_kill(
    durable: Any, notes: OAuthMcpServer, desk: OAuthMcpServer, no_tokens: Path
) -> None:
    """The scout's own server meets its first login in a durable run: the tree waits
    (the scout's path, desk's URL); the worker is SIGKILLed, the next one recovers the
    tree and shows a fresh URL, whose redirect goes back to the scout; the lead ends with
    the scout's tool result."""
    _log_in(no_tokens, notes.url, "notes")
    workers = durable.workers
    workers.stop()  # an earlier test's: the victim is the only worker
    victim = workers.start("fw2")
    with durable.server.client(timeout=90) as client:
        prompt = _handover("call mcp__desk__whoami {}")
        run_id = client.post("/v1/runs", json={"prompt": prompt}).json()["run_id"]
        first = _pause_url(client, run_id)
        pause = client.get(f"/v1/runs/{run_id}").json()["pause"]
        assert pause["payload"]["server"] == "desk", pause
        assert pause["payload"].get("path") == "helper > scout", pause
        events = _again_after_a_kill(durable, client, run_id, first, victim, "fw2")
    assert len(list((durable.kit.workdir / "sessions").rglob("*.jsonl"))) >= 2  # lead, scout
    _no_token_kept(durable.kit, durable.server, [events], notes, desk)

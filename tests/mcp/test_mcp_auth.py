"""The MCP client's authorization, elicitation, roots, progress and cancellation, against
real servers on loopback: the SDK's MCP server with its auth support and a small
authorization server (``harnessc.testing.mcp_oauth``), over real HTTP.

The person is a ``User`` of the test: its login "opens" the authorization URL (the
authorization server approves at once and redirects) and answers with the redirect;
its questions get scripted answers. The terminal's own user is tested with a browser
that follows the redirect to its loopback callback server.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp")

from harnessc.runtime.mcp.client import ServerConnection  # noqa: E402
from harnessc.runtime.mcp.config import McpOAuth, McpServerConfig  # noqa: E402
from harnessc.runtime.mcp.tokens import TokenFile, token_folder  # noqa: E402
from harnessc.runtime.mcp.user import (  # noqa: E402
    ElicitationAnswer,
    ElicitationRequest,
    HeadlessUser,
    LoginAnswer,
    LoginRequest,
    McpUser,
)
from harnessc.runtime.mcp.user_bridge import UserBridge  # noqa: E402
from harnessc.testing.mcp_oauth import OAuthMcpServer  # noqa: E402


class User:
    """Logs in by following the authorization URL; answers questions from a script."""

    def __init__(self, answers: list[ElicitationAnswer] | None = None) -> None:
        self.logins: list[LoginRequest] = []
        self.questions: list[ElicitationRequest] = []
        self.answers = list(answers or [])

    async def login(self, request: LoginRequest) -> LoginAnswer:
        self.logins.append(request)
        async with httpx.AsyncClient() as http:
            response = await http.get(request.url)
        assert response.status_code == 302, response.text
        return LoginAnswer(response.headers["location"])

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        self.questions.append(request)
        return self.answers.pop(0)


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The per-user data folder of the test (the token files go there)."""
    home = tmp_path / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


@pytest.fixture
def server() -> Iterator[OAuthMcpServer]:
    with OAuthMcpServer(client_credentials={"robot": "robot-secret-5151"}) as running:
        yield running


def connect(
    url: str,
    user: McpUser,
    tmp_path: Path,
    *,
    auth: McpOAuth | bool | None = None,
    headers: dict[str, str] | None = None,
    protocol_version: str = "auto",
    roots: list[str] | None = None,
) -> ServerConnection:
    config = McpServerConfig(
        name="notes",
        url=url,
        auth=auth,
        headers=headers or {},
        protocol_version=protocol_version,
        timeout_s=15,
    )
    config.validate()
    return ServerConnection(
        config,
        environ=os.environ,
        log_dir=tmp_path,
        user=UserBridge(user),
        roots=(lambda: roots) if roots is not None else None,
    )


def texts(outcome: Any) -> str:
    assert outcome.error is None, outcome.error
    return " ".join(block.text for block in outcome.result.content)


async def calls(connection: ServerConnection, *names: str) -> list[Any]:
    out = []
    for name in names:
        out.append(await connection.call(name, {}, 15, call_id=f"call-{name}"))
    return out


# -- a refused request says why --------------------------------------------------------


def test_a_401_is_reported_with_its_status_and_www_authenticate(
    server: OAuthMcpServer, tmp_path: Path
) -> None:
    """An Authorization header of the spec's own that the server refuses: the start-up
    error names the HTTP status and the server's WWW-Authenticate (it was "Server
    returned an error response")."""
    connection = connect(
        server.url, HeadlessUser(), tmp_path, headers={"Authorization": "Bearer not-a-token"}
    )
    with pytest.raises(Exception) as failed:
        asyncio.run(connection.start())
    message = str(failed.value)
    assert "HTTP 401 Unauthorized" in message, message
    assert 'WWW-Authenticate: Bearer error="invalid_token"' in message
    assert (
        f'resource_metadata="{server.origin}/.well-known/oauth-protected-resource/mcp"' in message
    )
    assert "Server returned an error response" not in message


def test_no_one_to_log_in_says_what_to_do_and_asks_no_one(
    server: OAuthMcpServer, tmp_path: Path
) -> None:
    """A server that needs a login, in a run with no one to ask: the start-up fails with
    what to do; nothing was registered twice, no token was issued."""
    connection = connect(server.url, HeadlessUser(), tmp_path)
    with pytest.raises(Exception) as failed:
        asyncio.run(connection.start())
    message = str(failed.value)
    assert "mcp server 'notes' needs a login (first use: no token yet)" in message, message
    assert "run the agent once on a terminal to log in" in message
    assert server.state.grants == []
    assert server.state.registrations == 1  # the login was asked for once, not per request


# -- the login ---------------------------------------------------------------------------


@pytest.mark.parametrize("revision", ["auto", "2025-11-25"])
def test_discovery_registration_pkce_and_a_kept_token(
    server: OAuthMcpServer, tmp_path: Path, data_home: Path, revision: str
) -> None:
    """First use: protected resource metadata found from the 401, the authorization
    server's metadata, dynamic registration, the login with PKCE (S256) and the resource
    indicator; the token is kept per user (0600 in a 0700 folder) and a new connection
    (a later run) uses it without a login."""
    user = User()

    async def first() -> list[Any]:
        connection = connect(server.url, user, tmp_path, protocol_version=revision)
        await connection.start()
        try:
            return await calls(connection, "whoami")
        finally:
            await connection.close()

    (whoami,) = asyncio.run(first())
    client_id = next(iter(c for c in server.state.clients if c.startswith("client-")))
    assert texts(whoami) == f"{client_id} mcp"
    assert [login.server for login in user.logins] == ["notes"]
    assert user.logins[0].reason == "first use: no token yet"
    assert user.logins[0].redirect_uri.startswith("http://localhost:")
    (authorization,) = server.state.authorizations
    assert authorization["code_challenge_method"] == "S256"
    assert authorization["resource"] == server.url
    assert authorization["redirect_uri"] == user.logins[0].redirect_uri
    (token_request,) = server.state.token_requests
    assert token_request["grant_type"] == "authorization_code"
    assert len(token_request["code_verifier"]) >= 43
    assert token_request["resource"] == server.url

    folder = token_folder()
    assert folder == data_home / "harnessc" / "mcp-auth"
    (file,) = list(folder.glob("*.json"))
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    stored = json.loads(file.read_text())
    assert stored["tokens"]["access_token"] == server.state.grants[0].access_token

    async def later() -> list[Any]:
        connection = connect(server.url, user, tmp_path, protocol_version=revision)
        await connection.start()
        try:
            return await calls(connection, "whoami")
        finally:
            await connection.close()

    (again,) = asyncio.run(later())
    assert texts(again) == f"{client_id} mcp"
    assert len(user.logins) == 1 and server.state.registrations == 1


def test_a_token_file_others_may_read_is_not_used(server: OAuthMcpServer, tmp_path: Path) -> None:
    user = User()
    notes: list[str] = []

    async def run() -> None:
        connection = connect(server.url, user, tmp_path)
        connection.problem = notes.append
        await connection.start()
        await connection.close()

    asyncio.run(run())
    (file,) = list(token_folder().glob("*.json"))
    os.chmod(file, 0o644)
    asyncio.run(run())
    assert len(user.logins) == 2  # the readable file was not used: a new login
    assert any("other users may read it" in note for note in notes)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600  # the new login wrote it privately


def test_an_expired_token_is_refreshed_before_it_is_sent_even_after_a_restart(
    server: OAuthMcpServer, tmp_path: Path
) -> None:
    server.state.lifetime_s = 1
    user = User()

    async def run() -> list[Any]:
        connection = connect(server.url, user, tmp_path)
        await connection.start()
        try:
            await asyncio.sleep(1.5)  # the access token expires
            return await calls(connection, "whoami")
        finally:
            await connection.close()

    (first,) = asyncio.run(run())
    assert first.error is None
    assert server.state.count("refresh_token") == 1
    time.sleep(1.5)  # the stored token expires
    (second,) = asyncio.run(run())  # a later run reads the token and its expiry back
    assert second.error is None
    assert server.state.count("refresh_token") == 3  # at its start-up, then before the call
    assert len(user.logins) == 1
    refused = [r for r in server.state.token_requests if r["grant_type"] == "refresh_token"]
    assert all(r["resource"] == server.url for r in refused)


def test_a_revoked_token_is_refreshed_then_a_new_login_and_never_disables_the_server(
    server: OAuthMcpServer, tmp_path: Path
) -> None:
    """A token revoked before its expiry: the next call refreshes it (no login); with
    the refresh token revoked too, the next call asks for a login. With no one to ask,
    that call fails saying so, and the connection stays: the call after it, with
    someone to ask, logs in and goes through."""
    user = User()
    bridge = UserBridge(user)

    async def run() -> list[Any]:
        connection = connect(server.url, user, tmp_path)
        connection.user = bridge
        await connection.start()
        try:
            out = await calls(connection, "whoami")
            server.state.revoke_access()
            out += await calls(connection, "whoami")
            server.state.revoke_all()
            bridge.user = HeadlessUser()
            out += await calls(connection, "whoami")
            bridge.user = user
            out += await calls(connection, "whoami")
            assert connection.alive
            return out
        finally:
            await connection.close()

    fresh, refreshed, headless, relogged = asyncio.run(run())
    assert fresh.error is None and refreshed.error is None
    assert server.state.count("refresh_token") == 2  # the revoked token's, then the refused one
    assert headless.error is not None
    assert "needs a login (its token was refused (expired or revoked)" in headless.error
    assert "run the agent once on a terminal" in headless.error
    assert relogged.error is None
    assert len(user.logins) == 2
    assert user.logins[1].call_id == "call-whoami"


def test_a_step_up_asks_for_the_union_of_scopes(server: OAuthMcpServer, tmp_path: Path) -> None:
    user = User()

    async def run() -> list[Any]:
        connection = connect(server.url, user, tmp_path)
        await connection.start()
        try:
            return await calls(connection, "admin", "whoami")
        finally:
            await connection.close()

    admin, whoami = asyncio.run(run())
    assert texts(admin) == "admin ok (mcp admin)"
    assert texts(whoami).endswith("mcp admin")
    assert user.logins[1].reason == "the server asks for more scopes (step-up)"
    assert user.logins[1].scopes == ("mcp", "admin")
    assert user.logins[1].call_id == "call-admin"


def test_client_credentials_need_no_person(server: OAuthMcpServer, tmp_path: Path) -> None:
    class NoOne(HeadlessUser):
        async def login(self, request: LoginRequest) -> LoginAnswer:
            raise AssertionError("a login was asked for")

    auth = McpOAuth(
        grant="client_credentials", client_id="robot", client_secret="robot-secret-5151"
    )

    async def run() -> list[Any]:
        connection = connect(server.url, NoOne(), tmp_path, auth=auth)
        await connection.start()
        try:
            return await calls(connection, "whoami")
        finally:
            await connection.close()

    (whoami,) = asyncio.run(run())
    assert texts(whoami) == "robot mcp"
    (request,) = server.state.token_requests
    assert request["grant_type"] == "client_credentials" and request["resource"] == server.url
    assert "client_secret" not in request  # sent as HTTP Basic
    bad = McpOAuth(grant="client_credentials", client_id="robot", client_secret="wrong-secret")
    TokenFile(server.url, grant="client_credentials", client_id="robot").forget()
    connection = connect(server.url, NoOne(), tmp_path, auth=bad)
    with pytest.raises(Exception, match=r"the OAuth login failed: Token exchange failed \(401\)"):
        asyncio.run(connection.start())


def test_a_pre_registered_client_logs_in_without_registering(tmp_path: Path) -> None:
    with OAuthMcpServer(
        registration=False, client_credentials={"desk-app": "desk-secret-7777"}
    ) as server:
        user = User()
        auth = McpOAuth(client_id="desk-app", client_secret="desk-secret-7777", callback_port=8976)

        async def run() -> list[Any]:
            connection = connect(server.url, user, tmp_path, auth=auth)
            await connection.start()
            try:
                return await calls(connection, "whoami")
            finally:
                await connection.close()

        (whoami,) = asyncio.run(run())
    assert texts(whoami) == "desk-app mcp"
    assert server.state.registrations == 0
    assert user.logins[0].redirect_uri == "http://localhost:8976/callback"
    assert server.state.token_requests[0]["grant_type"] == "authorization_code"


# -- questions ---------------------------------------------------------------------------


@pytest.mark.parametrize("revision", ["auto", "2025-11-25"])
def test_elicitation_accept_decline_cancel(
    server: OAuthMcpServer, tmp_path: Path, revision: str
) -> None:
    """The server's form reaches the user with its schema and the call it belongs to;
    an accepted answer gets the schema's defaults for what it leaves out; decline and
    cancel reach the server as such."""
    user = User(
        [
            ElicitationAnswer("accept", {"name": "Rex", "kind": "dog"}),
            ElicitationAnswer("decline"),
            ElicitationAnswer("cancel"),
        ]
    )

    async def run() -> list[Any]:
        connection = connect(server.url, user, tmp_path, protocol_version=revision)
        await connection.start()
        try:
            return await calls(connection, "ask", "ask", "ask")
        finally:
            await connection.close()

    accepted, declined, cancelled = asyncio.run(run())
    assert texts(accepted) == "pet Rex with 4 legs, a dog"
    assert texts(declined) == "no pet: decline"
    assert texts(cancelled) == "no pet: cancel"
    question = user.questions[0]
    assert (question.server, question.call_id, question.mode) == ("notes", "call-ask", "form")
    assert question.message == "Which pet?"
    assert question.schema is not None and question.schema["required"] == ["name"]


def test_an_answer_that_does_not_fit_the_form_is_not_sent(
    server: OAuthMcpServer, tmp_path: Path
) -> None:
    user = User([ElicitationAnswer("accept", {"name": "Rex", "legs": "four"})])

    async def run() -> list[Any]:
        connection = connect(server.url, user, tmp_path, protocol_version="2025-11-25")
        await connection.start()
        try:
            return await calls(connection, "ask")
        finally:
            await connection.close()

    (outcome,) = asyncio.run(run())
    shown = outcome.error or texts(outcome)
    assert "does not match the requested schema" in shown and "legs" in shown


def test_a_url_question_and_no_one_to_answer_one(server: OAuthMcpServer, tmp_path: Path) -> None:
    user = User([ElicitationAnswer("accept")])

    async def run(asked: McpUser) -> list[Any]:
        connection = connect(server.url, user, tmp_path, protocol_version="2025-11-25")
        await connection.start()
        connection.user = UserBridge(asked)
        try:
            return await calls(connection, "open_page")
        finally:
            await connection.close()

    (opened,) = asyncio.run(run(user))
    assert texts(opened) == "page: accept"
    question = user.questions[0]
    assert (question.mode, question.url) == ("url", f"{server.origin}/connect")
    assert question.message == "Connect your account"
    (headless,) = asyncio.run(run(HeadlessUser()))
    assert headless.error is not None
    assert "asked a question this run has no one to answer: 'Connect your account'" in (
        headless.error
    )


# -- roots, progress, cancellation -------------------------------------------------------


@pytest.mark.parametrize("revision", ["auto", "2025-11-25"])
def test_roots_are_the_folders_offered(
    server: OAuthMcpServer, tmp_path: Path, revision: str
) -> None:
    folder = tmp_path / "work space"
    folder.mkdir()

    async def run() -> list[Any]:
        connection = connect(
            server.url, User(), tmp_path, protocol_version=revision, roots=[str(folder)]
        )
        await connection.start()
        try:
            return await calls(connection, "roots")
        finally:
            await connection.close()

    (outcome,) = asyncio.run(run())
    assert texts(outcome) == folder.resolve().as_uri()


@pytest.mark.parametrize("revision", ["auto", "2025-11-25"])
def test_progress_reaches_the_caller_and_a_cancelled_call_is_cancelled_at_the_server(
    server: OAuthMcpServer, tmp_path: Path, revision: str
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def run() -> None:
        connection = connect(server.url, User(), tmp_path, protocol_version=revision)
        await connection.start()
        try:
            call = asyncio.ensure_future(
                connection.call(
                    "slow", {"steps": 2}, 60, progress=lambda *a: seen.append(a) or None
                )
            )
            for _ in range(200):
                if len(seen) == 2:
                    break
                await asyncio.sleep(0.05)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            for _ in range(200):
                if server.state.cancelled:
                    break
                await asyncio.sleep(0.05)
        finally:
            await connection.close()

    asyncio.run(run())
    assert seen == [(1.0, 2.0, "step 1"), (2.0, 2.0, "step 2")]
    assert server.state.cancelled == ["slow"]


# -- the terminal's own user -------------------------------------------------------------


def test_the_terminal_login_catches_the_redirect_on_its_loopback_server(
    server: OAuthMcpServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TerminalUser prints the URL and "opens" it (here: a browser that follows every
    redirect, to the loopback callback server the user runs on the redirect's port)."""
    from harnessc.runtime.mcp.terminal_user import TerminalUser

    opened: list[str] = []

    def browser(url: str) -> bool:
        opened.append(url)
        httpx.get(url, follow_redirects=True, timeout=10).raise_for_status()
        return True

    async def run() -> list[Any]:
        connection = connect(server.url, TerminalUser(opener=browser, wait_s=20), tmp_path)
        await connection.start()
        try:
            return await calls(connection, "whoami")
        finally:
            await connection.close()

    (whoami,) = asyncio.run(run())
    assert whoami.error is None
    shown = capsys.readouterr().err
    assert "mcp server 'notes' needs a login (first use: no token yet)" in shown
    assert opened[0] in shown
    assert "Login answer received." in shown


# -- through an agent's run ----------------------------------------------------------------


def _agent(
    server: OAuthMcpServer, tmp_path: Path, user: Any, tools: list[str]
) -> tuple[Any, Any, Any]:
    """A harness whose scripted model calls the notes server's ``tools`` one a turn
    (ids c1, c2 ...) and then says "done"; its toolset's user is ``user``. The harness,
    the toolset and the session (a file under ``tmp_path/sessions``)."""
    from harnessc.runtime.agent import AgentHarness
    from harnessc.runtime.core.model_options import Model
    from harnessc.runtime.mcp import McpToolset
    from harnessc.runtime.options.harness_options import AgentHarnessOptions
    from harnessc.runtime.providers.scripted import (
        ScriptedProvider,
        reply_text,
        reply_tool_calls,
    )
    from harnessc.runtime.session import JsonlSessionRepo

    toolset = McpToolset(
        [McpServerConfig(name="notes", url=server.url, timeout_s=15)],
        user=user,
        log_dir=tmp_path / "logs",
    )
    calls = [reply_tool_calls([(f"mcp__notes__{t}", {}, f"c{i}")]) for i, t in enumerate(tools, 1)]
    session = JsonlSessionRepo(tmp_path / "sessions").create(cwd=str(tmp_path))
    options = AgentHarnessOptions(
        session=session,
        models={"m": Model(id="m", api="openai-completions", base_url="http://127.0.0.1:9")},
        model="m",
        extensions=[toolset],
    )
    options.provider = ScriptedProvider([*calls, reply_text("done")])
    return AgentHarness(options), toolset, session


def test_an_agent_run_meets_a_login_and_a_question_and_no_token_is_kept_anywhere(
    server: OAuthMcpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_home: Path
) -> None:
    """An agent whose MCP server needs a login: the run's first tool call meets it (the
    toolset's user logs in), the next asks a question (the same user answers), a long
    call reports progress; a tool that echoes its bearer token back shows it redacted,
    and no token is in the session file, the logs or the events."""
    from harnessc.runtime.core.messages import ToolResultMessage

    monkeypatch.chdir(tmp_path)
    user = User([ElicitationAnswer("accept", {"name": "Tom"})])
    harness, toolset, session = _agent(server, tmp_path, user, ["whoami", "ask", "echo_token"])
    events: list[str] = []
    harness.subscribe(lambda event: events.append(repr(event)))
    try:
        harness.prompt_sync("go")
    finally:
        toolset.close()
    results = {
        m.tool_name: "".join(c.text for c in m.content)
        for m in harness.messages
        if isinstance(m, ToolResultMessage)
    }
    assert results["mcp__notes__whoami"].endswith(" mcp")
    assert results["mcp__notes__ask"] == "pet Tom with 4 legs, a cat"
    assert results["mcp__notes__echo_token"] == "your token is [redacted]"
    assert user.logins[0].call_id is None  # at the start of the run, listing the tools
    assert user.questions[0].call_id == "c2"
    tokens = server.state.tokens()
    assert tokens
    written = "".join(
        p.read_text(errors="replace") for p in (tmp_path / "sessions").rglob("*") if p.is_file()
    )
    written += "".join(
        p.read_text(errors="replace") for p in (tmp_path / "logs").rglob("*") if p.is_file()
    )
    assert "whoami" in written  # the session was written
    for token in tokens:
        assert token not in written
        assert not any(token in event for event in events)
    (file,) = list(token_folder().glob("*.json"))
    assert stat.S_IMODE(file.stat().st_mode) == 0o600


def test_a_terminal_run_prints_the_first_login_at_its_start_and_waits_for_it(
    server: OAuthMcpServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the terminal (no PausingUser) the login met while listing the tools at the
    run's start is asked in place: the URL is printed, the run waits for the browser's
    redirect and goes on with the tools; it never pauses."""
    from harnessc.runtime.core.messages import ToolResultMessage
    from harnessc.runtime.mcp.terminal_user import TerminalUser

    def browser(url: str) -> bool:
        httpx.get(url, follow_redirects=True, timeout=10).raise_for_status()
        return True

    harness, toolset, _ = _agent(
        server, tmp_path, TerminalUser(opener=browser, wait_s=20), ["whoami"]
    )
    try:
        result = harness.prompt_sync("go")
    finally:
        toolset.close()
    assert result.status == "done", result.reason
    shown = capsys.readouterr().err
    assert "mcp server 'notes' needs a login (first use: no token yet)" in shown
    [whoami] = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert not whoami.is_error and "".join(c.text for c in whoami.content).endswith(" mcp")


# -- configuration -------------------------------------------------------------------------


def test_the_oauth_object_of_a_claude_code_mcp_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harnessc.runtime.mcp import McpConfigError, load_mcp_json

    monkeypatch.setenv("DESK_SECRET", "desk-secret-from-env")
    file = tmp_path / ".mcp.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "desk": {
                        "type": "http",
                        "url": "https://desk.example.com/mcp",
                        "oauth": {
                            "clientId": "desk-app",
                            "clientSecret": "${DESK_SECRET}",
                            "callbackPort": 8080,
                            "scopes": "read write",
                        },
                    },
                    "plain": {"type": "http", "url": "https://plain.example.com/mcp"},
                    "keyed": {
                        "url": "https://keyed.example.com/mcp",
                        "headers": {"Authorization": "Bearer abc"},
                    },
                }
            }
        )
    )
    desk, plain, keyed = load_mcp_json(file)
    assert desk.oauth() == McpOAuth(
        client_id="desk-app",
        client_secret="desk-secret-from-env",
        callback_port=8080,
        scopes=["read", "write"],
    )
    assert "desk-secret-from-env" not in repr(desk)
    assert plain.oauth() == McpOAuth()  # a 401 gets the default login, as in Claude Code
    assert keyed.oauth() is None  # its own Authorization header: no login
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "x": {
                        "url": "https://x.example.com/mcp",
                        "oauth": {"authServerMetadataUrl": "https://as.example.com/meta"},
                    }
                }
            }
        )
    )
    with pytest.raises(McpConfigError, match="authServerMetadataUrl is not supported"):
        load_mcp_json(file)


@pytest.mark.parametrize(
    ("auth", "problem"),
    [
        (McpOAuth(grant="password"), "auth.grant 'password' is not one of"),
        (McpOAuth(grant="client_credentials"), "needs a client_id"),
        (McpOAuth(grant="client_credentials", client_id="a"), "needs a client_secret or a"),
        (McpOAuth(client_secret="s"), "client_secret needs the client_id"),
        (McpOAuth(callback_port=0), "callback_port must be a port"),
        (McpOAuth(client_metadata_url="http://x/doc.json"), "must be an https:// URL"),
        (McpOAuth(scopes=["two words"]), "scope names without spaces"),
        (McpOAuth(private_key="k"), "private_key applies only to client_credentials"),
    ],
)
def test_a_bad_oauth_setting_names_the_key(auth: McpOAuth, problem: str) -> None:
    from harnessc.runtime.mcp import McpConfigError

    config = McpServerConfig(name="notes", url="https://x.example.com/mcp", auth=auth)
    with pytest.raises(McpConfigError, match=problem):
        config.validate()
    stdio = McpServerConfig(name="notes", command="x", auth=McpOAuth())
    with pytest.raises(McpConfigError, match="auth applies only to servers with 'url'"):
        stdio.validate()


# -- a login is a pause ----------------------------------------------------------------------


def test_a_login_and_a_question_in_a_call_pause_the_run_and_the_answers_resume_it(
    server: OAuthMcpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run with no person at hand (``PausingUser``): a revoked token whose refresh is
    refused too meets a login in the call, and the run pauses at that call with the
    authorization URL, the server's call left open; a resume without an answer pauses
    again; the redirect as the answer and a resume finish the call. A question in a
    later call pauses the same way. The toolset stays: nothing is disabled."""
    from harnessc.runtime.core.messages import ToolResultMessage
    from harnessc.runtime.mcp import PausingUser

    monkeypatch.chdir(tmp_path)
    first = User()
    harness, toolset, session = _agent(server, tmp_path, first, ["whoami", "ask"])
    pausing = PausingUser()
    try:
        asyncio.run(toolset.start())  # logged in at start-up, by the first user
        assert len(first.logins) == 1
        server.state.revoke_all()
        toolset.user = pausing
        paused = harness.prompt_sync("go")
        assert paused.status == "paused"
        reason = paused.reason
        (request,) = pausing.pending().values()
        assert isinstance(request, LoginRequest)
        assert request.call_id == "c1"
        assert "mcp server 'notes' needs a login" in reason
        assert request.url in reason
        again = harness.resume_sync()  # no answer yet: paused again, same login
        assert (again.status, again.reason) == ("paused", reason)
        with pytest.raises(TypeError, match="waits for a LoginAnswer"):
            pausing.answer("c1", ElicitationAnswer("cancel"))
        pausing.answer("c1", asyncio.run(first.login(request)))
        asked = harness.resume_sync()
        (question,) = pausing.pending().values()
        assert isinstance(question, ElicitationRequest)
        assert question.call_id == "c2"
        assert asked.status == "paused"
        assert "mcp server 'notes' asks:" in asked.reason
        pausing.answer("c2", ElicitationAnswer("accept", {"name": "Rex", "legs": 3}))
        assert harness.resume_sync().status == "done"
    finally:
        toolset.close()
    results = {
        m.tool_call_id: "".join(c.text for c in m.content)
        for m in harness.messages
        if isinstance(m, ToolResultMessage)
    }
    assert results["c1"].endswith(" mcp")
    assert results["c2"] == "pet Rex with 3 legs, a cat"
    assert not pausing.pending()
    assert server.state.count("refresh_token") == 1  # refreshed once, refused, then a login


def test_two_first_logins_while_listing_pause_the_run_one_after_the_other(
    server: OAuthMcpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers with no token, a ``PausingUser``: the run pauses before its model
    request on one server's login (``mcp_login``, its start key, the URL of its own
    reason), then on the other's; answered in turn through the run-control layer, the
    run goes on with both servers' tools."""
    from harnessc.runtime.agent import AgentHarness
    from harnessc.runtime.core.messages import ToolResultMessage
    from harnessc.runtime.core.model_options import Model
    from harnessc.runtime.mcp import McpToolset, PausingUser
    from harnessc.runtime.options.harness_options import AgentHarnessOptions
    from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
    from harnessc.runtime.runs.answers import Answer, check_answer, resume_arguments
    from harnessc.runtime.runs.pauses import pause_of
    from harnessc.runtime.session import JsonlSessionRepo

    monkeypatch.chdir(tmp_path)
    browser = User()
    with OAuthMcpServer() as other:
        toolset = McpToolset(
            [
                McpServerConfig(name="notes", url=server.url, timeout_s=15),
                McpServerConfig(name="desk", url=other.url, timeout_s=15),
            ],
            user=PausingUser(),
            log_dir=tmp_path / "logs",
        )
        provider = ScriptedProvider(
            [
                reply_tool_calls(
                    [("mcp__notes__whoami", {}, "c1"), ("mcp__desk__whoami", {}, "c2")]
                ),
                reply_text("done"),
            ]
        )
        options = AgentHarnessOptions(
            session=JsonlSessionRepo(tmp_path / "sessions").create(cwd=str(tmp_path)),
            models={"m": Model(id="m", api="openai-completions", base_url="http://127.0.0.1:9")},
            model="m",
            extensions=[toolset],
        )
        options.provider = provider
        harness = AgentHarness(options)
        try:
            result = harness.prompt_sync("go")
            servers = []
            while result.status == "paused":
                pause = pause_of(harness, result.reason)
                assert pause is not None and pause.kind == "mcp_login", pause
                assert pause.calls == [] and pause.payload["call_id"].startswith("mcp-start:")
                assert pause.payload["url"] in pause.reason
                servers.append(pause.payload["server"])
                assert not provider.requests, "the model was asked before the logins"
                request = LoginRequest(pause.payload["server"], pause.payload["url"], "")
                answer = Answer(payload={"redirect": asyncio.run(browser.login(request)).redirect})
                check_answer(pause, answer)
                result = harness.resume_sync(**resume_arguments(harness, pause, answer))
            assert result.status == "done", result.reason
            assert sorted(servers) == ["desk", "notes"]
        finally:
            toolset.close()
    results = {
        m.tool_call_id: "".join(c.text for c in m.content)
        for m in harness.messages
        if isinstance(m, ToolResultMessage)
    }
    assert results["c1"].endswith(" mcp") and results["c2"].endswith(" mcp"), results

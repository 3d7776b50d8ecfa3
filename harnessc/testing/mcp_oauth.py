"""An MCP server that needs an OAuth login, with its authorization server, on loopback.

For tests of the MCP client's authorization: ``OAuthMcpServer`` runs, in a thread of
the test process, one HTTP server (uvicorn) on ``127.0.0.1`` holding

- the MCP server, the SDK's own (``MCPServer`` with ``AuthSettings``): it answers a
  request without a valid token with 401 and ``WWW-Authenticate: Bearer ...,
  resource_metadata=...``, and serves its protected resource metadata;
- a small authorization server (the SDK ships the endpoints of one, but its token
  endpoint has no client credentials grant): RFC 8414 metadata, dynamic client
  registration, ``/authorize`` that approves at once (a test's "browser" follows the
  redirect), ``/token`` for the authorization code (PKCE S256 checked), refresh
  (rotated) and client credentials grants, with the ``resource`` indicator recorded;
- a step-up: ``tools/call`` of ``admin`` needs the scope ``admin``, or 403
  ``insufficient_scope``.

The test holds the state (``AuthState``): it can revoke tokens, shorten their life,
count the grants and see every token issued. Tools: ``whoami`` (the client and
scopes of the token), ``ask`` (a form question), ``open_page`` (a URL question),
``slow`` (progress, then waits; a cancelled call is recorded), ``roots`` (the
client's roots), ``echo_token`` (returns the bearer token it got, to prove it never
reaches the session), ``admin`` (needs the step-up).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlencode

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve
from mcp_types import ListRootsResult
from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

__all__ = ["AuthState", "Grant", "OAuthMcpServer", "Pet"]


class Pet(BaseModel):
    """The form of the ``ask`` tool's question."""

    name: str = Field(description="The pet's name")
    legs: int = Field(default=4, description="How many legs")
    kind: str = Field(default="cat", json_schema_extra={"enum": ["cat", "dog", "bird"]})


async def _ask_pet(ctx: Context) -> Elicit[Pet]:
    return Elicit("Which pet?", Pet)


async def _roots_of(ctx: Context) -> ListRoots:
    return ListRoots()


@dataclass
class Grant:
    """A token the authorization server issued."""

    access_token: str
    refresh_token: str | None
    client_id: str
    scopes: list[str]
    expires_at: float
    resource: str | None
    grant_type: str


@dataclass
class AuthState:
    """What the authorization server knows; a test reads and changes it."""

    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    grants: list[Grant] = field(default_factory=list)
    revoked: set[str] = field(default_factory=set)
    lifetime_s: int = 3600
    scopes: list[str] = field(default_factory=lambda: ["mcp"])
    registrations: int = 0
    authorizations: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    roots_seen: list[list[str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, grant_type: str) -> int:
        return sum(1 for r in self.token_requests if r.get("grant_type") == grant_type)

    def revoke_access(self) -> None:
        """Every access token issued so far is refused from now on (refresh tokens stay)."""
        with self.lock:
            self.revoked.update(g.access_token for g in self.grants)

    def revoke_all(self) -> None:
        """Every access and refresh token issued so far is refused."""
        with self.lock:
            for grant in self.grants:
                self.revoked.add(grant.access_token)
                if grant.refresh_token:
                    self.revoked.add(grant.refresh_token)

    def tokens(self) -> list[str]:
        """Every access and refresh token issued (to look for them where they must not be)."""
        out = [g.access_token for g in self.grants]
        out += [g.refresh_token for g in self.grants if g.refresh_token]
        return out

    def valid(self, token: str) -> Grant | None:
        with self.lock:
            if token in self.revoked:
                return None
            for grant in self.grants:
                if grant.access_token == token and grant.expires_at > time.time():
                    return grant
        return None


class OAuthMcpServer:
    """The server of the module doc, started by ``with`` (``url``: the MCP endpoint)."""

    def __init__(
        self,
        *,
        state: AuthState | None = None,
        registration: bool = True,
        client_credentials: dict[str, str] | None = None,
    ) -> None:
        """``registration``: offer dynamic client registration. ``client_credentials``:
        pre-registered clients (id -> secret) that may use the client credentials and
        the authorization code grants."""
        self.state = state or AuthState()
        self.registration = registration
        for client_id, secret in (client_credentials or {}).items():
            self.state.clients[client_id] = {
                "client_id": client_id,
                "client_secret": secret,
                "redirect_uris": [],
                "token_endpoint_auth_method": "client_secret_basic",
                "pre_registered": True,
            }
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.origin = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.origin}/mcp"
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # -- life ------------------------------------------------------------------------

    def __enter__(self) -> OAuthMcpServer:
        import uvicorn

        config = uvicorn.Config(
            self._app(), host="127.0.0.1", port=self.port, log_level="error", lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="oauth-mcp", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the OAuth MCP test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(15)

    # -- the app ---------------------------------------------------------------------

    def _app(self) -> Any:
        from mcp.server.auth.provider import AccessToken
        from starlette.responses import Response

        state = self.state
        origin = self.origin

        class Verifier:
            async def verify_token(self, token: str) -> AccessToken | None:
                grant = state.valid(token)
                if grant is None:
                    return None
                return AccessToken(
                    token=token,
                    client_id=grant.client_id,
                    scopes=grant.scopes,
                    expires_at=int(grant.expires_at),
                    resource=grant.resource,
                )

        app = MCPServer(
            "oauth-notes",
            log_level="ERROR",
            token_verifier=Verifier(),
            auth=AuthSettings(
                issuer_url=origin,  # type: ignore[arg-type]
                resource_server_url=self.url,  # type: ignore[arg-type]
                required_scopes=["mcp"],
                validate_token_resource=False,
            ),
        )

        @app.tool()
        async def whoami() -> str:
            """The client and scopes of the token of this call."""
            token = get_access_token()
            return f"{token.client_id} {' '.join(token.scopes)}" if token else "nobody"

        @app.tool()
        async def echo_token() -> str:
            """Returns the bearer token this call came with."""
            token = get_access_token()
            return f"your token is {token.token}" if token else "no token"

        async def ask_tool(pet: Annotated[ElicitationResult[Pet], Resolve(_ask_pet)]) -> str:
            """Asks the user about a pet (a form question)."""
            data = getattr(pet, "data", None)
            if data is None:
                return f"no pet: {pet.action}"
            return f"pet {data.name} with {data.legs} legs, a {data.kind}"

        app.add_tool(ask_tool, name="ask")

        async def roots_tool(found: Annotated[ListRootsResult, Resolve(_roots_of)]) -> str:
            """The client's roots."""
            uris = [str(r.uri) for r in found.roots]
            state.roots_seen.append(uris)
            return " ".join(uris)

        app.add_tool(roots_tool, name="roots")

        @app.tool()
        async def open_page(ctx: Context) -> str:
            """Asks the user to open a page (a URL question; 2025-11-25 only)."""
            result = await ctx.elicit_url("Connect your account", f"{origin}/connect", "el-1")
            return f"page: {result.action}"

        @app.tool()
        async def slow(ctx: Context, steps: int = 3) -> str:
            """Reports progress, then waits a long time (to be cancelled)."""
            for step in range(steps):
                await ctx.report_progress(step + 1, steps, f"step {step + 1}")
            try:
                await asyncio.sleep(120)
            except BaseException:
                state.cancelled.append("slow")
                raise
            return "slow done"

        @app.tool()
        async def admin() -> str:
            """Needs the scope admin (a step-up)."""
            token = get_access_token()
            return f"admin ok ({' '.join(token.scopes) if token else ''})"

        # -- the authorization server ------------------------------------------------

        def metadata() -> dict[str, Any]:
            out: dict[str, Any] = {
                "issuer": origin,
                "authorization_endpoint": f"{origin}/authorize",
                "token_endpoint": f"{origin}/token",
                "scopes_supported": ["mcp", "admin"],
                "response_types_supported": ["code"],
                "grant_types_supported": [
                    "authorization_code",
                    "refresh_token",
                    "client_credentials",
                ],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": [
                    "none",
                    "client_secret_basic",
                    "client_secret_post",
                ],
            }
            if self.registration:
                out["registration_endpoint"] = f"{origin}/register"
            return out

        @app.custom_route("/.well-known/oauth-authorization-server", methods=["GET"])
        async def as_metadata(request: Request) -> Response:
            return JSONResponse(metadata())

        @app.custom_route("/register", methods=["POST"])
        async def register(request: Request) -> Response:
            body = await request.json()
            client_id = f"client-{secrets.token_hex(4)}"
            method = body.get("token_endpoint_auth_method") or "none"
            client = {
                "client_id": client_id,
                "redirect_uris": body.get("redirect_uris") or [],
                "token_endpoint_auth_method": method,
                "grant_types": body.get("grant_types") or ["authorization_code"],
                "client_name": body.get("client_name"),
            }
            if method != "none":
                client["client_secret"] = secrets.token_urlsafe(24)
            state.clients[client_id] = client
            state.registrations += 1
            return JSONResponse(client, status_code=201)

        @app.custom_route("/authorize", methods=["GET"])
        async def authorize(request: Request) -> Response:
            q = dict(request.query_params)
            state.authorizations.append(q)
            client = state.clients.get(q.get("client_id", ""))
            redirect = q.get("redirect_uri", "")
            if client is None:
                return JSONResponse({"error": "unknown client"}, status_code=400)
            if not client.get("pre_registered") and redirect not in client["redirect_uris"]:
                return JSONResponse({"error": "redirect_uri not registered"}, status_code=400)
            if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
                return JSONResponse({"error": "PKCE S256 required"}, status_code=400)
            code = secrets.token_urlsafe(16)
            state.codes[code] = {
                "client_id": client["client_id"],
                "challenge": q["code_challenge"],
                "redirect_uri": redirect,
                "scopes": (q.get("scope") or "mcp").split(),
                "resource": q.get("resource"),
            }
            query = urlencode({"code": code, "state": q.get("state", ""), "iss": origin})
            return RedirectResponse(f"{redirect}?{query}", status_code=302)

        def authenticated(request: Request, form: dict[str, str]) -> dict[str, Any] | None:
            header = request.headers.get("authorization", "")
            client_id, secret = form.get("client_id"), form.get("client_secret")
            if header.startswith("Basic "):
                raw = base64.b64decode(header[6:]).decode()
                client_id, _, secret = raw.partition(":")
            client = state.clients.get(client_id or "")
            if client is None:
                return None
            expected = client.get("client_secret")
            if expected is not None and secret != expected:
                return None
            return client

        def issue(client: dict[str, Any], scopes: list[str], resource: str | None, kind: str):
            grant = Grant(
                access_token=f"at-{secrets.token_urlsafe(24)}",
                refresh_token=None
                if kind == "client_credentials"
                else f"rt-{secrets.token_urlsafe(24)}",
                client_id=client["client_id"],
                scopes=scopes,
                expires_at=time.time() + state.lifetime_s,
                resource=resource,
                grant_type=kind,
            )
            with state.lock:
                state.grants.append(grant)
            body: dict[str, Any] = {
                "access_token": grant.access_token,
                "token_type": "Bearer",
                "expires_in": state.lifetime_s,
                "scope": " ".join(scopes),
            }
            if grant.refresh_token:
                body["refresh_token"] = grant.refresh_token
            return JSONResponse(body)

        def refused(error: str, status: int = 400) -> Response:
            return JSONResponse({"error": error}, status_code=status)

        @app.custom_route("/token", methods=["POST"])
        async def token(request: Request) -> Response:
            form = {k: str(v) for k, v in (await request.form()).items()}
            state.token_requests.append(form)
            client = authenticated(request, form)
            if client is None:
                return refused("invalid_client", 401)
            kind = form.get("grant_type")
            if kind == "authorization_code":
                code = state.codes.pop(form.get("code", ""), None)
                if code is None or code["client_id"] != client["client_id"]:
                    return refused("invalid_grant")
                verifier = form.get("code_verifier", "")
                digest = hashlib.sha256(verifier.encode()).digest()
                challenge = base64.urlsafe_b64encode(digest).decode().rstrip("=")
                if (
                    challenge != code["challenge"]
                    or form.get("redirect_uri") != code["redirect_uri"]
                ):
                    return refused("invalid_grant")
                return issue(client, code["scopes"], form.get("resource"), kind)
            if kind == "refresh_token":
                old = form.get("refresh_token", "")
                with state.lock:
                    found = [g for g in state.grants if g.refresh_token == old]
                if not found or old in state.revoked or found[0].client_id != client["client_id"]:
                    return refused("invalid_grant")
                state.revoked.add(old)  # rotated
                return issue(client, found[0].scopes, form.get("resource"), kind)
            if kind == "client_credentials":
                if client.get("client_secret") is None:
                    return refused("unauthorized_client")
                scopes = (form.get("scope") or "mcp").split()
                return issue(client, scopes, form.get("resource"), kind)
            return refused("unsupported_grant_type")

        @app.custom_route("/connect", methods=["GET"])
        async def connect(request: Request) -> Response:
            return Response("connected")

        inner = app.streamable_http_app()
        return _StepUp(inner, state, f"{origin}/.well-known/oauth-protected-resource/mcp")


class _StepUp:
    """``tools/call`` of ``admin`` with a token without the scope ``admin``: 403
    ``insufficient_scope`` naming the scopes to ask for."""

    def __init__(self, app: Any, state: AuthState, metadata_url: str) -> None:
        self.app = app
        self.state = state
        self.metadata_url = metadata_url

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/mcp":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        with contextlib.suppress(ValueError, AttributeError):
            data = json.loads(body)
            if data.get("method") == "tools/call" and data["params"].get("name") == "admin":
                headers = dict(scope["headers"])
                token = headers.get(b"authorization", b"").decode()[7:]
                grant = self.state.valid(token)
                if grant is not None and "admin" not in grant.scopes:
                    challenge = (
                        'Bearer error="insufficient_scope", scope="mcp admin", '
                        f'resource_metadata="{self.metadata_url}"'
                    )
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 403,
                            "headers": [
                                (b"content-type", b"application/json"),
                                (b"www-authenticate", challenge.encode()),
                            ],
                        }
                    )
                    await send(
                        {"type": "http.response.body", "body": b'{"error":"insufficient_scope"}'}
                    )
                    return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

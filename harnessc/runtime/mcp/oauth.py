"""The OAuth login of an HTTP MCP server: the SDK's providers, with harnessc's seams.

The MCP authorization flow itself is the SDK's (``mcp.client.auth``): protected
resource metadata found from ``WWW-Authenticate`` (or the well-known URLs), then the
authorization server's metadata (RFC 8414 / OpenID), dynamic client registration or a
client ID metadata document, PKCE, the ``resource`` indicator (RFC 8707), the
issuer checks (RFC 9207), refresh, and the scope step-up of a 403
``insufficient_scope``. It is the well-kept implementation the MCP project tests
against its own conformance suite, so harnessc uses it rather than its own.

What harnessc adds (``_Seams``, mixed into each SDK provider):

- the tokens live in a ``TokenFile`` (per user, 0600); a token read back after a
  restart keeps its expiry, so it is refreshed before it is sent;
- a token refused before its expiry (revoked) is refreshed first, and only when that
  fails is a new login asked for (the SDK goes straight to a login);
- the login is ``McpUser.login`` through the connection's ``UserBridge``: the user gets
  a ``LoginRequest`` (the URL, the server, the tool call) and answers with the
  redirect; a refused or impossible login is not asked for twice in one operation;
- a failing flow never breaks the connection: the failure is recorded on the
  operation (``calls.CallState``) and the request goes out once more as it was, so the
  server's own 401 answers it and the operation fails with the recorded reason;
- scopes of the spec are asked for on top of what the server's challenge names, and a
  pre-registered client with a secret uses a method the authorization server lists.
"""

from __future__ import annotations

import logging
import socket
import warnings
from collections.abc import AsyncGenerator, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.utils import union_scopes
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from pydantic import ValidationError

from harnessc.runtime.mcp.calls import UserWaits, current
from harnessc.runtime.mcp.config import McpOAuth, McpServerConfig
from harnessc.runtime.mcp.results import redact_secrets
from harnessc.runtime.mcp.tokens import TokenFile
from harnessc.runtime.mcp.user import LoginFailed, LoginRequest, UserNeeded
from harnessc.runtime.mcp.user_bridge import UserBridge

__all__ = ["LoginFailed", "build_auth", "parse_redirect"]

# The SDK logs its flow's failures with their text; harnessc reports them itself (and a
# token must never reach a log), so its auth loggers write nowhere.
_auth_log = logging.getLogger("mcp.client.auth")
_auth_log.addHandler(logging.NullHandler())
_auth_log.propagate = False

_CLIENT_NAME = "harnessc"


def parse_redirect(redirect: str) -> AuthorizationCodeResult:
    """The code, state and issuer of the redirect the browser was sent to (the whole URL,
    or its query string); LoginFailed for an error answer or one with no code."""
    text = redirect.strip()
    query = urlsplit(text).query if "://" in text else text.lstrip("?")
    params = {k: v[0] for k, v in parse_qs(query).items() if v}
    if "error" in params:
        description = params.get("error_description")
        raise LoginFailed(
            f"the authorization server refused the login: {params['error']}"
            + (f" ({description})" if description else "")
        )
    code = params.get("code")
    if not code:
        raise LoginFailed("the answer to the login has no authorization code (code=...)")
    return AuthorizationCodeResult(code=code, state=params.get("state"), iss=params.get("iss"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _redirect_uri(oauth: McpOAuth, tokens: TokenFile) -> str:
    """``http://localhost:PORT/callback``: the spec's port, else the one of the stored
    registration (a registered redirect must not change), else a free one."""
    if oauth.callback_port is not None:
        return f"http://localhost:{oauth.callback_port}/callback"
    client = tokens.read().get("client")
    uris = client.get("redirect_uris") if isinstance(client, dict) else None
    if isinstance(uris, list) and uris and isinstance(uris[0], str):
        parts = urlsplit(uris[0])
        if parts.hostname in ("localhost", "127.0.0.1", "::1") and parts.port:
            return uris[0]
    return f"http://localhost:{_free_port()}/callback"


class _Seams:
    """harnessc's additions to an SDK OAuth provider (see the module doc)."""

    context: Any
    _initialized: bool
    _hx_server: str
    _hx_tokens: TokenFile
    _hx_scope: str | None
    _hx_pick: bool  # choose the token endpoint's auth method from the server's metadata
    _hx_challenge: httpx2.Response | None
    _hx_had_token: bool

    def _hx_init(self, server: str, tokens: TokenFile, scope: str | None, pick: bool) -> None:
        self._hx_server = server
        self._hx_tokens = tokens
        self._hx_scope = scope
        self._hx_pick = pick
        self._hx_challenge = None
        self._hx_had_token = False

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]
        if self.context.current_tokens is not None and self._hx_tokens.expires_at is not None:
            self.context.token_expiry_time = self._hx_tokens.expires_at

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        ok: bool = await super()._handle_refresh_response(response)  # type: ignore[misc]
        if not ok:  # a refused refresh token is not tried again from the file
            self._hx_tokens.drop_tokens()
        return ok

    def _hx_pick_method(self) -> None:
        info = self.context.client_info
        metadata = self.context.oauth_metadata
        if not self._hx_pick or info is None or not info.client_secret or metadata is None:
            return
        supported = metadata.token_endpoint_auth_methods_supported
        if not supported or info.token_endpoint_auth_method in supported:
            return
        for method in ("client_secret_basic", "client_secret_post"):
            if method in supported:
                info.token_endpoint_auth_method = method
                return

    async def _perform_authorization(self) -> httpx2.Request:
        if self._hx_scope:
            self.context.client_metadata.scope = union_scopes(
                self._hx_scope, self.context.client_metadata.scope
            )
        self._hx_pick_method()
        request: httpx2.Request = await super()._perform_authorization()  # type: ignore[misc]
        return request

    async def _refresh_token(self) -> httpx2.Request:
        self._hx_pick_method()
        request: httpx2.Request = await super()._refresh_token()  # type: ignore[misc]
        return request

    def _hx_refresh_first(self, sent: str | None) -> bool:
        """The token ``sent`` was refused (revoked, or expired on the way): refresh it
        before asking for a login."""
        tokens = self.context.current_tokens
        return bool(
            sent
            and self._initialized
            and self.context.can_refresh_token()
            and tokens is not None
            and sent == f"Bearer {tokens.access_token}"
        )

    def _hx_reason(self) -> str:
        challenge = self._hx_challenge
        if challenge is not None and challenge.status_code == 403:
            return "the server asks for more scopes (step-up)"
        if self._hx_had_token:
            return "its token was refused (expired or revoked) and could not be refreshed"
        return "first use: no token yet"

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        state = current()
        inner = super().async_auth_flow  # type: ignore[misc]
        flow = inner(request)
        refreshed = False
        first = True
        try:
            outgoing = await flow.__anext__()
            while True:
                sent = request.headers.get("authorization") if outgoing is request else None
                if outgoing is request and first:
                    first = False
                    self._hx_had_token = self.context.current_tokens is not None
                response = yield outgoing
                if outgoing is request:
                    status = response.status_code
                    self._hx_challenge = response if status in (401, 403) else None
                    if status == 401 and not refreshed and self._hx_refresh_first(sent):
                        refreshed = True
                        await flow.aclose()
                        self.context.token_expiry_time = 1.0  # expired: the SDK refreshes it
                        flow = inner(request)
                        outgoing = await flow.__anext__()
                        continue
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except Exception as exc:
            message = _describe(self._hx_server, exc)
            if state is not None:
                state.auth_failure = message
                state.login_failed = True
        finally:
            await flow.aclose()
        # the server answers the request as it is (its 401); the operation fails with
        # the recorded reason and the connection stays usable
        yield request


def _describe(server: str, exc: BaseException) -> str:
    where = f"mcp server {server!r}"
    if isinstance(exc, UserNeeded | LoginFailed):
        text = str(exc)
        return text if text.startswith("mcp server") else f"{where}: {text}"
    if isinstance(exc, OAuthFlowError):
        text = f"{where}: the OAuth login failed: {exc}"
    elif isinstance(exc, httpx2.HTTPError):
        text = f"{where}: the OAuth login could not reach its server: {type(exc).__name__}: {exc}"
    elif isinstance(exc, ValidationError):
        errors = exc.errors()
        loc = ".".join(str(p) for p in errors[0]["loc"]) if errors else ""
        msg = errors[0]["msg"] if errors else "invalid"
        text = (
            f"{where}: the OAuth login failed: a metadata or token answer is not valid "
            f"({loc}: {msg})"
        )
    else:
        text = f"{where}: the OAuth login failed: {type(exc).__name__}: {exc}"
    return str(redact_secrets(text))


class _AuthorizationCode(_Seams, OAuthClientProvider):
    pass


class _ClientCredentials(_Seams, ClientCredentialsOAuthProvider):
    pass


class _PrivateKeyJWT(_Seams, PrivateKeyJWTOAuthProvider):
    pass


def build_auth(
    config: McpServerConfig,
    oauth: McpOAuth,
    *,
    bridge: UserBridge,
    waits: UserWaits,
    problem: Callable[[str], None] | None = None,
) -> httpx2.Auth:
    """The ``httpx2.Auth`` of ``config``'s requests (see the module doc)."""
    assert config.url is not None
    tokens = TokenFile(config.url, grant=oauth.grant, client_id=oauth.client_id, problem=problem)
    scope = oauth.scope
    method: Any = oauth.token_endpoint_auth_method
    provider: _Seams
    with warnings.catch_warnings():  # no issuer configured: the SDK warns on stderr
        warnings.simplefilter("ignore")
        if oauth.grant == "client_credentials":
            assert oauth.client_id is not None
            if oauth.private_key:
                signer = SignedJWTParameters(
                    issuer=oauth.client_id,
                    subject=oauth.client_id,
                    signing_key=oauth.private_key,
                    signing_algorithm=oauth.signing_algorithm or "RS256",
                )
                provider = _PrivateKeyJWT(
                    config.url,
                    tokens,
                    oauth.client_id,
                    signer.create_assertion_provider(),
                    scope=scope,
                    issuer=oauth.issuer,
                )
            else:
                provider = _ClientCredentials(
                    config.url,
                    tokens,
                    oauth.client_id,
                    oauth.client_secret or "",
                    token_endpoint_auth_method=method or "client_secret_basic",
                    scope=scope,
                    issuer=oauth.issuer,
                )
            provider._hx_init(config.name, tokens, scope, pick=method is None)
            return provider  # type: ignore[return-value]
    redirect = _redirect_uri(oauth, tokens)
    metadata = OAuthClientMetadata(
        redirect_uris=[redirect],  # type: ignore[list-item]
        client_name=_CLIENT_NAME,
        grant_types=["authorization_code", "refresh_token"],
        scope=scope,
    )
    if oauth.client_id is not None:
        tokens.pin_client(
            OAuthClientInformationFull(
                client_id=oauth.client_id,
                client_secret=oauth.client_secret,
                redirect_uris=[redirect],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method=method
                or ("client_secret_basic" if oauth.client_secret else "none"),
            )
        )
    pending: dict[str, str] = {}

    async def redirect_handler(url: str) -> None:
        pending["url"] = url

    async def callback_handler() -> AuthorizationCodeResult:
        state = current()
        if state is not None and state.login_failed:
            raise LoginFailed(state.auth_failure or "the login was not made")
        request = LoginRequest(
            server=config.name,
            url=pending.pop("url"),
            redirect_uri=redirect,
            call_id=state.call_id if state is not None else None,
            reason=auth_provider._hx_reason(),
            scopes=tuple((auth_provider.context.client_metadata.scope or "").split()),
        )
        answer = await bridge.login(request, waits)
        return parse_redirect(answer.redirect)

    auth_provider = _AuthorizationCode(
        config.url,
        metadata,
        tokens,
        redirect_handler,
        callback_handler,
        client_metadata_url=oauth.client_metadata_url,
    )
    auth_provider._hx_init(
        config.name, tokens, scope, pick=oauth.client_id is not None and method is None
    )
    return auth_provider

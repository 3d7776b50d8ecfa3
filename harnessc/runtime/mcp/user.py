"""What an MCP server may need of the person running the agent: a login, an answer.

This is the seam between the MCP client and whoever can act for the user (the door the
run came through). When a server needs authorization (first use, a refused or expired
token that no refresh could replace, a scope step-up), the client hands a
``LoginRequest`` to ``McpUser.login``; when a server asks the user a question
(elicitation), an ``ElicitationRequest`` to ``McpUser.elicit``. Each returns the
answer, or raises ``UserNeeded`` when nobody can answer here: the call then fails with
that message and the connection stays up (the next call asks again).

Both methods are awaited on the agent's event loop (the loop the tool call or the
start-up came from), never on the MCP loop, so an implementation may use the loop's
objects freely; while one waits, the call's own time limit is stopped.

Implementations: ``HeadlessUser`` (nobody to ask: every request raises ``UserNeeded``
saying what to do), ``TerminalUser`` (``terminal_user.py``: prints the URL, opens a
browser, catches the redirect on a loopback server, asks questions on the terminal).
``default_user()`` picks one of them: the terminal when stdin and stderr are both one.
A door replaces it by setting ``McpToolset.user``; a run-control layer that turns a
login into a pause implements ``McpUser`` with methods that pause the run and return
the caller's answer when it resumes.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from msgspec import Struct
from msgspec.structs import force_setattr

__all__ = [
    "ElicitationAnswer",
    "ElicitationRequest",
    "HeadlessUser",
    "LoginAnswer",
    "LoginRequest",
    "McpUser",
    "LoginFailed",
    "UserNeeded",
]


class LoginRequest(Struct, frozen=True):
    """A server needs the user to authorize harnessc at ``url`` (in a browser).

    ``redirect_uri``: where the authorization server sends the browser back (the answer
    is that full URL, with its ``code`` and ``state``). ``call_id``: the tool call that
    met it (None at start-up or while listing). ``reason``: why now, in words (first
    use, a refused token, a step-up to more scopes). ``scopes``: what is asked for.
    """

    server: str
    url: str
    redirect_uri: str
    call_id: str | None = None
    reason: str = ""
    scopes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        force_setattr(self, "scopes", tuple(self.scopes))


class LoginAnswer(Struct, frozen=True):
    """The redirect the browser was sent to (``http://127.0.0.1:PORT/callback?code=...
    &state=...``, as received, or its query string alone)."""

    redirect: str


class ElicitationRequest(Struct, frozen=True):
    """A server asks the user something.

    ``mode`` "form": ``message`` and ``schema`` (flat JSON Schema of the answer's
    fields); "url": ``message`` and ``url``, a page the user should open (the server
    learns the outcome there; the answer only says whether the user agreed).
    """

    server: str
    call_id: str | None
    mode: Literal["form", "url"]
    message: str
    schema: dict[str, Any] | None = None
    url: str | None = None
    elicitation_id: str | None = None


class ElicitationAnswer(Struct, frozen=True):
    """``accept`` (with ``content`` for a form: missing fields take the schema's
    defaults), ``decline`` (an explicit no) or ``cancel`` (dismissed)."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.action not in ("accept", "decline", "cancel"):
            raise ValueError(f"elicitation answer {self.action!r}: accept, decline or cancel")


class LoginFailed(Exception):
    """The login was made but did not give a code (refused, or a wrong answer)."""


class UserNeeded(Exception):
    """Nobody here can answer ``request``; the message says what to do instead."""

    def __init__(self, message: str, request: LoginRequest | ElicitationRequest) -> None:
        super().__init__(message)
        self.request = request


@runtime_checkable
class McpUser(Protocol):
    """Who answers a server's login and questions (see the module's description)."""

    async def login(self, request: LoginRequest) -> LoginAnswer: ...

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer: ...


class HeadlessUser:
    """No one to ask (a served or background run): every request fails, saying how to
    get past it. A login made once on a terminal is kept for later runs."""

    async def login(self, request: LoginRequest) -> LoginAnswer:
        raise UserNeeded(
            f"mcp server {request.server!r} needs a login ({request.reason or 'no token yet'}) "
            "and this run has no one to ask: run the agent once on a terminal to log in "
            "(the token is kept for later runs), or give the server credentials of its "
            "own (auth: grant: client_credentials)",
            request,
        )

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        raise UserNeeded(
            f"mcp server {request.server!r} asked a question this run has no one to "
            f"answer: {request.message!r}",
            request,
        )

"""The types the MCP client and whoever acts for the user share: the seam between them.

A ``LoginRequest`` (a server needs authorization) and its ``LoginAnswer`` (the redirect
the browser was sent to), an ``ElicitationRequest`` (a server's question) and its
``ElicitationAnswer``, ``UserNeeded`` (nobody here can answer), ``LoginFailed`` (a login
made that gave no code) and the ``McpUser`` protocol. The client (``oauth``,
``user_bridge``) and the users (``user``, ``terminal_user``, ``pausing_user``) import
these from here, never from each other.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from msgspec import Struct
from msgspec.structs import force_setattr

__all__ = [
    "ElicitationAnswer",
    "ElicitationRequest",
    "LoginAnswer",
    "LoginFailed",
    "LoginRequest",
    "McpUser",
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

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

import sys

from harnessc.runtime.mcp.user_types import (
    ElicitationAnswer,
    ElicitationRequest,
    LoginAnswer,
    LoginRequest,
    McpUser,
    UserNeeded,
)

__all__ = [
    "ElicitationAnswer",
    "ElicitationRequest",
    "HeadlessUser",
    "LoginAnswer",
    "LoginRequest",
    "McpUser",
    "UserNeeded",
    "default_user",
]


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


def default_user() -> McpUser:
    """The terminal when stdin and stderr are both one (a person is there), else
    ``HeadlessUser``."""
    try:
        interactive = sys.stdin is not None and sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError, OSError):
        interactive = False
    if not interactive:
        return HeadlessUser()
    from harnessc.runtime.mcp.terminal_user import TerminalUser

    return TerminalUser()

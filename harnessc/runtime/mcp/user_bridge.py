"""How a connection reaches its ``McpUser``: from the MCP loop to the agent's loop.

The SDK calls back (a login in the auth flow, an elicitation request) on the MCP loop.
``UserBridge`` runs the user's method on the agent's loop (the loop of the start-up or
the tool call that is waiting; the toolset sets it; a user with ``runs_anywhere`` runs
where it is asked, on the MCP loop), stops the clocks of the
connection's operations while it waits (``UserWaits``), and cancels the question when
the operation is cancelled. ``fill_answer`` turns a form answer into the content sent
back: the schema's defaults for what the user left out, checked against the schema.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from harnessc.runtime.mcp.calls import UserWaits
from harnessc.runtime.mcp.user import (
    ElicitationAnswer,
    ElicitationRequest,
    HeadlessUser,
    LoginAnswer,
    LoginRequest,
    McpUser,
)

__all__ = ["UserBridge", "default_user", "fill_answer"]

T = TypeVar("T")


class UserBridge:
    """The user of one toolset's connections (``user``: None picks ``default_user()``
    at the first question)."""

    def __init__(self, user: McpUser | None = None) -> None:
        self.user = user
        self.agent_loop: asyncio.AbstractEventLoop | None = None

    def _user(self) -> McpUser:
        if self.user is None:
            self.user = default_user()
        return self.user

    async def login(self, request: LoginRequest, waits: UserWaits) -> LoginAnswer:
        user = self._user()
        return await self._ask(lambda: user.login(request), waits)

    async def elicit(self, request: ElicitationRequest, waits: UserWaits) -> ElicitationAnswer:
        user = self._user()
        return await self._ask(lambda: user.elicit(request), waits)

    async def _ask(self, make: Callable[[], Coroutine[Any, Any, T]], waits: UserWaits) -> T:
        waits.begin()
        try:
            loop = self.agent_loop
            here = asyncio.get_running_loop()
            anywhere = getattr(self.user, "runs_anywhere", False)
            if (
                anywhere
                or loop is None
                or loop is here
                or loop.is_closed()
                or not loop.is_running()
            ):
                return await make()
            future = asyncio.run_coroutine_threadsafe(make(), loop)
            try:
                return await asyncio.wrap_future(future)
            except asyncio.CancelledError:
                future.cancel()
                raise
        finally:
            waits.end()


def fill_answer(schema: dict[str, Any] | None, content: dict[str, Any] | None) -> dict[str, Any]:
    """``content`` with the schema's defaults for the fields it leaves out; ValueError
    naming the first field that does not match the schema."""
    properties = (schema or {}).get("properties") or {}
    out = dict(content or {})
    for name, field in properties.items():
        if name not in out and isinstance(field, dict) and "default" in field:
            out[name] = field["default"]
    for name in (schema or {}).get("required") or ():
        if name not in out:
            raise ValueError(f"the answer has no {name!r}, which the question requires")
    if schema:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import best_match

        error = best_match(Draft202012Validator(schema).iter_errors(out))
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            raise ValueError(f"{where + ': ' if where else ''}{error.message}")
    return out


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

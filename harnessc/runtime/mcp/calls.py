"""One operation of a connection (a start-up, a tool call): what it met, and its clock.

``CallState`` travels in a context variable: the SDK's HTTP transport sends each
message in its sender's context, so the auth flow and the response hook of the
request a tool call sent find the state of that call. They record what the HTTP
layer saw (a 401 and its ``WWW-Authenticate``, why a login failed), which the
connection turns into the call's error text instead of the transport's bare
"Server returned an error response".

``Clock`` is an operation's time limit that stops while a person is asked (a login,
an elicitation): ``UserWaits`` is the connection's count of such waits, shared by its
operations' clocks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import TypeVar

__all__ = ["CURRENT", "CallState", "Clock", "UserWaits", "current"]

T = TypeVar("T")


class CallState:
    """What one operation of a connection met on the way (see the module doc)."""

    __slots__ = (
        "auth_failure",
        "call_id",
        "http_reason",
        "http_status",
        "login_failed",
        "www_authenticate",
    )

    def __init__(self, call_id: str | None = None) -> None:
        self.call_id = call_id
        self.http_status: int | None = None
        self.http_reason = ""
        self.www_authenticate: str | None = None
        self.auth_failure: str | None = None
        self.login_failed = False  # a login was refused once: not asked again here

    def http_error(self) -> str | None:
        """``HTTP 401 Unauthorized (WWW-Authenticate: ...)``, or None."""
        if self.http_status is None:
            return None
        text = f"HTTP {self.http_status}"
        if self.http_reason:
            text += f" {self.http_reason}"
        if self.www_authenticate:
            text += f" (WWW-Authenticate: {self.www_authenticate})"
        return text


CURRENT: ContextVar[CallState | None] = ContextVar("harnessc_mcp_call", default=None)


def current() -> CallState | None:
    return CURRENT.get()


class UserWaits:
    """How many of a connection's operations wait on a person now, and the seconds
    spent waiting so far (a clock subtracts them)."""

    def __init__(self) -> None:
        self._count = 0
        self._since = 0.0
        self._total = 0.0
        self._changed = asyncio.Event()

    @property
    def waiting(self) -> bool:
        return self._count > 0

    def total(self) -> float:
        """Seconds spent waiting on a person, up to now."""
        extra = time.monotonic() - self._since if self._count else 0.0
        return self._total + extra

    def begin(self) -> None:
        if self._count == 0:
            self._since = time.monotonic()
        self._count += 1
        self._notify()

    def end(self) -> None:
        self._count -= 1
        if self._count == 0:
            self._total += time.monotonic() - self._since
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self) -> None:
        await self._changed.wait()


class Clock:
    """``limit_s`` seconds of an operation, not counting the time a person is asked."""

    def __init__(self, limit_s: float, waits: UserWaits) -> None:
        self.limit_s = limit_s
        self.waits = waits
        self._start = time.monotonic()
        self._waited_at_start = waits.total()

    def spent(self) -> float:
        return (time.monotonic() - self._start) - (self.waits.total() - self._waited_at_start)

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``; TimeoutError (and it is cancelled) when the limit passes."""
        task = asyncio.ensure_future(awaitable)
        try:
            while not task.done():
                changed = asyncio.ensure_future(self.waits.changed())
                try:
                    timeout = None if self.waits.waiting else self.limit_s - self.spent()
                    if timeout is not None and timeout <= 0:
                        break
                    await asyncio.wait(
                        {task, changed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    changed.cancel()
        except BaseException:
            task.cancel()
            raise
        if not task.done():
            task.cancel()
            await asyncio.wait({task})  # its end; a cancellation of this task still raises
            raise TimeoutError
        return task.result()

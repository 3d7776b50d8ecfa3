"""A user that pauses the run: a login or a question met in a tool call holds that call.

``PausingUser`` is the ``McpUser`` of a run with no person at hand right now (a served
or background run). When a server needs a login (first use, a refused token no refresh
replaced, a step-up) or asks a question during a tool call, the request is kept, the
toolset holds the call (``HoldCall``: the run pauses, its reason names the server and
the authorization URL or the question) and the server's call stays open, waiting. The
caller answers with ``answer(call_id, LoginAnswer | ElicitationAnswer)`` (the redirect
the browser was sent to, or the question's answer) and resumes the run: the held call
runs again, finds its open call and gets its result. A resume without an answer holds
the call again with the same reason. A run resumed in another process (a durable
worker) meets the login again on a fresh call, with a fresh URL.

A login met while listing tools (no tool call to hold) fails the start of that server,
as ``HeadlessUser`` does; the next call tries again.

Its methods run on the MCP loop itself (``runs_anywhere``), so a request outlives the
event loop of the run that met it (``prompt_sync`` ends its loop when the run pauses).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

from harnessc.runtime.mcp.user import HeadlessUser
from harnessc.runtime.mcp.user_types import (
    ElicitationAnswer,
    ElicitationRequest,
    LoginAnswer,
    LoginRequest,
    UserNeeded,
)

__all__ = ["PausingUser", "pause_reason"]

Request = LoginRequest | ElicitationRequest
Answer = LoginAnswer | ElicitationAnswer


def pause_reason(request: Request) -> str:
    """What the paused run says: who asks, what to open or answer, how to resume."""
    if isinstance(request, LoginRequest):
        why = f" ({request.reason})" if request.reason else ""
        return (
            f"mcp server {request.server!r} needs a login{why}: open {request.url} and "
            "log in, then resume with the address the browser was sent back to "
            f"({request.redirect_uri}?code=...)"
        )
    if request.mode == "url":
        return (
            f"mcp server {request.server!r} asks you to open {request.url}: "
            f"{request.message} (resume with accept, decline or cancel)"
        )
    return (
        f"mcp server {request.server!r} asks: {request.message} "
        "(resume with accept and the form's answer, decline or cancel)"
    )


class PausingUser:
    """Holds the tool call that meets a login or a question until ``answer`` (see the
    module's description). Thread-safe: the toolset asks on the MCP loop, the caller
    answers from anywhere."""

    runs_anywhere = True  # its methods need not run on the agent's loop

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[Request, concurrent.futures.Future[Answer]]] = {}
        self._wanted: dict[str, concurrent.futures.Future[str]] = {}
        self._headless = HeadlessUser()

    def pending(self) -> dict[str, Request]:
        """The requests waiting for an answer, by the tool call that met them."""
        with self._lock:
            return {call_id: request for call_id, (request, _) in self._pending.items()}

    def answer(self, call_id: str, answer: Answer) -> None:
        """Answer the request the call ``call_id`` waits on. KeyError when none waits;
        TypeError when the answer is of the other kind (a login's for a question)."""
        with self._lock:
            request, future = self._pending[call_id]
            wanted = LoginAnswer if isinstance(request, LoginRequest) else ElicitationAnswer
            if not isinstance(answer, wanted):
                raise TypeError(
                    f"call {call_id} waits for a {wanted.__name__}, not {type(answer).__name__}"
                )
            del self._pending[call_id]
        future.set_result(answer)

    def wanted(self, call_id: str) -> concurrent.futures.Future[str]:
        """Done, with the pause reason, once a request of the call ``call_id`` waits."""
        with self._lock:
            future = self._wanted.get(call_id)
            stale = future is not None and future.done() and call_id not in self._pending
            if future is None or future.cancelled() or stale:
                future = self._wanted[call_id] = concurrent.futures.Future()
            pending = self._pending.get(call_id)
        if pending is not None and not future.done():
            future.set_result(pause_reason(pending[0]))
        return future

    def drop(self, call_id: str) -> None:
        """Forget the call (it ended or was cancelled): its waiting request is cancelled."""
        with self._lock:
            pending = self._pending.pop(call_id, None)
            self._wanted.pop(call_id, None)
        if pending is not None:
            pending[1].cancel()

    async def _wait(self, request: Request) -> Answer:
        call_id = request.call_id
        assert call_id is not None
        future: concurrent.futures.Future[Answer] = concurrent.futures.Future()
        with self._lock:
            self._pending[call_id] = (request, future)
            wanted = self._wanted.get(call_id)
            if wanted is None or wanted.done():
                wanted = self._wanted[call_id] = concurrent.futures.Future()
        wanted.set_result(pause_reason(request))
        try:
            return await asyncio.wrap_future(future)
        finally:
            with self._lock:
                if self._pending.get(call_id, (None, None))[1] is future:
                    del self._pending[call_id]

    async def login(self, request: LoginRequest) -> LoginAnswer:
        if request.call_id is None:  # listing tools: no call to hold
            return await self._headless.login(request)
        answer = await self._wait(request)
        assert isinstance(answer, LoginAnswer)
        return answer

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        if request.call_id is None:
            raise UserNeeded(
                f"mcp server {request.server!r} asked a question outside a tool call: "
                f"{request.message!r}",
                request,
            )
        answer = await self._wait(request)
        assert isinstance(answer, ElicitationAnswer)
        return answer

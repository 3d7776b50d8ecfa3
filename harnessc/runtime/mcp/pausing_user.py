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

``waiting`` and ``deliver`` look among a run's users (``users_of`` its harness's
extensions; a call id is unique within a run only): the run-control layer finds what a
paused call waits for (``request_payload``: the data of its pause) and hands the
caller's answer to the user that holds it (a sub-agent's call too: it uses its
parent's toolset). An answer to a question no user holds (a durable run resumed in
another process) is kept for that call and answers the same question met again at
once; a login's redirect cannot be used by
another process (the verifier of its URL was lost), so that call meets a fresh login.
While a login waits, a loopback callback listens on its redirect's port (when that is
on this machine and free): a browser sent back there completes the login, and the
answer ``done`` resumes the run. ``done`` when nothing came back (the login was made
elsewhere, a token is stored) drops the held call: the resumed call is made afresh.

A login met while listing a server's tools (its start: no tool call to hold) waits the
same way under the key ``start_key(server)``: the toolset's start waits on it, and the
run pauses before its next model request (``McpToolset``, ``PauseRun``); the pause's
``call_id`` is that key, and its answer reaches the start as a call's reaches the call.
A question outside a tool call fails, as ``HeadlessUser``'s does.

Its methods run on the MCP loop itself (``runs_anywhere``), so a request outlives the
event loop of the run that met it (``prompt_sync`` ends its loop when the run pauses).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import weakref
from collections.abc import Iterable
from typing import Any

from harnessc.runtime.mcp.user_types import (
    ElicitationAnswer,
    ElicitationRequest,
    LoginAnswer,
    LoginRequest,
    UserNeeded,
)

__all__ = [
    "LOGIN_DONE",
    "PausingUser",
    "deliver",
    "is_login_reason",
    "is_mcp_reason",
    "is_start_key",
    "login_state",
    "pause_reason",
    "request_payload",
    "same_login",
    "start_key",
    "starting",
    "users_of",
    "waiting",
]

Request = LoginRequest | ElicitationRequest
Answer = LoginAnswer | ElicitationAnswer

LOGIN_DONE = "done"  # the answer to a login made elsewhere (its token is stored)
_MCP = "mcp server "  # every pause reason of a PausingUser starts so

_USERS: weakref.WeakSet[PausingUser] = weakref.WeakSet()
_USERS_LOCK = threading.Lock()


_START = "mcp-start:"  # the key of a login met while a server's tools are listed


def start_key(server: str) -> str:
    """The key a login met at ``server``'s start (listing its tools) waits under, in
    place of a tool call's id."""
    return _START + server


def is_start_key(call_id: str) -> bool:
    return call_id.startswith(_START)


def is_mcp_reason(reason: str) -> bool:
    """Whether a pause reason is a PausingUser's (a login or a question)."""
    return reason.startswith(_MCP) and (" needs a login" in reason or " asks" in reason)


def is_login_reason(reason: str) -> bool:
    return reason.startswith(_MCP) and " needs a login" in reason.split(":", 1)[0]


def request_payload(request: Request) -> dict[str, Any]:
    """What a pause shows of ``request``: for a login the server, the URL to open, where
    the browser comes back and why; for a question its mode, message, schema or URL.
    ``call_id``: the call that met it, or ``start_key(server)`` for a login met while
    listing the server's tools."""
    if isinstance(request, LoginRequest):
        return {
            "call_id": request.call_id,
            "server": request.server,
            "url": request.url,
            "redirect_uri": request.redirect_uri,
            "reason": request.reason,
            "scopes": list(request.scopes),
        }
    out: dict[str, Any] = {
        "call_id": request.call_id,
        "server": request.server,
        "mode": request.mode,
        "message": request.message,
    }
    if request.schema is not None:
        out["schema"] = request.schema
    if request.url is not None:
        out["url"] = request.url
    if request.elicitation_id is not None:
        out["elicitation_id"] = request.elicitation_id
    return out


def login_state(url: str) -> str | None:
    """The ``state`` of an authorization URL or of a redirect (a query string alone
    too); None when it has none."""
    from urllib.parse import parse_qs, urlsplit

    query = urlsplit(url).query if "?" in url or "://" in url else url
    found = parse_qs(query).get("state")
    return found[0] if found else None


def same_login(request: LoginRequest, redirect: str) -> bool:
    """Whether ``redirect`` comes back from ``request``'s URL (their states match; one
    without a state is taken as matching: the authorization flow checks it)."""
    asked, given = login_state(request.url), login_state(redirect)
    return asked is None or given is None or asked == given


def _users(among: Iterable[PausingUser] | None) -> list[PausingUser]:
    if among is not None:
        return list(among)
    with _USERS_LOCK:
        return list(_USERS)


def users_of(extensions: Iterable[Any]) -> list[PausingUser]:
    """The ``PausingUser`` of each MCP toolset among a harness's ``extensions`` (a
    run's calls, its sub-agents' sharing its servers too, are theirs), and those of the
    sub-agents working or paused in its calls (an extension's ``child_extensions``:
    their own servers' logins and questions are the tree's)."""
    found: list[PausingUser] = []
    for extension in extensions:
        user = getattr(extension, "user", None)
        if isinstance(user, PausingUser):
            found.append(user)
        children = getattr(extension, "child_extensions", None)
        if callable(children):
            for below in children():
                found += users_of(below)
    return found


def starting(among: Iterable[PausingUser], reason: str = "") -> tuple[Request, PausingUser] | None:
    """A login met while listing a server's tools that waits in one of ``among`` (and
    that user): the one whose pause reason is ``reason`` when one is (several servers
    may wait at once), else the first; None when none waits."""
    found = [
        (request, user)
        for user in among
        for call_id, request in user.pending().items()
        if is_start_key(call_id)
    ]
    named = [f for f in found if pause_reason(f[0]) == reason]
    chosen = named or found
    return chosen[0] if chosen else None


def waiting(call_id: str, among: Iterable[PausingUser] | None = None) -> Request | None:
    """The login or question the call ``call_id`` waits on (None: none), in ``among``
    (a run's users: a call id is unique within a run only), else in this process."""
    users = _users(among)
    for user in users:
        request = user.pending().get(call_id)
        if request is not None:
            return request
    return None


def deliver(call_id: str, answer: Answer, among: Iterable[PausingUser] | None = None) -> bool:
    """Answer the request the call ``call_id`` waits on, in whichever user holds it.
    ``LoginAnswer(LOGIN_DONE)`` drops the held call (it is made afresh). A question's
    answer with no user holding it here is kept for that call; a login's is not (it
    cannot be used here: the call meets a fresh login). Whether a user took it.
    ``among``: the run's users (``users_of``), else every one of this process.
    TypeError for an answer of the other kind."""
    users = _users(among)
    done = isinstance(answer, LoginAnswer) and answer.redirect.strip() == LOGIN_DONE
    for user in users:
        if done and user.caught(call_id):
            return True  # the browser came back here: the call goes on
        request = user.pending().get(call_id)
        if request is None:
            continue
        if isinstance(answer, LoginAnswer) and answer.redirect.strip() == LOGIN_DONE:
            user.restart(call_id)
        elif isinstance(request, LoginRequest) and isinstance(answer, LoginAnswer):
            if not same_login(request, answer.redirect):
                return False  # the redirect of an older URL: the call shows the current one
            user.answer(call_id, answer)
        else:
            user.answer(call_id, answer)
        return True
    if isinstance(answer, ElicitationAnswer):
        for user in users:  # the question met again on this call takes it at once
            user.keep(call_id, answer)
    return False


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

    def __init__(self, path: str = "") -> None:
        """``path``: the agent path of the sub-agent whose own servers it answers for
        (``lead > scout``; "" for the run's own agent)."""
        self.path = path
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[Request, concurrent.futures.Future[Answer]]] = {}
        self._wanted: dict[str, concurrent.futures.Future[str]] = {}
        self._fresh: set[str] = set()  # held calls to make afresh at their resume
        self._caught: set[str] = set()  # calls whose login a loopback callback caught
        # answers to questions given before the call met them (a recovered run), by call
        self._kept: dict[str, ElicitationAnswer] = {}
        with _USERS_LOCK:
            _USERS.add(self)

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

    def keep(self, call_id: str, answer: ElicitationAnswer) -> None:
        """The answer to the question the call ``call_id`` will meet (it met it in a
        process that is gone): given at once when it does."""
        with self._lock:
            self._kept[call_id] = answer

    def restart(self, call_id: str) -> None:
        """The held call ``call_id`` is made afresh when it runs again (its waiting
        request is cancelled): a login made elsewhere left a token to use."""
        with self._lock:
            self._fresh.add(call_id)
        self.drop(call_id)

    def take_fresh(self, call_id: str) -> bool:
        """Whether the call ``call_id`` is to be made afresh (once)."""
        with self._lock:
            if call_id in self._fresh:
                self._fresh.discard(call_id)
                return True
            return False

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
        if isinstance(request, ElicitationRequest):
            with self._lock:
                kept = self._kept.pop(call_id, None)
            if kept is not None:  # answered before this process met it
                return kept
        future: concurrent.futures.Future[Answer] = concurrent.futures.Future()
        with self._lock:
            self._pending[call_id] = (request, future)
            wanted = self._wanted.get(call_id)
            if wanted is None or wanted.done():
                wanted = self._wanted[call_id] = concurrent.futures.Future()
        wanted.set_result(pause_reason(request))
        try:
            if isinstance(request, LoginRequest):
                return await self._login_or_callback(request, future)
            return await asyncio.wrap_future(future)
        finally:
            with self._lock:
                if self._pending.get(call_id, (None, None))[1] is future:
                    del self._pending[call_id]

    async def _login_or_callback(
        self, request: LoginRequest, answered: concurrent.futures.Future[Answer]
    ) -> Answer:
        """The caller's answer, or the redirect a loopback callback on the redirect's
        port caught (the browser came back to this machine: the answer ``done`` then
        resumes the run with the call's result)."""
        from urllib.parse import urlsplit

        from harnessc.runtime.mcp.terminal_user import LoopbackCallback

        parts = urlsplit(request.redirect_uri)
        loopback = parts.hostname in ("localhost", "127.0.0.1") and parts.port is not None
        mirrored = asyncio.wrap_future(answered)
        if not loopback or parts.port is None:
            return await mirrored
        try:
            callback = LoopbackCallback(parts.port, parts.path or "/callback")
            await callback.__aenter__()
        except OSError:  # the port is taken: only the caller's answer
            return await mirrored
        try:
            assert callback.url is not None
            either: set[asyncio.Future[Any]] = {mirrored, callback.url}
            done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if mirrored in done:
                return mirrored.result()
            with self._lock:
                assert request.call_id is not None
                self._caught.add(request.call_id)
                self._pending.pop(request.call_id, None)
            answered.cancel()
            return LoginAnswer(callback.url.result())
        finally:
            if not mirrored.done():
                mirrored.cancel()
            await callback.__aexit__(None, None, None)

    def caught(self, call_id: str) -> bool:
        """Whether the login of the call ``call_id`` was caught by the loopback callback
        (once: the caller's ``done`` takes it)."""
        with self._lock:
            if call_id in self._caught:
                self._caught.discard(call_id)
                return True
            return False

    async def login(self, request: LoginRequest) -> LoginAnswer:
        if request.call_id is None:  # listing the tools: the start waits under its key
            from msgspec.structs import replace

            request = replace(request, call_id=start_key(request.server))
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

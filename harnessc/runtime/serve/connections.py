"""Connections: deadlines for reading a request, a bound on open connections, and one
line in the log counting the clients cut off.

uvicorn has neither (its ``limit_concurrency`` answers 503 only once a request's head
has arrived, and logs each one; it has no header or body deadline), so the server runs
uvicorn's h11 protocol with these checks around it:

- a request's head must arrive within ``header_timeout_s`` of the connection opening
  (or of the previous response, on a kept-alive connection), and its body within
  ``body_timeout_s`` of its head. These are totals, so a client sending a byte now
  and then gains nothing. A client that sent part of a request gets ``408`` and the
  connection closes; one that sent nothing is closed silently (browsers open spare
  connections they may never use).
- at most ``max_connections`` are open. A connection over the bound closes the one
  that has waited longest for its request head (a connection busy with a request,
  such as an event stream, is never closed for it); when every connection is busy the
  newcomer gets ``503`` and is closed.
- nothing is logged per connection: a count of those cut off (and of those refused)
  is logged at most once a minute, and once when the server stops.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConnectionLimits", "guarded_protocol", "usable_connections"]

_log = logging.getLogger("harnessc.serve")
REPORT_EVERY_S = 60.0
_FD_RESERVE = 256  # descriptors kept for sessions, model connections, MCP servers, logs


def _raw_response(status: int, reason: str, message: str, kind: str) -> bytes:
    body = json.dumps(
        {"error": {"type": kind, "message": message, "param": None, "code": kind}}
    ).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


@dataclass(slots=True)
class ConnectionLimits:
    """The deadlines and the bound, and what they cut off (shared by the connections
    of one server)."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 1024
    # Connections waiting for a request head, oldest first (the ones a newcomer over
    # the bound may close).
    waiting: dict[Any, float] = field(default_factory=dict)
    too_slow: int = 0  # cut off by a deadline
    crowded_out: int = 0  # closed for a newcomer over the bound
    refused: int = 0  # newcomers over the bound when every connection was busy
    _report: asyncio.TimerHandle | None = None

    def counted(self, loop: asyncio.AbstractEventLoop) -> None:
        """Something was cut off: report the counts within a minute."""
        if self._report is None:
            self._report = loop.call_later(REPORT_EVERY_S, self.report)

    def report(self) -> None:
        """Log the counts since the last report (nothing when there are none)."""
        if self._report is not None:
            self._report.cancel()
            self._report = None
        parts = []
        if self.too_slow:
            parts.append(
                f"{self.too_slow} too slow sending their request (head within "
                f"{self.header_timeout_s:g} s, body within {self.body_timeout_s:g} s)"
            )
        if self.crowded_out or self.refused:
            parts.append(
                f"{self.crowded_out + self.refused} over the bound of "
                f"{self.max_connections} connections ({self.crowded_out} waiting for a "
                f"request closed, {self.refused} refused with 503)"
            )
        if parts:
            _log.warning("closed connections: %s", "; ".join(parts))
        self.too_slow = self.crowded_out = self.refused = 0


def usable_connections(wanted: int) -> int:
    """``wanted``, or fewer when the process may not open that many files: the soft
    limit is raised toward the hard one first (Unix), and a reserve is kept."""
    try:
        import resource
    except ImportError:  # not on Unix: no limit to read
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + _FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(hard, needed)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, soft - _FD_RESERVE))


_REQUEST_TIMEOUT = _raw_response(
    408,
    "Request Timeout",
    "the request did not arrive in time: send its head and body without pausing",
    "request_timeout",
)
_FULL = _raw_response(
    503,
    "Service Unavailable",
    "the server has as many connections open as it takes: try again in a moment",
    "too_many_connections",
)


def guarded_protocol(limits: ConnectionLimits) -> type:
    """uvicorn's h11 protocol with ``limits`` (the class uvicorn.Config's ``http`` takes)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):  # type: ignore[misc]
        _deadline: asyncio.TimerHandle | None = None
        _phase = "head"  # head | body | busy (the request is read; the app has it)
        _heard = False  # bytes of the awaited request arrived

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections and not self._crowd_out():
                limits.refused += 1
                limits.counted(self.loop)
                transport.write(_FULL)
                transport.close()
                return
            self._await_head()

        def _crowd_out(self) -> bool:
            """Close the connection that has waited longest for a request head; False
            when there is none (every connection is busy with a request)."""
            if not limits.waiting:
                return False
            oldest = next(iter(limits.waiting))
            limits.crowded_out += 1
            limits.counted(self.loop)
            oldest._cut(respond=False)
            return True

        def _await_head(self) -> None:
            self._phase, self._heard = "head", False
            limits.waiting.pop(self, None)
            limits.waiting[self] = self.loop.time()
            self._arm(limits.header_timeout_s)

        def _arm(self, seconds: float) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def data_received(self, data: bytes) -> None:
            self._heard = True
            super().data_received(data)
            self._follow()

        def _follow(self) -> None:
            """Move the deadline along as the request arrives (h11 tells how far)."""
            state = self.conn.their_state
            if state is h11.IDLE and self.conn.our_state is h11.IDLE:
                if self._phase != "head":  # between requests: the next head has a deadline
                    self._await_head()
            elif self._phase == "head":
                limits.waiting.pop(self, None)
                if state is h11.SEND_BODY:
                    self._phase = "body"
                    self._arm(limits.body_timeout_s)
                else:
                    self._phase = "busy"
                    self._disarm()
            elif self._phase == "body" and state is not h11.SEND_BODY:
                self._phase = "busy"
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            if self._phase == "body" and self.conn.their_state is h11.SEND_BODY:
                return  # answered before its body arrived: the body's deadline holds
            self._await_head()  # kept alive: the next request's head has a deadline
            self._follow()  # a pipelined request may be under way already

        def _expired(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            limits.too_slow += 1
            limits.counted(self.loop)
            if self._phase == "head":
                respond = self._heard  # part of a request arrived: say why it ends
            else:  # unless it was answered already (before its body arrived)
                respond = self.cycle is None or not self.cycle.response_started
            self._cut(respond=respond)

        def _cut(self, *, respond: bool) -> None:
            limits.waiting.pop(self, None)
            self._disarm()
            if self.transport.is_closing():
                return
            if respond:
                self.transport.write(_REQUEST_TIMEOUT)
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            limits.waiting.pop(self, None)
            self._disarm()
            super().connection_lost(exc)

    return GuardedH11Protocol

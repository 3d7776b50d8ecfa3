"""The limits that end a provider request from outside the byte stream.

``timeout_ms`` (default 600 s) bounds three things:

- every wait on the network: connecting and each chunk of the body (aiohttp's
  timeouts), and the whole response head with any 1xx answers before it (``attempt``);
- the time between two pieces of reply content once the response has begun: SSE
  comments, pings and events that add nothing do not count, so keepalives cannot hold
  a stalled request open;
- the whole request, retries and back-off included: ``TOTAL_FACTOR`` times
  ``timeout_ms``.

``ProviderRequest.deadline`` (a moment on the event loop's clock, ``loop.time()``, set
by the harness from the wall-clock budget) ends the request at that moment, whichever
comes first; it is used as given, so the harness and the provider stop at one moment.

An abort (from any thread: ``AbortWatch``, the request's listener on its signal) or a
tripped limit ends the wait for a request slot, cancels the exchange task and wakes the
driver; the driver also checks ``Interrupt.kind`` after every item it takes.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harnessc.runtime.providers.channel import Channel

__all__ = ["DEFAULT_TIMEOUT_MS", "TOTAL_FACTOR", "AbortWatch", "Interrupt", "RequestClock"]

DEFAULT_TIMEOUT_MS = 600_000
TOTAL_FACTOR = 10
WAKE = -1  # the queue item that wakes a driver waiting on an exchange


class Interrupt:
    """Why the running exchange was stopped ("" while it runs), and how to stop it."""

    __slots__ = ("kind", "task", "queue", "waiter")

    def __init__(self) -> None:
        self.kind = ""  # "abort" | "idle" | "total" | "deadline"
        self.task: asyncio.Task[None] | None = None
        self.queue: Channel[tuple[Any, ...]] | None = None
        # Waiting for a request slot: its result is the time the slot was handed over,
        # None when the wait was interrupted (``HttpClientPool.acquire``).
        self.waiter: asyncio.Future[float | None] | None = None

    def trip(self, kind: str) -> None:
        if not self.kind:
            self.kind = kind
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.queue is not None:  # when full, the driver is busy and will check ``kind``
            self.queue.offer((WAKE,))


class RequestClock:
    """Watches one request: idle time between reply content, its total, its deadline."""

    __slots__ = ("loop", "idle_s", "end", "end_kind", "last", "watching", "_handle", "_target")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, timeout_ms: int | None, deadline: float | None
    ) -> None:
        self.loop = loop
        self.idle_s = (timeout_ms or DEFAULT_TIMEOUT_MS) / 1000
        now = loop.time()
        self.end = now + self.idle_s * TOTAL_FACTOR
        self.end_kind = "total"
        if deadline is not None and deadline < self.end:
            self.end, self.end_kind = deadline, "deadline"
        self.last = now
        self.watching = False
        self._handle: asyncio.TimerHandle | None = None
        self._target: Interrupt | None = None

    def left_s(self) -> float:
        """Seconds left before the total or the deadline."""
        return self.end - self.loop.time()

    def arm(self, target: Interrupt) -> None:
        """Watch a new attempt (the idle watch starts with ``begin_content``)."""
        self._target = target
        self.watching = False
        self._schedule(self.end)

    def begin_content(self) -> None:
        """The response head arrived: from now on, reply content must keep coming."""
        self.last = self.loop.time()
        self.watching = True
        self._schedule(min(self.end, self.last + self.idle_s))

    def disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._target = None

    def _schedule(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        target = self._target
        if target is None:
            return
        now = self.loop.time()
        if now >= self.end:
            target.trip(self.end_kind)
        elif self.watching and now >= self.last + self.idle_s:
            # one more turn of the loop first: after a stall, bytes that came meanwhile
            # wake their reader in the turn the timer fires, and must reach the driver
            self.loop.call_soon(self._idle, target)
        else:  # content came meanwhile: look again when it could next run out
            self._schedule(min(self.end, self.last + self.idle_s) if self.watching else self.end)

    def _idle(self, target: Interrupt) -> None:
        if self._target is target:  # still the attempt it watched
            target.trip("idle")


class AbortWatch:
    """The request's abort listener: trips the running attempt's ``Interrupt``.

    A callable object rather than a closure, so a request holds one small object
    while it waits; an abort may come from any thread.
    """

    __slots__ = ("loop", "interrupt")

    def __init__(self, loop: asyncio.AbstractEventLoop, interrupt: Interrupt) -> None:
        self.loop = loop
        self.interrupt = interrupt

    def __call__(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._trip)
        except RuntimeError:  # the loop is already closed
            pass

    def _trip(self) -> None:
        self.interrupt.trip("abort")

"""The httpx clients providers send on, and the cap on requests in flight per origin.

``HttpClientPool`` keeps httpx clients per event loop and origin (scheme, host, port)
and caps the requests in flight per origin (``max_concurrent``, default 64). A request
over the cap waits for a slot in a first-come queue before anything of it is built: a
waiting request holds one future, not its encoded body, so a thousand harnesses
sharing one pool cost little while most of them wait. The wait ends early when the
request's ``Interrupt`` trips (an abort, the request's total limit, the run's
deadline), never by ``timeout_ms`` alone. Providers of many harnesses in one process
can share one pool, and so one set of keep-alive connections per base URL.

    lease = await clients.acquire(base_url, interrupt)   # None: interrupted
    try:
        ...send on lease.client...
    finally:
        lease.release()
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections import deque
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

if TYPE_CHECKING:
    from harnessc.runtime.providers.clock import Interrupt

__all__ = [
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_TIMEOUT",
    "SHARD_CONNECTIONS",
    "HttpClientPool",
    "Lease",
    "origin_of",
]

DEFAULT_MAX_CONCURRENT = 64
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=30.0)

# Connections per httpx client: httpcore scans its whole pool for every queued request
# and every connection on each request's start and end, so one client holding hundreds
# of connections costs quadratic CPU; an origin's requests spread over clients of at
# most this many connections, and no request ever waits inside httpcore.
SHARD_CONNECTIONS = 8


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process: building it costs tens of milliseconds."""
    return httpx.create_ssl_context()


def origin_of(url: str) -> str:
    """The scheme, host and port of ``url`` (the key of its slots and clients)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or ''}"


class _Shard:
    __slots__ = ("client", "busy")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.busy = 0


class _Origin:
    """One origin on one loop: its free slots, the requests waiting, its clients."""

    __slots__ = ("free", "waiters", "shards", "secure")

    def __init__(self, max_concurrent: int, secure: bool) -> None:
        self.free = max_concurrent
        # A waiter's result: True when it is handed a slot, False when interrupted.
        self.waiters: deque[asyncio.Future[bool]] = deque()
        self.shards: list[_Shard] = []
        self.secure = secure

    def hand_on(self) -> None:
        """A slot came free: to the first request still waiting, else back to the pool."""
        waiters = self.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(True)
                return
        self.free += 1

    def new_client(self, connections: int) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            # A plain-http client needs no TLS context (saves tens of ms locally).
            verify=_ssl_context() if self.secure else False,
            timeout=DEFAULT_TIMEOUT,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
            follow_redirects=False,
        )

    def pick(self, connections: int) -> _Shard:
        """A client with a free connection (made when every client is busy)."""
        for shard in self.shards:
            if shard.client.is_closed:
                shard.client = self.new_client(connections)
            if shard.busy < connections:
                return shard
        shard = _Shard(self.new_client(connections))
        self.shards.append(shard)
        return shard


class Lease:
    """One request slot of an origin and the client to send on; ``release`` once."""

    __slots__ = ("client", "_origin", "_shard")

    def __init__(self, origin: _Origin, shard: _Shard) -> None:
        self.client = shard.client
        self._origin: _Origin | None = origin
        self._shard = shard
        shard.busy += 1

    def release(self) -> None:
        origin = self._origin
        if origin is not None:
            self._origin = None
            self._shard.busy -= 1
            origin.hand_on()


class HttpClientPool:
    """httpx clients by event loop and origin, with a cap on concurrent requests."""

    __slots__ = ("max_concurrent", "max_keepalive", "_loops")

    def __init__(
        self, max_concurrent: int = DEFAULT_MAX_CONCURRENT, max_keepalive: int | None = None
    ):
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        self.max_concurrent = max_concurrent
        # Idle connections kept per client (httpx drops them after 5 s idle); by
        # default as many as may be busy, so a busy origin reuses its connections.
        self.max_keepalive = max_keepalive
        self._loops: dict[asyncio.AbstractEventLoop, dict[str, _Origin]] = {}

    def _connections(self) -> int:
        limit = min(self.max_concurrent, SHARD_CONNECTIONS)
        return limit if self.max_keepalive is None else max(1, min(limit, self.max_keepalive))

    def _entry(self, url: str) -> _Origin:
        loop = asyncio.get_running_loop()
        origins = self._loops.get(loop)
        if origins is None:
            for old in [old for old in self._loops if old.is_closed()]:
                del self._loops[old]  # a finished asyncio.run: its sockets are gone
            origins = self._loops[loop] = {}
        key = origin_of(url)
        entry = origins.get(key)
        if entry is None:
            entry = origins[key] = _Origin(self.max_concurrent, not url.startswith("http://"))
        return entry

    def client(self, url: str) -> httpx.AsyncClient:
        """A client for ``url``'s origin on the running loop."""
        return self._entry(url).pick(self._connections()).client

    def waiting(self, url: str) -> int:
        """How many requests to ``url``'s origin wait for a slot on the running loop."""
        return sum(1 for w in self._entry(url).waiters if not w.done())

    async def acquire(self, url: str, interrupt: Interrupt | None = None) -> Lease | None:
        """One of the origin's ``max_concurrent`` slots, waiting in turn for it; None
        when ``interrupt`` trips first."""
        entry = self._entry(url)
        waiters = entry.waiters
        while waiters and waiters[0].done():
            waiters.popleft()  # interrupted while waiting
        if entry.free > 0 and not waiters:
            entry.free -= 1
        else:
            waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            waiters.append(waiter)
            if interrupt is not None:
                interrupt.waiter = waiter
            try:
                granted = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled() and waiter.result():
                    entry.hand_on()  # handed a slot just as the task was cancelled
                raise
            finally:
                if interrupt is not None:
                    interrupt.waiter = None
            if not granted:
                return None
        return Lease(entry, entry.pick(self._connections()))

    async def aclose(self) -> None:
        """Close the clients of the running loop (a later request opens new ones)."""
        loop = asyncio.get_running_loop()
        origins = self._loops.pop(loop, {})
        for entry in origins.values():
            for shard in entry.shards:
                await shard.client.aclose()

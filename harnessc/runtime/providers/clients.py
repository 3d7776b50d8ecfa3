"""The connections providers send on, and the cap on requests in flight per origin.

``HttpClientPool`` keeps httpcore connection pools per event loop and origin (scheme,
host, port) and caps the requests in flight per origin (``max_concurrent``, default
64). A request over the cap waits for a slot in a first-come queue before anything of
it is built: a waiting request holds one future, not its encoded body, so a thousand
harnesses sharing one pool cost little while most of them wait. The wait ends early
when the request's ``Interrupt`` trips (an abort, the request's total limit, the run's
deadline), never by ``timeout_ms`` alone. Providers of many harnesses in one process
can share one pool, and so one set of keep-alive connections per base URL.

    lease = await clients.acquire(base_url, interrupt)   # None: interrupted
    try:
        ...send on lease.pool...
    finally:
        lease.release()

Requests go through httpcore (httpx's own HTTP/1.1 layer) on ``netio``'s asyncio
sockets, without httpx's client: no cookie jar shared by the sessions of a process,
no redirects or auth flows (a provider follows none). The environment's proxies
(``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``: ``environment_proxy``)
and certificates (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) apply.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import os
import ssl
import urllib.request
from collections import deque
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import httpcore
import httpx

from harnessc.runtime.providers.errors import ProviderError, redact_url
from harnessc.runtime.providers.netio import AsyncioBackend

if TYPE_CHECKING:
    from harnessc.runtime.providers.clock import Interrupt

__all__ = [
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_TIMEOUT",
    "KEEPALIVE_EXPIRY_S",
    "SHARD_CONNECTIONS",
    "HttpClientPool",
    "Lease",
    "environment_proxy",
    "origin_of",
    "proxy_label",
]

DEFAULT_MAX_CONCURRENT = 64
DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=30.0)
# An idle keep-alive connection is closed after this long (httpx's default).
KEEPALIVE_EXPIRY_S = 5.0

# Connections per httpcore pool: httpcore scans its whole pool for every queued request
# and every connection on each request's start and end, so one pool holding hundreds
# of connections costs quadratic CPU; an origin's requests spread over pools of at
# most this many connections, and no request ever waits inside httpcore.
SHARD_CONNECTIONS = 8

_BACKEND = AsyncioBackend()  # holds nothing: one for every pool


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process (building it costs tens of milliseconds): trusting
    the certificates ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` name, else certifi's roots.
    A variable naming what cannot be read is a ProviderError naming the variable."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if cafile:
        name, where = "SSL_CERT_FILE", cafile
    elif capath:
        name, where = "SSL_CERT_DIR", capath
        if not os.path.isdir(capath):
            raise ProviderError(
                f"SSL_CERT_DIR names {capath!r}, which is not a folder: set it to a folder "
                "of certificates or unset it"
            )
    else:
        import certifi

        name, where, cafile = "", "", certifi.where()
    try:
        return ssl.create_default_context(cafile=cafile, capath=capath if not cafile else None)
    except OSError as exc:  # ssl.SSLError is one
        if not name:
            raise
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ProviderError(
            f"{name} names {where!r}, which cannot be used ({reason}): set it to "
            "a file of PEM certificates or unset it"
            if name == "SSL_CERT_FILE"
            else f"{name} names {where!r}, which cannot be used ({reason})"
        ) from None


def origin_of(url: str) -> str:
    """The scheme, host and port of ``url`` (the key of its slots and pools)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or ''}"


def environment_proxy(url: str) -> httpcore.Proxy | None:
    """The proxy the environment names for ``url``, or None.

    ``HTTPS_PROXY``/``HTTP_PROXY`` by the URL's scheme, else ``ALL_PROXY`` (either
    case), unless ``NO_PROXY`` names its host; a proxy URL's user and password are
    sent to the proxy, never to the server. A SOCKS proxy is a ProviderError naming
    the variable (SOCKS is not supported).
    """
    chosen = _chosen_proxy(url)
    if chosen is None:
        return None
    variable, written = chosen
    if "://" not in written:
        written = f"http://{written}"
    proxy = urlsplit(written)
    if proxy.scheme.lower() not in ("http", "https"):
        raise ProviderError(
            f"{variable} names a {proxy.scheme} proxy ({redact_url(written)}), which is not "
            "supported: set it to an http:// or https:// proxy, or name the model's host "
            "in NO_PROXY; no request was sent"
        )
    auth = None
    if proxy.username is not None:
        auth = (unquote(proxy.username), unquote(proxy.password or ""))
    netloc = proxy.hostname or ""
    if ":" in netloc:
        netloc = f"[{netloc}]"
    if proxy.port:
        netloc += f":{proxy.port}"
    return httpcore.Proxy(f"{proxy.scheme}://{netloc}{proxy.path}", auth=auth)


def proxy_label(url: str) -> str:
    """The proxy ``url`` goes through as messages name it ("" for none): its address
    without credentials and the variable that names it."""
    chosen = _chosen_proxy(url)
    if chosen is None:
        return ""
    variable, written = chosen
    return f"{redact_url(written)} (from {variable})"


def _chosen_proxy(url: str) -> tuple[str, str] | None:
    """The variable and proxy URL the environment names for ``url``, or None."""
    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    key = parts.scheme if proxies.get(parts.scheme) else "all"
    chosen = proxies.get(key)
    if not chosen:
        return None
    if _bypassed(parts.hostname or "", parts.port, proxies.get("no", "")):
        return None
    variable = next(
        (name for name in (f"{key}_proxy", f"{key.upper()}_PROXY") if os.environ.get(name)),
        f"{key.upper()}_PROXY",
    )
    return variable, chosen


def _bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """True when ``NO_PROXY`` names ``host``: ``*``, the host or a domain it is in
    (``example.com`` or ``.example.com``), optionally with the port, or an IP network."""
    host = host.lower()
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        if not entry:
            continue
        if entry.startswith("["):  # [IPv6] or [IPv6]:port
            name, _, rest = entry[1:].partition("]")
            entry_port = rest[1:]
        elif entry.count(":") == 1:  # host:port (an IPv6 address has more colons)
            name, _, entry_port = entry.partition(":")
        else:
            name, entry_port = entry, ""
        if entry_port and (not entry_port.isdigit() or int(entry_port) != port):
            continue
        name = name.lstrip(".")
        if host == name or host.endswith("." + name):
            return True
        try:
            if ipaddress.ip_address(host) in ipaddress.ip_network(name, strict=False):
                return True
        except ValueError:
            pass
    return False


class _Shard:
    __slots__ = ("pool", "busy")

    def __init__(self, pool: httpcore.AsyncConnectionPool) -> None:
        self.pool = pool
        self.busy = 0


class _Origin:
    """One origin on one loop: its free slots, the requests waiting, its pools."""

    __slots__ = (
        "free",
        "waiters",
        "shards",
        "secure",
        "proxy",
        "proxy_label",
        "refused",
        "ssl_context",
    )

    def __init__(self, max_concurrent: int, url: str, ssl_context: ssl.SSLContext | None) -> None:
        self.free = max_concurrent
        # A waiter's result: True when it is handed a slot, False when interrupted.
        self.waiters: deque[asyncio.Future[bool]] = deque()
        self.shards: list[_Shard] = []
        self.secure = not url.startswith("http://")
        self.proxy: httpcore.Proxy | None = None
        self.proxy_label = ""
        self.refused: ProviderError | None = None  # why no request can go (a SOCKS proxy)
        try:
            self.proxy = environment_proxy(url)
            self.proxy_label = proxy_label(url) if self.proxy is not None else ""
        except ProviderError as exc:
            self.refused = exc
        self.ssl_context = ssl_context

    def hand_on(self) -> None:
        """A slot came free: to the first request still waiting, else back to the pool."""
        waiters = self.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(True)
                return
        self.free += 1

    def new_pool(self, connections: int) -> httpcore.AsyncConnectionPool:
        # A plain-http origin needs no TLS context (saves tens of ms locally); an https
        # proxy's own TLS is httpcore's, with certifi's roots.
        return httpcore.AsyncConnectionPool(
            ssl_context=(self.ssl_context or _ssl_context()) if self.secure else None,
            proxy=self.proxy,
            max_connections=connections,
            max_keepalive_connections=connections,
            keepalive_expiry=KEEPALIVE_EXPIRY_S,
            network_backend=_BACKEND,
        )

    def pick(self, connections: int) -> _Shard:
        """A pool with a free connection (made when every pool is busy); a
        ProviderError when the origin can have none."""
        if self.refused is not None:
            raise ProviderError(self.refused.message)
        for shard in self.shards:
            if shard.busy < connections:
                return shard
        shard = _Shard(self.new_pool(connections))
        self.shards.append(shard)
        return shard


class Lease:
    """One request slot of an origin and the pool to send on; ``release`` once."""

    __slots__ = ("pool", "proxy", "_origin", "_shard")

    def __init__(self, origin: _Origin, shard: _Shard) -> None:
        self.pool = shard.pool
        self.proxy = origin.proxy_label  # the proxy the pool goes through ("" for none)
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
    """Connection pools by event loop and origin, with a cap on concurrent requests."""

    __slots__ = ("max_concurrent", "max_keepalive", "ssl_context", "_loops")

    def __init__(
        self,
        max_concurrent: int = DEFAULT_MAX_CONCURRENT,
        max_keepalive: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ):
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        self.max_concurrent = max_concurrent
        # Idle connections kept per pool (dropped after KEEPALIVE_EXPIRY_S idle); by
        # default as many as may be busy, so a busy origin reuses its connections.
        self.max_keepalive = max_keepalive
        # The TLS context of https origins (and TLS proxies): by default one trusting
        # certifi's roots, or SSL_CERT_FILE / SSL_CERT_DIR when set.
        self.ssl_context = ssl_context
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
            entry = origins[key] = _Origin(self.max_concurrent, url, self.ssl_context)
        return entry

    def connection_pool(self, url: str) -> httpcore.AsyncConnectionPool:
        """A connection pool of ``url``'s origin on the running loop."""
        return self._entry(url).pick(self._connections()).pool

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
        try:
            shard = entry.pick(self._connections())
        except BaseException:
            entry.hand_on()  # no pool to send on (the TLS settings are unusable)
            raise
        return Lease(entry, shard)

    async def aclose(self) -> None:
        """Close the connections of the running loop (a later request opens new ones)."""
        loop = asyncio.get_running_loop()
        origins = self._loops.pop(loop, {})
        for entry in origins.values():
            for shard in entry.shards:
                await shard.pool.aclose()

"""The connections providers send on, and the cap on requests in flight per origin.

``HttpClientPool`` keeps one aiohttp client session per event loop and origin (scheme,
host, port) and caps the requests in flight per origin: at ``max_concurrent`` when one
is given, else at a cap that follows the event loop (``_Origin.adapt``: it starts at
64, grows by one each time a waiting request gets its slot while the loop is prompt,
and shrinks by one each time it gets it late, between 32 and 1,024). The harnesses of a
process share one pool unless told otherwise (``shared_http_clients``, what a
generated module's ``build_options`` gives). A request over the cap waits for a slot in a first-come queue before anything of
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

Requests go through aiohttp (its HTTP parser, connection pool, happy eyeballs, TLS
and proxies), imported on the first request, with no cookie jar shared by the
sessions of a process, no redirects and no automatic decompression (``transport``
decodes in bounded pieces). The environment's proxies (``HTTPS_PROXY``,
``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, as ``urllib.request`` reads them:
``environment_proxy``) and certificates (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) apply.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import ipaddress
import os
import ssl
import urllib.request
import weakref
from collections import deque
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from harnessc.runtime.providers.errors import ProviderError, redact_url

if TYPE_CHECKING:
    from aiohttp import ClientSession

    from harnessc.runtime.providers.clock import Interrupt

__all__ = [
    "ADAPTIVE_CAP",
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_TIMEOUT",
    "KEEPALIVE_EXPIRY_S",
    "HttpClientPool",
    "Lease",
    "Proxy",
    "Timeout",
    "environment_proxy",
    "load_network_stack",
    "origin_of",
    "shared_http_clients",
]

DEFAULT_MAX_CONCURRENT = 64
# The adaptive cap: where it starts, its bounds, and the lateness of a granted slot's
# wake-up (the event loop's lag) under which it grows and over which it shrinks. A
# granted slot's request runs in the loop's next turn; a timer's task (a ``sleep``)
# two turns after its time, so it sees two to three times this lateness: 10 ms here
# keeps a timer's p99 near 60 ms at 1,000 sessions against a 50 ms model, with the
# loop's throughput unchanged (15 ms: near 80 ms, and half again as many replies held
# in memory while they wait for the loop; docs/performance.md).
ADAPTIVE_CAP = (64, 32, 1024)
_PROMPT_S = 0.003
_LATE_S = 0.010
# An idle keep-alive connection is closed after this long.
KEEPALIVE_EXPIRY_S = 5.0


class Timeout:
    """How long one exchange may wait to connect, and for each read of its answer."""

    __slots__ = ("connect", "read")

    def __init__(self, read: float, connect: float | None = None) -> None:
        self.read = read
        self.connect = read if connect is None else connect

    @classmethod
    def of(cls, timeout_ms: int | None) -> Timeout:
        """``timeout_ms`` for every wait, or the defaults when it is not set."""
        return cls(timeout_ms / 1000) if timeout_ms else DEFAULT_TIMEOUT


DEFAULT_TIMEOUT = Timeout(600.0, connect=30.0)


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


@functools.lru_cache(maxsize=256)  # three calls per request, for a handful of base URLs
def origin_of(url: str) -> str:
    """The scheme, host and port of ``url`` (the key of its slots and pools)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or ''}"


class Proxy:
    """The proxy a request goes through: its URL (without credentials), the user and
    password sent to it (never to the server), and the variable that names it."""

    __slots__ = ("url", "auth", "variable")

    def __init__(self, url: str, auth: tuple[str, str] | None, variable: str) -> None:
        self.url = url
        self.auth = auth
        self.variable = variable

    @property
    def label(self) -> str:
        """The proxy as messages name it."""
        return f"{self.url} (from {self.variable})"


def environment_proxy(url: str) -> Proxy | None:
    """The proxy the environment names for ``url``, or None.

    ``HTTPS_PROXY``/``HTTP_PROXY`` by the URL's scheme, else ``ALL_PROXY`` (either
    case, as ``urllib.request.getproxies_environment`` reads them), unless ``NO_PROXY``
    names its host (``urllib.request.proxy_bypass``: ``*``, a host or a
    domain it is in, with or without the port) or holds an IP network it is in
    (``10.0.0.0/8``). A SOCKS proxy is a ProviderError naming the variable (SOCKS is
    not supported).
    """
    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    key = parts.scheme if proxies.get(parts.scheme) else "all"
    written = proxies.get(key)
    if not written or _bypassed(parts.hostname or "", parts.port, proxies):
        return None
    variable = next(
        (name for name in (f"{key}_proxy", f"{key.upper()}_PROXY") if os.environ.get(name)),
        f"{key.upper()}_PROXY",
    )
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
    return Proxy(f"{proxy.scheme.lower()}://{netloc}{proxy.path}", auth, variable)


def _bypassed(host: str, port: int | None, proxies: dict[str, str]) -> bool:
    no_proxy = proxies.get("no", "")
    if not no_proxy:
        return False
    shown = f"[{host}]" if ":" in host else host
    if urllib.request.proxy_bypass(f"{shown}:{port}" if port else shown):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    for entry in no_proxy.split(","):
        try:
            if address in ipaddress.ip_network(entry.strip(), strict=False):
                return True
        except ValueError:
            continue
    return False


class _Origin:
    """One origin on one loop: its free slots, the requests waiting, its session."""

    __slots__ = (
        "free",
        "cap",
        "adaptive",
        "waiters",
        "session",
        "url",
        "proxy",
        "refused",
        "ssl_context",
    )

    def __init__(
        self, max_concurrent: int | None, url: str, ssl_context: ssl.SSLContext | None
    ) -> None:
        self.adaptive = max_concurrent is None
        self.cap = ADAPTIVE_CAP[0] if max_concurrent is None else max_concurrent
        # Slots not in use; below zero when an adaptive cap came down while they were.
        self.free = self.cap
        # A waiter's result: the loop's time when it was handed a slot, or None when it
        # was interrupted first.
        self.waiters: deque[asyncio.Future[float | None]] = deque()
        self.session: ClientSession | None = None
        self.url = url
        self.proxy: Proxy | None = None
        self.refused: ProviderError | None = None  # why no request can go (a SOCKS proxy)
        try:
            self.proxy = environment_proxy(url)
        except ProviderError as exc:
            self.refused = exc
        self.ssl_context = ssl_context

    def __del__(self) -> None:
        # A pool dropped unclosed (its loop ended, or nobody called ``aclose``): its
        # session and connections close quietly, as they did before aiohttp, instead of
        # aiohttp's "Unclosed client session" report on stderr.
        session = self.session
        if session is not None and not session.closed:
            connector = session.connector
            session.detach()
            if connector is not None:
                connector._close()  # synchronous; on a closed loop only marks it closed

    def hand_on(self) -> None:
        """A slot came free: to the first request still waiting, else back to the pool."""
        if self.free < 0:  # the cap came down while it was in use: it goes
            self.free += 1
            return
        waiters = self.waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(waiter.get_loop().time())
                return
        self.free += 1

    def adapt(self, late_s: float) -> None:
        """An adaptive cap follows how late a waiting request woke up with its slot
        (the loop's lag: from the moment that request was handed the slot to the moment
        it ran again): one more slot when it was prompt, one fewer when it was late.
        Requests in flight beyond what the loop's CPU serves add no throughput, only
        replies that wait on the loop together; below that, more go at once."""
        low, high = ADAPTIVE_CAP[1], ADAPTIVE_CAP[2]
        if late_s < _PROMPT_S:
            if self.cap < high:
                self.cap += 1
                self.free += 1
                if self.free > 0 and self.waiters:
                    self.free -= 1
                    self.hand_on()
        elif late_s > _LATE_S and self.cap > low:
            self.cap -= 1
            self.free -= 1

    def open(self, connections: int) -> ClientSession:
        """The origin's session (made on first use); a ProviderError when the origin
        can have none."""
        if self.refused is not None:
            raise ProviderError(self.refused.message)
        if self.session is None:
            # A plain-http origin needs no TLS context (saves tens of ms locally) unless
            # its proxy speaks TLS.
            tls = self.url.startswith("https:") or (
                self.proxy is not None and self.proxy.url.startswith("https:")
            )
            context = (self.ssl_context or _ssl_context()) if tls else None
            self.session = _new_session(connections, context)
        return self.session


def load_network_stack() -> None:
    """Import the library requests go through now, not on the first request (a command
    line about to run an agent does it while its start-up is still under way)."""
    import aiohttp  # noqa: F401


def _new_session(connections: int, context: ssl.SSLContext | None) -> ClientSession:
    import aiohttp

    connector = aiohttp.TCPConnector(
        limit=connections,
        ssl=context if context is not None else True,
        keepalive_timeout=KEEPALIVE_EXPIRY_S,
    )
    return aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.DummyCookieJar(),
        auto_decompress=False,
        # The request's own headers, as ``transport.request_headers`` gives them.
        skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept", "Content-Type"),
    )


class Lease:
    """One request slot of an origin and the session to send on; ``release`` once."""

    __slots__ = ("pool", "proxy", "_origin")

    def __init__(self, origin: _Origin, session: ClientSession) -> None:
        self.pool = session
        self.proxy = origin.proxy  # the proxy the request goes through (None for none)
        self._origin: _Origin | None = origin

    def release(self) -> None:
        origin = self._origin
        if origin is not None:
            self._origin = None
            origin.hand_on()


class HttpClientPool:
    """Client sessions by event loop and origin, with a cap on concurrent requests:
    ``max_concurrent`` per origin, or with ``None`` an adaptive one (``_Origin.adapt``)."""

    __slots__ = ("max_concurrent", "ssl_context", "_loops")

    def __init__(
        self,
        max_concurrent: int | None = DEFAULT_MAX_CONCURRENT,
        ssl_context: ssl.SSLContext | None = None,
    ):
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        self.max_concurrent = max_concurrent
        # The TLS context of https origins (and TLS proxies): by default one trusting
        # certifi's roots, or SSL_CERT_FILE / SSL_CERT_DIR when set.
        self.ssl_context = ssl_context
        # By loop, weakly: a finished loop's sessions close when the loop is dropped.
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Origin]]
        self._loops = weakref.WeakKeyDictionary()

    @property
    def _connections(self) -> int:
        return self.max_concurrent if self.max_concurrent is not None else ADAPTIVE_CAP[2]

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

    def connection_pool(self, url: str) -> ClientSession:
        """The client session of ``url``'s origin on the running loop."""
        return self._entry(url).open(self._connections)

    def waiting(self, url: str) -> int:
        """How many requests to ``url``'s origin wait for a slot on the running loop."""
        return sum(1 for w in self._entry(url).waiters if not w.done())

    def cap(self, url: str) -> int:
        """The cap on requests in flight to ``url``'s origin on the running loop."""
        return self._entry(url).cap

    async def acquire(self, url: str, interrupt: Interrupt | None = None) -> Lease | None:
        """One of the origin's slots, waiting in turn for it; None when ``interrupt``
        trips first."""
        entry = self._entry(url)
        waiters = entry.waiters
        while waiters and waiters[0].done():
            waiters.popleft()  # interrupted while waiting
        if entry.free > 0 and not waiters:
            entry.free -= 1
        else:
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[float | None] = loop.create_future()
            waiters.append(waiter)
            if interrupt is not None:
                interrupt.waiter = waiter
            try:
                granted_at = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled() and waiter.result() is not None:
                    entry.hand_on()  # handed a slot just as the task was cancelled
                raise
            finally:
                if interrupt is not None:
                    interrupt.waiter = None
            if granted_at is None:
                return None
            if entry.adaptive:  # how late this request woke with its own slot
                entry.adapt(loop.time() - granted_at)
        try:
            session = entry.open(self._connections)
        except BaseException:
            entry.hand_on()  # nothing to send on (the TLS settings or the proxy are unusable)
            raise
        return Lease(entry, session)

    async def aclose(self) -> None:
        """Close the connections of the running loop (a later request opens new ones)."""
        loop = asyncio.get_running_loop()
        origins = self._loops.pop(loop, {})
        for entry in origins.values():
            if entry.session is not None:
                await entry.session.close()


_shared: HttpClientPool | None = None


def _drop_shared() -> None:
    # At exit, before the modules its connections use are torn down: an origin's
    # sessions close quietly while aiohttp is still whole.
    global _shared
    _shared = None


def shared_http_clients() -> HttpClientPool:
    """The HttpClientPool the harnesses of a process share unless told otherwise (a
    generated module's ``build_options`` gives it): an adaptive cap per origin, one
    set of keep-alive connections per event loop. Closing a harness never closes it;
    a finished loop's connections close when the loop is dropped, or with
    ``await shared_http_clients().aclose()`` on the loop."""
    global _shared
    if _shared is None:
        _shared = HttpClientPool(max_concurrent=None)
        atexit.register(_drop_shared)
    return _shared

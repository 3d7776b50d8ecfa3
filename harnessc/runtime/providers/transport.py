"""One HTTP exchange of a provider request, with bounded memory, and the clients it uses.

``HttpClientPool`` keeps one ``httpx.AsyncClient`` per event loop and origin
(scheme, host, port) and caps the requests in flight per origin (``max_concurrent``,
default 64): a request over the cap waits for a free slot (bounded only by the
request's total deadline, not by ``timeout_ms``). Providers of many harnesses in one
process can share one pool, and so one set of keep-alive connections per base URL.

``exchange`` sends one POST and passes the response on through a bounded queue: its
head, then body pieces, then the end or the failure. It decodes gzip and deflate
itself in pieces of at most 256 KiB, so a compressed bomb never inflates at once, and
stops a body that decodes to more than ``MAX_RESPONSE_BYTES`` (64 MiB) or, for an
error or non-stream answer, reads at most ``MAX_ERROR_BODY`` (64 KiB).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from harnessc.runtime.providers.channel import Channel
from harnessc.runtime.providers.errors import ProviderError

__all__ = [
    "ACCEPT_ENCODING",
    "DEFAULT_MAX_CONCURRENT",
    "MAX_ERROR_BODY",
    "MAX_RESPONSE_BYTES",
    "BodyDecoder",
    "HttpClientPool",
    "exchange",
    "is_event_stream",
]

HEAD, BODY, CHUNK, END, FAIL = range(5)
DEFAULT_MAX_CONCURRENT = 64
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_ERROR_BODY = 64 * 1024
ACCEPT_ENCODING = "gzip, deflate"
_PIECE = 256 * 1024
_DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=30.0)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process: building it costs tens of milliseconds."""
    return httpx.create_ssl_context()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or ''}"


# Connections per httpx client: httpcore scans its whole pool for every queued request
# and every connection on each request's start and end, so one client holding hundreds
# of connections costs quadratic CPU; an origin's requests spread over clients of at
# most this many connections, and no request ever waits inside httpcore.
SHARD_CONNECTIONS = 8


class _Shard:
    __slots__ = ("client", "busy")

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.busy = 0


class _Origin:
    """One origin on one loop: its request slots and its clients."""

    __slots__ = ("slots", "shards", "secure")

    def __init__(self, max_concurrent: int, secure: bool) -> None:
        self.slots = asyncio.Semaphore(max_concurrent)
        self.shards: list[_Shard] = []
        self.secure = secure

    def new_client(self, connections: int) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            # A plain-http client needs no TLS context (saves tens of ms locally).
            verify=_ssl_context() if self.secure else False,
            timeout=_DEFAULT_TIMEOUT,
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
        key = _origin(url)
        entry = origins.get(key)
        if entry is None:
            entry = origins[key] = _Origin(self.max_concurrent, not url.startswith("http://"))
        return entry

    def client(self, url: str) -> httpx.AsyncClient:
        """A client for ``url``'s origin on the running loop."""
        return self._entry(url).pick(self._connections()).client

    @contextlib.asynccontextmanager
    async def slot(self, url: str) -> AsyncIterator[httpx.AsyncClient]:
        """Hold one of the origin's ``max_concurrent`` request slots."""
        entry = self._entry(url)
        async with entry.slots:
            shard = entry.pick(self._connections())
            shard.busy += 1
            try:
                yield shard.client
            finally:
                shard.busy -= 1

    async def aclose(self) -> None:
        """Close the clients of the running loop (a later request opens new ones)."""
        loop = asyncio.get_running_loop()
        origins = self._loops.pop(loop, {})
        for entry in origins.values():
            for shard in entry.shards:
                await shard.client.aclose()


def is_event_stream(content_type: str) -> bool:
    """False for the answers that are surely not an event stream (JSON, HTML)."""
    kind = content_type.split(";", 1)[0].strip().lower()
    return not (kind.endswith("json") or kind in ("text/html", "application/xhtml+xml"))


class BodyDecoder:
    """Undoes a gzip or deflate content encoding in bounded pieces."""

    __slots__ = ("_mode", "_z", "_out")

    def __init__(self, encoding: str) -> None:
        mode = encoding.strip().lower()
        if mode in ("", "identity"):
            self._mode = ""
        elif mode in ("gzip", "x-gzip"):
            self._mode = "gzip"
        elif mode == "deflate":
            self._mode = "deflate"
        else:
            raise ProviderError(
                f"the server used the content encoding {encoding!r}, which is not "
                f"supported (requests ask for {ACCEPT_ENCODING!r})"
            )
        self._z: Any = self._new()
        self._out = 0  # bytes produced so far

    def _new(self) -> Any:
        if self._mode == "gzip":
            return zlib.decompressobj(zlib.MAX_WBITS | 16)
        if self._mode == "deflate":
            return zlib.decompressobj(zlib.MAX_WBITS)
        if self._mode == "raw":
            return zlib.decompressobj(-zlib.MAX_WBITS)
        return None

    def decode(self, data: bytes) -> Iterator[bytes]:
        if self._z is None:
            yield data
            return
        more = True
        while more:
            try:
                out = self._z.decompress(data, _PIECE)
            except zlib.error as exc:
                if self._mode == "deflate" and self._out == 0:
                    self._mode = "raw"  # raw deflate without the zlib wrapper
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                name = "gzip" if self._mode == "gzip" else "deflate"
                raise ProviderError(f"the response body is not valid {name} data: {exc}") from None
            if out:
                self._out += len(out)
                yield out
            if self._z.eof:
                data = self._z.unused_data
                if data and self._mode == "gzip":  # another gzip member
                    self._z = self._new()
                    continue
                return  # anything after the end of a deflate stream is ignored
            data = self._z.unconsumed_tail
            more = bool(data) or len(out) == _PIECE  # drain output still held back


def _too_big(limit: int) -> ProviderError:
    return ProviderError(
        f"the response body decoded to more than the limit of {limit // (1024 * 1024)} MiB; "
        "the server's answer is broken"
    )


async def exchange(
    clients: HttpClientPool,
    url: str,
    headers: dict[str, str],
    body: bytes,
    timeout: httpx.Timeout,
    queue: Channel[tuple[Any, ...]],
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> None:
    """Send one request and pass its head, body pieces and end (or failure) on."""
    try:
        async with (
            clients.slot(url) as client,
            client.stream("POST", url, headers=headers, content=body, timeout=timeout) as response,
        ):
            status = response.status_code
            response_headers = dict(response.headers)
            content_type = response_headers.get("content-type", "")
            await queue.put((HEAD, status, response_headers))
            decoder = BodyDecoder(response_headers.get("content-encoding", ""))
            if status >= 300 or not is_event_stream(content_type):
                raw = bytearray()
                async for data in response.aiter_raw():
                    for piece in decoder.decode(data):
                        raw += piece
                        if len(raw) > MAX_ERROR_BODY:
                            break
                    if len(raw) > MAX_ERROR_BODY:
                        break
                await queue.put((BODY, bytes(raw[:MAX_ERROR_BODY])))
            else:
                total = 0
                async for data in response.aiter_raw():
                    for piece in decoder.decode(data):
                        total += len(piece)
                        if total > max_bytes:
                            raise _too_big(max_bytes)
                        await queue.put((CHUNK, piece))
            await queue.put((END,))
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        await queue.put((FAIL, exc))

"""One HTTP exchange of a provider request, with bounded memory.

The client sessions it sends on and the cap on requests in flight are ``clients.py``
(``HttpClientPool``, re-exported here).

``exchange`` sends one POST through aiohttp and passes the response on through a
bounded queue: its head, then body pieces, then the end or the failure. It decodes
gzip and deflate itself in pieces of at most 256 KiB, so a compressed bomb never
inflates at once, and stops a body that decodes to more than ``MAX_RESPONSE_BYTES``
(64 MiB) or, for an error or non-stream answer, reads at most ``MAX_ERROR_BODY``
(64 KiB).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from harnessc import __version__
from harnessc.runtime.providers.channel import Channel
from harnessc.runtime.providers.clients import (
    DEFAULT_MAX_CONCURRENT,
    HttpClientPool,
    Proxy,
    Timeout,
)
from harnessc.runtime.providers.errors import ProviderError

if TYPE_CHECKING:
    from aiohttp import ClientSession, ClientTimeout

__all__ = [
    "ACCEPT_ENCODING",
    "DEFAULT_MAX_CONCURRENT",
    "MAX_ERROR_BODY",
    "MAX_RESPONSE_BYTES",
    "BodyDecoder",
    "HttpClientPool",
    "exchange",
    "is_event_stream",
    "request_headers",
]

HEAD, BODY, CHUNK, END, FAIL = range(5)
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
MAX_ERROR_BODY = 64 * 1024
ACCEPT_ENCODING = "gzip, deflate"
_PIECE = 256 * 1024
# Sent unless the request's own headers say otherwise.
_DEFAULT_HEADERS = {
    "accept": "*/*",
    "connection": "keep-alive",
    "user-agent": f"harnessc/{__version__}",
}


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


def request_headers(headers: dict[str, str]) -> list[tuple[str, str]]:
    """The header lines of a request: its own (lowercase names, as
    ``wire.merge_headers`` gives them) over the defaults; the host and the body's
    length are aiohttp's."""
    lines = [(k, v) for k, v in _DEFAULT_HEADERS.items() if k not in headers]
    lines += [(k, v) for k, v in headers.items() if k not in ("host", "content-length")]
    return lines


@functools.lru_cache(maxsize=64)
def _client_timeout(connect: float, read: float) -> ClientTimeout:
    import aiohttp

    # Connecting (to the server or the proxy) and each read of the answer; the whole
    # head, and the request's total, are the driver's (``attempt``, ``clock``).
    return aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read)


@functools.lru_cache(maxsize=16)
def _proxy_headers(user: str, password: str) -> dict[str, str]:
    """The header that gives a proxy its user and password (Basic)."""
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return {"Proxy-Authorization": f"Basic {token}"}


def _header_map(headers: Any) -> dict[str, str]:
    """Response headers by lowercase name; a repeated one's values joined by commas."""
    out: dict[str, str] = {}
    for raw_name, value in headers.items():
        name = raw_name.lower()
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


async def exchange(
    session: ClientSession,
    url: str,
    headers: dict[str, str],
    body: bytes,
    timeout: Timeout,
    queue: Channel[tuple[Any, ...]],
    proxy: Proxy | None = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> None:
    """Send one request and pass its head, body pieces and end (or failure) on."""
    lines = request_headers(headers)
    if "@" in url:  # user info in base_url is never sent (aiohttp would send it as auth)
        parts = urlsplit(url)
        url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    to_proxy = None
    if proxy is not None and proxy.auth:
        # A plain-http request goes to the proxy whole, with its credentials; an https
        # one goes inside the tunnel, so only the CONNECT carries them.
        if url.startswith("http:"):
            lines += _proxy_headers(*proxy.auth).items()
        else:
            to_proxy = _proxy_headers(*proxy.auth)
    try:
        async with session.post(
            url,
            data=body,
            headers=lines,
            allow_redirects=False,
            timeout=_client_timeout(timeout.connect, timeout.read),
            proxy=proxy.url if proxy is not None else None,
            proxy_headers=to_proxy,
        ) as response:
            status = response.status
            response_headers = _header_map(response.headers)
            content_type = response_headers.get("content-type", "")
            await queue.put((HEAD, status, response_headers))
            decoder = BodyDecoder(response_headers.get("content-encoding", ""))
            chunks = response.content.iter_any()
            if status >= 300 or not is_event_stream(content_type):
                raw = bytearray()
                async for data in chunks:
                    for piece in decoder.decode(data):
                        raw += piece
                        if len(raw) > MAX_ERROR_BODY:
                            break
                    if len(raw) > MAX_ERROR_BODY:
                        break
                await queue.put((BODY, bytes(raw[:MAX_ERROR_BODY])))
            else:
                total = 0
                async for data in chunks:
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

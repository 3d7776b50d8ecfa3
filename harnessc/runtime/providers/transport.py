"""One HTTP exchange of a provider request, with bounded memory.

The connection pools it sends on and the cap on requests in flight are ``clients.py``
(``HttpClientPool``, re-exported here).

``exchange`` sends one POST through httpcore and passes the response on through a
bounded queue: its head, then body pieces, then the end or the failure. It decodes
gzip and deflate itself in pieces of at most 256 KiB, so a compressed bomb never
inflates at once, and stops a body that decodes to more than ``MAX_RESPONSE_BYTES``
(64 MiB) or, for an error or non-stream answer, reads at most ``MAX_ERROR_BODY``
(64 KiB).
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx

from harnessc import __version__
from harnessc.runtime.providers.channel import Channel
from harnessc.runtime.providers.clients import DEFAULT_MAX_CONCURRENT, HttpClientPool
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


def request_headers(url: str, headers: dict[str, str], body: bytes) -> list[tuple[str, str]]:
    """The header lines of a POST of ``body`` to ``url``: the request's own (lowercase
    names, as ``wire.merge_headers`` gives them), over the defaults, with the host
    and the body's length."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default_port = 443 if parts.scheme == "https" else 80
    if parts.port and parts.port != default_port:
        host += f":{parts.port}"
    lines = [("host", host)]
    lines += [(k, v) for k, v in _DEFAULT_HEADERS.items() if k not in headers]
    lines += [(k, v) for k, v in headers.items() if k not in ("host", "content-length")]
    lines.append(("content-length", str(len(body))))
    return lines


def _request_url(url: str) -> httpcore.URL:
    """``url`` for httpcore, an IPv6 literal host kept in its brackets: httpcore writes
    the host as it holds it into a proxy's request line and CONNECT target (the
    connection backend takes the brackets off)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" not in host:
        return httpcore.URL(url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return httpcore.URL(
        scheme=parts.scheme.encode("ascii"),
        host=f"[{host}]".encode("ascii"),
        port=parts.port,
        target=target.encode("ascii"),
    )


def _header_map(lines: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Response header lines by lowercase name; a repeated one's values joined by commas."""
    out: dict[str, str] = {}
    for raw_name, raw_value in lines:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


async def exchange(
    pool: httpcore.AsyncConnectionPool,
    url: str,
    headers: dict[str, str],
    body: bytes,
    timeout: httpx.Timeout,
    queue: Channel[tuple[Any, ...]],
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> None:
    """Send one request and pass its head, body pieces and end (or failure) on."""
    try:
        request = httpcore.Request(
            "POST",
            _request_url(url),
            headers=request_headers(url, headers, body),
            content=body,
            extensions={"timeout": timeout.as_dict()},
        )
        response = await pool.handle_async_request(request)
        try:
            status = response.status
            response_headers = _header_map(response.headers)
            content_type = response_headers.get("content-type", "")
            await queue.put((HEAD, status, response_headers))
            decoder = BodyDecoder(response_headers.get("content-encoding", ""))
            chunks = response.aiter_stream()
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
        finally:
            await response.aclose()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        await queue.put((FAIL, exc))

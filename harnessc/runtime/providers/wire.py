"""What a wire protocol needs from the HTTP driver: the request it builds, the stream
state it feeds, the message encodings it keeps, and small helpers for URLs and headers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

from harnessc.runtime.providers.base import ProviderRequest
from harnessc.runtime.providers.builder import MessageBuilder

__all__ = [
    "HttpRequestSpec",
    "StreamState",
    "WireCache",
    "is_local_url",
    "join_url",
    "merge_headers",
]


class StreamState(Protocol):
    """One protocol's reading of an event stream into a MessageBuilder."""

    builder: MessageBuilder
    done: bool  # the provider said the reply is complete

    def __init__(self, builder: MessageBuilder) -> None:
        """A state reading into ``builder``."""
        ...

    def handle(self, event: str, data: str) -> None:
        """Apply one SSE event; raises ProviderError for an error the stream reports."""
        ...

    def end(self) -> None:
        """The response body ended: settle ``done`` (or raise a ProviderError)."""
        ...


class WireCache(Protocol):
    """A wire module's encodings of history messages, kept between one provider's
    requests so a long session's request encodes only what changed."""

    def __init__(self) -> None:
        """An empty store."""
        ...

    def body(self, request: ProviderRequest) -> bytes:
        """The payload of ``request`` as UTF-8 JSON, from the kept encodings."""
        ...


class HttpRequestSpec:
    """What to send: URL, headers (lower-case names, defaults + auth) and payload.

    ``body``: the payload already encoded (UTF-8 JSON), given instead of ``payload``
    when no ``before_provider_payload`` hook is to see the payload.
    """

    __slots__ = ("url", "headers", "payload", "body")

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        payload: dict[str, Any] | None,
        body: bytes | None = None,
    ) -> None:
        self.url = url
        self.headers = headers
        self.payload = payload
        self.body = body


def is_local_url(url: str) -> bool:
    """True for a base URL on this machine (local servers need no API key)."""
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "127.0.0.1", "::1", "0.0.0.0") or host.endswith(".localhost")


def join_url(base: str, path: str) -> str:
    return base.rstrip("/") + "/" + path.lstrip("/")


def merge_headers(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """Header layers merged left to right, names compared case-insensitively."""
    out: dict[str, str] = {}
    for layer in layers:
        if layer:
            for key, value in layer.items():
                out[key.lower()] = value
    return out

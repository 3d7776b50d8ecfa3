"""What a wire protocol needs from the HTTP driver: the request it builds, the stream
state it feeds, and small helpers for URLs, headers and JSON event payloads."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

from harnessc.runtime.providers.builder import MessageBuilder
from harnessc.runtime.providers.errors import ProviderError
from harnessc.runtime.providers.sse import SSEParser

__all__ = [
    "HttpRequestSpec",
    "StreamState",
    "feed_sse",
    "is_local_url",
    "json_data",
    "join_url",
    "merge_headers",
    "object_or_skip",
    "text_field",
    "token_count",
]


class StreamState(Protocol):
    """One protocol's reading of an event stream into a MessageBuilder."""

    builder: MessageBuilder
    done: bool  # the provider said the reply is complete

    def handle(self, event: str, data: str) -> None:
        """Apply one SSE event; raises ProviderError for an error the stream reports."""
        ...

    def end(self) -> None:
        """The response body ended: settle ``done`` (or raise a ProviderError)."""
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


def feed_sse(parser: SSEParser, state: StreamState, chunk: bytes) -> None:
    """Parse one chunk of bytes and apply its events (the benchmark's entry point)."""
    for event, data in parser.feed(chunk):
        state.handle(event, data)


# The decoder's scanner, called directly: json.loads adds two Python frames and two
# whitespace regex matches per call, a third of the cost of a small delta frame.
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def json_data(data: str) -> Any:
    """Decode one SSE data payload; invalid JSON becomes a ProviderError."""
    try:
        value, end = _scan_once(data, 0)
    except (StopIteration, ValueError):
        value, end = None, -1
    except RecursionError:
        raise ProviderError("an event of the stream nests too deep to decode") from None
    if end == len(data) or (end > 0 and not data[end:].strip()):
        return value
    try:  # leading whitespace or another oddity the fast path does not take
        return json.loads(data)
    except ValueError:
        shown = data if len(data) <= 200 else data[:200] + "..."
        raise ProviderError(f"invalid JSON in the event stream: {shown!r}") from None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def object_or_skip(
    value: Any, what: str, builder: MessageBuilder, item: bool = False
) -> dict[str, Any] | None:
    """``value`` when it is a JSON object; None when absent (null, unless it is an
    ``item`` of a list); for anything else a warning on ``builder`` (the piece is
    skipped, the reply goes on) and None."""
    if type(value) is dict:
        return value
    if value is not None or item:
        builder.warn(f"the provider sent {what} that is not an object ({_shown(value)}); skipped")
    return None


def text_field(raw: Mapping[str, Any], name: str, builder: MessageBuilder) -> str:
    """``raw[name]`` when it is a string, else "" (with a warning when it is something
    else: the piece is skipped, the reply goes on)."""
    value = raw.get(name)
    if type(value) is str:
        return value
    if value is not None:
        builder.warn(f"the provider sent a {name} that is not a string ({_shown(value)}); skipped")
    return ""


def token_count(raw: Mapping[str, Any], name: str, builder: MessageBuilder) -> int | None:
    """``raw[name]`` as a token count, None when absent. Usage is advisory: a value that
    is not a count is a warning on ``builder`` (and None), never a failed reply."""
    value = raw.get(name)
    if value is None:
        return None
    if type(value) is int and value >= 0:
        return value
    if type(value) is float and value >= 0 and value.is_integer():
        return int(value)
    if type(value) is str and value.isdigit() and len(value) < 20:
        return int(value)
    builder.warn(
        f"the provider's usage report gives {name} as {_shown(value)}, not a token count; "
        "the reply is kept, its token counts may be wrong"
    )
    return None

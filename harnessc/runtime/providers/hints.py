"""What a failed request means and what to check: the text of every HTTP failure.

Retried are only the failures that can pass by themselves: timeouts, a connection
lost or reset, 408/409/429 and 5xx other than 501. A refused connection, a host name
that does not resolve, a TLS failure, 501 and every other 4xx fail at once, with a
hint naming what to check (the server, the key's variable, ``base_url``).
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpcore

from harnessc.runtime.options import Model
from harnessc.runtime.providers.clock import TOTAL_FACTOR, RequestClock
from harnessc.runtime.providers.errors import (
    ProviderError,
    error_text_from_body,
    is_context_overflow_text,
    redact_url,
    reported_error,
)
from harnessc.runtime.providers.retry import is_retryable_status, parse_retry_after_ms

if TYPE_CHECKING:
    from harnessc.runtime.providers.sse import SSEParser

__all__ = [
    "answer_error",
    "describe_transport_error",
    "interrupted_error",
    "status_hint",
    "transport_error",
    "where",
]


def _server(url: str) -> str:
    """``scheme://host:port`` of ``url``, without user info ("" if not a URL)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return ""
    if not parts.scheme or not host:
        return ""
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def where(url: str) -> str:
    """``url`` as shown in a message: no user info, no query string."""
    server = _server(url)
    return server + urlsplit(url).path if server else redact_url(url)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        for nxt in (current.__cause__, current.__context__):
            if nxt is not None:
                todo.append(nxt)


def _base(url: str) -> str:
    """The server part of ``url`` (what ``is the server running at`` names)."""
    return _server(url) or redact_url(url)


# What a request was doing when it timed out, by httpcore's exception.
_TIMEOUT_PHASES: dict[type[BaseException], str] = {
    httpcore.ConnectTimeout: "connecting",
    httpcore.ReadTimeout: "waiting for data",
    httpcore.WriteTimeout: "sending",
    httpcore.PoolTimeout: "waiting for a connection",
}


def describe_transport_error(
    exc: BaseException, timeout_ms: int | None, url: str
) -> tuple[str, bool]:
    """``(message, retryable)`` for an exception raised while sending or reading."""
    at = where(url)
    if isinstance(exc, httpcore.TimeoutException):
        limit = f" after {timeout_ms} ms" if timeout_ms else ""
        phase = _TIMEOUT_PHASES.get(type(exc), "waiting")
        return f"request timed out{limit} ({phase}; {at})", True
    causes = list(_causes(exc))
    if any(isinstance(c, socket.gaierror) for c in causes):
        host = urlsplit(url).hostname or url
        return (
            f"cannot resolve the host name {host!r} ({at}): check base_url and the network",
            False,
        )
    if any(
        isinstance(c, ConnectionRefusedError)
        or (isinstance(c, OSError) and c.errno == errno.ECONNREFUSED)
        for c in causes
    ):
        return f"connection refused ({at}): is the server running at {_base(url)}?", False
    if any(isinstance(c, ssl.SSLError) for c in causes):
        return (
            f"TLS failure ({at}): {exc}; check the server's certificate and that base_url "
            "uses the right scheme (http or https)",
            False,
        )
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpcore.RemoteProtocolError):
        return f"connection lost ({at}): {text}", True
    if isinstance(exc, httpcore.NetworkError):
        return f"connection error ({at}): {text}", True
    if isinstance(exc, httpcore.ProxyError):
        return f"the proxy refused the request ({at}): {text}", False
    if isinstance(exc, httpcore.UnsupportedProtocol):
        return f"invalid base_url ({at}): {text}", False
    return f"could not send the request ({at}): {type(exc).__name__}: {text}", False


def status_hint(status: int, model: Model, api_key_sent: bool, base_hint: str = "") -> str:
    """What to check after an HTTP error status ("" when nothing useful to say).

    ``base_hint`` is the provider's rule for ``base_url`` (e.g. "ends with /v1").
    """
    if status in (401, 403):
        if not api_key_sent:
            return "no API key was sent: set api_key_env on the model"
        return f"check {model.api_key_env} (the API key for model {model.id!r})"
    if status in (404, 405, 501):
        rule = f"that base_url {base_hint}" if base_hint else "base_url"
        return f"check {rule} and the model id {model.id!r}"
    if status == 400:
        return f"check the model id {model.id!r} and the request options"
    if 300 <= status < 400:
        return "redirects are not followed: set base_url to the new address"
    return ""


def transport_error(exc: BaseException, timeout_ms: int | None, url: str) -> ProviderError:
    """The ProviderError for a failure of the exchange (a ProviderError stays itself)."""
    if isinstance(exc, ProviderError):
        return exc
    message, retryable = describe_transport_error(exc, timeout_ms, url)
    if isinstance(exc, httpcore.TimeoutException):
        kind = "timeout"
    elif isinstance(exc, httpcore.UnsupportedProtocol | httpcore.ProxyError):
        kind = "other"
    else:  # refused, unresolved, TLS, lost: the server cannot be reached
        kind = "connection"
    return ProviderError(message, retryable=retryable, kind=kind)


def interrupted_error(
    kind: str,
    timeout_ms: int | None,
    url: str,
    clock: RequestClock,
    parser: SSEParser | None,
) -> ProviderError:
    """The error for a request the clock stopped (``kind`` from ``Interrupt``)."""
    at = where(url)
    if kind == "idle":
        limit = f"{timeout_ms} ms" if timeout_ms else f"{clock.idle_s:g} s"
        kept = " (the server sent only keepalives)" if parser and parser.comments else ""
        return ProviderError(
            f"request timed out after {limit} without reply data{kept} ({at})",
            retryable=True,
            kind="timeout",
        )
    if kind == "deadline":
        return ProviderError(f"the run's time budget ran out during the model request ({at})")
    if kind == "total":
        total = clock.idle_s * TOTAL_FACTOR
        return ProviderError(
            f"the request took longer than its total limit of {total:g} s "
            f"({TOTAL_FACTOR} x timeout_ms; {at})",
            kind="timeout",
        )
    return ProviderError("aborted")


def answer_error(
    status: int,
    raw: bytes,
    headers: Mapping[str, str],
    model: Model,
    url: str,
    base_hint: str = "",
    secrets: Iterable[str | None] = (),
) -> ProviderError:
    """The error for an HTTP error status, a redirect, or a 2xx that is not a stream,
    with the server's own message (redacted, then cut) and what to check."""
    text = error_text_from_body(raw, secrets=secrets)
    hint = status_hint(status, model, model.api_key() is not None, base_hint)
    if is_context_overflow_text(text):
        hint = ""  # the server said exactly what is wrong
    content_type = headers.get("content-type", "").split(";", 1)[0].strip() or "none"
    if 300 <= status < 400:
        location = headers.get("location")
        target = f" to {where(location)}" if location else ""
        message = f"HTTP {status}: the server redirects{target}"
    elif status >= 400:
        message = f"HTTP {status}: {text or '(no error text)'}"
    elif reported_error(raw) is not None:
        message = f"HTTP {status} with an error from {where(url)}: {text}"
        hint = ""
    else:
        message = (
            f"HTTP {status} without an event stream (content-type {content_type}) from "
            f"{where(url)}: {text or '(an empty body)'}"
        )
        if "html" in content_type:
            hint = f"check that base_url {base_hint}" if base_hint else "check base_url"
        else:
            hint = "check that the server streams replies (server-sent events)"
    return ProviderError(
        f"{message} ({hint})" if hint else message,
        status=status if status >= 300 else None,
        retryable=status >= 400 and is_retryable_status(status),
        retry_after_ms=parse_retry_after_ms(headers),
    )

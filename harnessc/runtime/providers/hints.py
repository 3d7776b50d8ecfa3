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

from harnessc.runtime.core.options import Model
from harnessc.runtime.providers.clock import TOTAL_FACTOR, RequestClock
from harnessc.runtime.providers.errors import (
    ProviderError,
    error_text_from_body,
    is_context_overflow_text,
    redact_url,
    reported_error,
)
from harnessc.runtime.providers.retry import is_retryable_status, parse_retry_after_ms
from harnessc.runtime.support.envref import unresolved_names

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


def _refused(causes: list[BaseException]) -> bool:
    return any(
        isinstance(c, ConnectionRefusedError)
        or (isinstance(c, OSError) and c.errno == errno.ECONNREFUSED)
        for c in causes
    )


def describe_transport_error(
    exc: BaseException, timeout_ms: int | None, url: str, proxy: str = ""
) -> tuple[str, bool]:
    """``(message, retryable)`` for an exception raised while sending or reading
    (aiohttp's, or the operating system's); ``proxy`` names the proxy the request went
    through ("" for none): a connection that cannot be made is then the proxy's."""
    import aiohttp

    at = where(url)
    unset = unresolved_names(url)
    if unset:  # kept as written: its variable was unset when the agent started
        return (
            f"environment variable {unset[0]} is not set (base_url reads it: {at}); set it, "
            "or send every model to one server with --base-url URL or $HARNESSC_BASE_URL",
            False,
        )
    causes = list(_causes(exc))
    if proxy:
        reached = _proxy_unreachable(exc, causes, timeout_ms)
        if reached:
            host = urlsplit(url).hostname or url
            return (
                f"cannot reach the proxy {proxy}: {reached} (the request for {at} goes "
                f"through it; check the proxy, or name {host} in NO_PROXY)",
                isinstance(exc, aiohttp.ConnectionTimeoutError),
            )
    if isinstance(exc, TimeoutError):  # aiohttp's timeouts are among them
        limit = f" after {timeout_ms} ms" if timeout_ms else ""
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            phase = "connecting"
        elif isinstance(exc, aiohttp.SocketTimeoutError):
            phase = "waiting for data"
        else:
            phase = "waiting"
        return f"request timed out{limit} ({phase}; {at})", True
    if isinstance(exc, aiohttp.ClientConnectorDNSError) or any(
        isinstance(c, socket.gaierror) for c in causes
    ):
        host = urlsplit(url).hostname or url
        return (
            f"cannot resolve the host name {host!r} ({at}): check base_url and the network",
            False,
        )
    if _refused(causes):
        return f"connection refused ({at}): is the server running at {_base(url)}?", False
    if isinstance(exc, aiohttp.ClientSSLError) or any(isinstance(c, ssl.SSLError) for c in causes):
        return (
            f"TLS failure ({at}): {exc}; check the server's certificate and that base_url "
            "uses the right scheme (http or https)",
            False,
        )
    text = str(exc) or type(exc).__name__
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        through = f" {proxy}" if proxy else ""
        return f"the proxy{through} refused the request ({at}): {exc.status} {exc.message}", False
    if isinstance(
        exc,
        (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientResponseError),
    ):
        return f"connection lost ({at}): {text}", True
    if isinstance(exc, (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError)):
        return f"invalid base_url ({at}): {text}", False
    if isinstance(exc, (aiohttp.ClientConnectionError, ConnectionError)):
        return f"connection error ({at}): {text}", True
    return f"could not send the request ({at}): {type(exc).__name__}: {text}", False


def _proxy_unreachable(
    exc: BaseException, causes: list[BaseException], timeout_ms: int | None
) -> str:
    """What kept a connection to the proxy from being made ("" when it was made)."""
    import aiohttp

    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return f"connecting timed out after {timeout_ms} ms" if timeout_ms else "timed out"
    if isinstance(exc, aiohttp.ClientConnectorDNSError) or any(
        isinstance(c, socket.gaierror) for c in causes
    ):
        return "its host name does not resolve"
    if _refused(causes):
        return "connection refused"
    if isinstance(exc, aiohttp.ClientProxyConnectionError):
        return str(exc.os_error) or "the connection failed"
    return ""


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


def transport_error(
    exc: BaseException, timeout_ms: int | None, url: str, proxy: str = ""
) -> ProviderError:
    """The ProviderError for a failure of the exchange (a ProviderError stays itself);
    ``proxy`` as for ``describe_transport_error``."""
    if isinstance(exc, ProviderError):
        return exc
    message, retryable = describe_transport_error(exc, timeout_ms, url, proxy)
    return ProviderError(message, retryable=retryable, kind=_transport_kind(exc))


def _transport_kind(exc: BaseException) -> str:
    """timeout, connection (the server cannot be reached or the connection broke), or
    other (an invalid base_url, a proxy's refusal, a bug)."""
    import aiohttp

    if isinstance(exc, TimeoutError):  # aiohttp's timeouts are among them
        return "timeout"
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return "other"
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        return "other"
    if isinstance(exc, aiohttp.ClientError | OSError):  # refused, unresolved, TLS, lost
        return "connection"
    return "other"


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
    if kind == "head":
        limit = f"{timeout_ms} ms" if timeout_ms else f"{clock.idle_s:g} s"
        return ProviderError(
            f"request timed out after {limit} waiting for the response head ({at})",
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

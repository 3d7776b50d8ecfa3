"""The HTTP streaming driver shared by the wire-API providers.

A provider subclass says how to build one request (URL, headers, JSON payload) and
how to read its event stream (a ``StreamState`` fed with SSE events). This module
does the rest the same way for every API: the API-key check, the payload hook,
header merging, sending with retries and backoff, response callbacks, timeouts,
abort, and turning every failure into a final ``error`` event.

``timeout_ms`` bounds each wait on the network (connecting, the response head, every
body chunk), not the whole reply: a long answer that keeps streaming never times out.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

import httpx

from harnessc.runtime.messages import AssistantMessage
from harnessc.runtime.options import Model
from harnessc.runtime.providers.base import AssistantMessageEvent, ProviderRequest, ProviderRetry
from harnessc.runtime.providers.builder import MessageBuilder, finalize_usage
from harnessc.runtime.providers.errors import (
    ProviderError,
    error_text_from_body,
    redact,
    secret_values,
)
from harnessc.runtime.providers.retry import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_DELAY_MS,
    is_retryable_status,
    parse_retry_after_ms,
    retry_delay_ms,
    sleep_unless_aborted,
)
from harnessc.runtime.providers.sse import SSEParser

__all__ = [
    "HttpProvider",
    "HttpRequestSpec",
    "StreamState",
    "feed_sse",
    "is_local_url",
    "json_data",
    "join_url",
    "merge_headers",
]

_HEAD, _BODY, _CHUNK, _END, _FAIL, _ABORT = range(6)
_MAX_ERROR_BODY = 64 * 1024
_DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=30.0)


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
    """What to send: URL, headers (lower-case names, defaults + auth) and payload."""

    __slots__ = ("url", "headers", "payload")

    def __init__(self, url: str, headers: dict[str, str], payload: dict[str, Any]) -> None:
        self.url = url
        self.headers = headers
        self.payload = payload


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One TLS context per process: building it costs tens of milliseconds."""
    return httpx.create_ssl_context()


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
    if end == len(data) or (end > 0 and not data[end:].strip()):
        return value
    try:  # leading whitespace or another oddity the fast path does not take
        return json.loads(data)
    except ValueError:
        shown = data if len(data) <= 200 else data[:200] + "..."
        raise ProviderError(f"invalid JSON in the event stream: {shown!r}") from None


class _Abort:
    """Routes an abort (from any thread) to the running exchange."""

    __slots__ = ("loop", "task", "queue")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.task: asyncio.Task[None] | None = None
        self.queue: asyncio.Queue[tuple[Any, ...]] | None = None

    def __call__(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._fire)
        except RuntimeError:  # loop already closed
            pass

    def _fire(self) -> None:
        if self.task is not None and not self.task.done():
            self.task.cancel()
        if self.queue is not None:
            self.queue.put_nowait((_ABORT,))


def _retryable_exception(exc: BaseException) -> bool:
    """Network trouble may pass; a malformed URL or request never will."""
    return isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError)


def _transport_message(exc: BaseException, timeout_ms: int | None, url: str = "") -> str:
    """A readable transport failure naming where the request went (no query string)."""
    parts = urlsplit(url)
    where = f" ({parts.scheme}://{parts.netloc}{parts.path})" if parts.netloc else ""
    if isinstance(exc, httpx.TimeoutException):
        limit = f" after {timeout_ms} ms" if timeout_ms else ""
        return f"request timed out{limit}{where} ({type(exc).__name__})"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"connection lost{where}: {text}"
    if isinstance(exc, httpx.NetworkError):
        return f"connection error{where}: {text}"
    return f"could not send the request{where}: {type(exc).__name__}: {text}"


class HttpProvider:
    """Base of the providers that stream one HTTP POST per request.

    Keeps one ``httpx.AsyncClient`` per instance (created lazily, recreated when
    used from another event loop) so connections are reused across turns.
    """

    api: ClassVar[str] = ""
    default_provider: ClassVar[str] = ""

    def __init__(self) -> None:
        # One client for https and one for plain http: a plain-http client needs no TLS
        # context, which saves building one (tens of ms) for local servers.
        self._clients: dict[bool, httpx.AsyncClient] = {}
        self._client_loop: asyncio.AbstractEventLoop | None = None

    # -- to implement -------------------------------------------------------------

    def build_request(self, request: ProviderRequest, api_key: str | None) -> HttpRequestSpec:
        raise NotImplementedError

    def new_state(self, builder: MessageBuilder, request: ProviderRequest) -> StreamState:
        raise NotImplementedError

    # -- client -------------------------------------------------------------------

    def http_client(self, secure: bool = True) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client_loop is not loop:
            self._clients = {}
            self._client_loop = loop
        client = self._clients.get(secure)
        if client is None or client.is_closed:
            # Redirects are never followed, so the plain-http client never speaks TLS.
            client = httpx.AsyncClient(
                verify=_ssl_context() if secure else False,
                timeout=_DEFAULT_TIMEOUT,
                limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
                follow_redirects=False,
            )
            self._clients[secure] = client
        return client

    async def aclose(self) -> None:
        """Close the shared HTTP clients (a later request opens new ones)."""
        clients, self._clients = list(self._clients.values()), {}
        if self._client_loop is asyncio.get_running_loop():
            for client in clients:
                await client.aclose()

    # -- streaming ----------------------------------------------------------------

    def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        return self._stream(request)

    async def _stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        model = request.model
        partial = AssistantMessage(
            api=model.api or self.api,
            provider=model.provider or self.default_provider,
            model=model.id,
        )
        builder = MessageBuilder(partial)
        yield AssistantMessageEvent("start", partial)

        api_key = model.api_key()
        if api_key is None and model.api_key_env:
            yield self._final_error(
                builder,
                model,
                ProviderError(
                    f"no API key for model {model.id!r}: set {model.api_key_env} in the environment"
                ),
                [],
            )
            return
        secrets: list[str | None] = list(secret_values(api_key))
        try:
            spec = self.build_request(request, api_key)
        except Exception as exc:
            failure = ProviderError(f"could not build the request: {type(exc).__name__}: {exc}")
            yield self._final_error(builder, model, failure, secrets)
            return
        payload: Any = spec.payload
        if request.on_payload is not None:
            try:
                replaced = await request.on_payload(payload)
            except Exception as exc:
                failure = ProviderError(f"before_provider_payload hook failed: {exc}")
                yield self._final_error(builder, model, failure, secrets)
                return
            if replaced is not None:
                payload = replaced
        options = request.stream_options
        headers = merge_headers(spec.headers, model.headers, options.headers)
        secrets[:] = secret_values(api_key, headers)
        try:
            body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            failure = ProviderError(f"the request payload is not valid JSON: {exc}")
            yield self._final_error(builder, model, failure, secrets)
            return
        timeout_ms = options.timeout_ms
        timeout = httpx.Timeout(timeout_ms / 1000) if timeout_ms else _DEFAULT_TIMEOUT
        max_retries = DEFAULT_MAX_RETRIES if options.max_retries is None else options.max_retries
        max_delay = (
            DEFAULT_MAX_RETRY_DELAY_MS
            if options.max_retry_delay_ms is None
            else options.max_retry_delay_ms
        )

        signal = request.signal
        abort = _Abort(asyncio.get_running_loop())
        remove_listener = signal.add_listener(abort)
        streamed = False
        attempt = 0
        try:
            while True:
                attempt += 1
                error: ProviderError | None = None
                if signal.aborted:
                    yield self._aborted(builder, model, signal.reason)
                    return
                queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
                task = asyncio.get_running_loop().create_task(
                    self._exchange(spec.url, headers, body, timeout, queue)
                )
                abort.task, abort.queue = task, queue
                try:
                    item = await queue.get()
                    kind = item[0]
                    if kind == _ABORT:
                        yield self._aborted(builder, model, signal.reason)
                        return
                    if kind == _FAIL:
                        error = ProviderError(
                            _transport_message(item[1], timeout_ms, spec.url),
                            retryable=_retryable_exception(item[1]),
                        )
                    else:
                        status: int = item[1]
                        response_headers: dict[str, str] = item[2]
                        if request.on_response is not None:
                            try:
                                await request.on_response(status, response_headers)
                            except Exception as exc:
                                raise ProviderError(
                                    f"after_provider_response callback failed: {exc}"
                                ) from exc
                        if status >= 400:
                            item = await queue.get()
                            if item[0] == _ABORT:
                                yield self._aborted(builder, model, signal.reason)
                                return
                            raw = item[1] if item[0] == _BODY else b""
                            error = self._status_error(status, raw, response_headers, api_key)
                        else:
                            parser = SSEParser()
                            state = self.new_state(builder, request)
                            out = builder.out
                            while True:
                                item = await queue.get()
                                kind = item[0]
                                if signal.aborted:
                                    kind = _ABORT
                                if kind == _CHUNK:
                                    if not state.done:
                                        for event, data in parser.feed(item[1]):
                                            state.handle(event, data)
                                            if state.done:
                                                break
                                        if out:
                                            for ev in out:
                                                yield ev
                                            out.clear()
                                            streamed = True
                                    continue
                                if kind == _END:
                                    if not state.done:
                                        for event, data in parser.flush():
                                            state.handle(event, data)
                                    state.end()
                                    if not state.done:
                                        error = ProviderError(
                                            "the stream ended before the reply was complete",
                                            retryable=True,
                                        )
                                    break
                                if kind == _ABORT:
                                    yield self._aborted(builder, model, signal.reason)
                                    return
                                error = ProviderError(
                                    _transport_message(item[1], timeout_ms, spec.url),
                                    retryable=_retryable_exception(item[1]),
                                )
                                break
                            if error is None:
                                builder.finish()
                                for ev in out:
                                    yield ev
                                out.clear()
                                usage = partial.usage
                                finalize_usage(usage, model)
                                prompt = usage.input + usage.cache_read + usage.cache_write
                                if model.context_window and prompt > model.context_window:
                                    partial.context_overflow = True
                                yield AssistantMessageEvent("done", partial)
                                return
                except ProviderError as exc:
                    error = exc
                except Exception as exc:  # an unexpected frame shape, a callback bug
                    error = ProviderError(
                        f"could not read the provider's reply: {type(exc).__name__}: {exc}"
                    )
                finally:
                    if not task.done():
                        task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    abort.task = abort.queue = None

                assert error is not None
                if signal.aborted:
                    yield self._aborted(builder, model, signal.reason)
                    return
                # Output received (even if not yielded yet) is never thrown away by a retry.
                received = streamed or builder.has_content
                if not error.retryable or received or attempt > max_retries:
                    if attempt > 1 and error.retryable and not received:
                        error.message += f" (after {attempt} attempts)"
                    for ev in builder.out:  # deltas decoded together with the failure
                        yield ev
                    builder.out.clear()
                    yield self._final_error(builder, model, error, secrets)
                    return
                delay = retry_delay_ms(attempt, request.retry, error.retry_after_ms, max_delay)
                if request.on_retry is not None:
                    notice = ProviderRetry(
                        attempt=attempt,
                        max_retries=max_retries,
                        delay_ms=delay,
                        status=error.status,
                        error=redact(error.message, secrets),
                    )
                    try:
                        await request.on_retry(notice)
                    except Exception:  # an observer must not break the request
                        pass
                builder.reset()
                if not await sleep_unless_aborted(signal, delay):
                    yield self._aborted(builder, model, signal.reason)
                    return
        finally:
            remove_listener()

    async def _exchange(
        self,
        url: str,
        headers: dict[str, str],
        body: bytes,
        timeout: httpx.Timeout,
        queue: asyncio.Queue[tuple[Any, ...]],
    ) -> None:
        """Send one request and pass its head, body chunks and end (or failure) on."""
        try:
            client = self.http_client(secure=not url.startswith("http://"))
            async with client.stream(
                "POST", url, headers=headers, content=body, timeout=timeout
            ) as response:
                queue.put_nowait((_HEAD, response.status_code, dict(response.headers)))
                if response.status_code >= 400:
                    raw = b""
                    async for chunk in response.aiter_bytes():
                        raw += chunk
                        if len(raw) > _MAX_ERROR_BODY:
                            break
                    queue.put_nowait((_BODY, raw))
                else:
                    async for chunk in response.aiter_bytes():
                        queue.put_nowait((_CHUNK, chunk))
                queue.put_nowait((_END,))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            queue.put_nowait((_FAIL, exc))

    # -- outcomes -----------------------------------------------------------------

    def _status_error(
        self, status: int, raw: bytes, headers: Mapping[str, str], api_key: str | None
    ) -> ProviderError:
        text = error_text_from_body(raw) or "(no error text)"
        message = f"HTTP {status}: {text}"
        if status in (401, 403) and api_key is None:
            message += " (no API key was sent: set api_key_env on the model)"
        return ProviderError(
            message,
            status=status,
            retryable=is_retryable_status(status),
            retry_after_ms=parse_retry_after_ms(headers),
        )

    def _settle(self, builder: MessageBuilder) -> None:
        builder.finish()
        builder.out.clear()

    def _final_error(
        self,
        builder: MessageBuilder,
        model: Model,
        error: ProviderError,
        secrets: list[str | None],
    ) -> AssistantMessageEvent:
        self._settle(builder)
        partial = builder.partial
        partial.stop_reason = "error"
        partial.error_message = redact(error.message, secrets)
        partial.context_overflow = error.context_overflow
        finalize_usage(partial.usage, model)
        return AssistantMessageEvent("error", partial)

    def _aborted(self, builder: MessageBuilder, model: Model, reason: str) -> AssistantMessageEvent:
        self._settle(builder)
        partial = builder.partial
        partial.stop_reason = "aborted"
        partial.error_message = reason or "aborted"
        finalize_usage(partial.usage, model)
        return AssistantMessageEvent("error", partial)

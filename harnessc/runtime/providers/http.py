"""The HTTP streaming driver shared by the wire-API providers.

A provider subclass says how to build one request (URL, headers, JSON payload) and
how to read its event stream (a ``StreamState`` fed with SSE events). This module
does the rest the same way for every API: the API-key check, the payload hook,
header merging, sending with retries and backoff, response callbacks, timeouts
(see ``clock.py`` for what ``timeout_ms`` bounds), abort, and turning every failure
into a final ``error`` event with a readable, redacted message.

The reply is complete at the protocol's end marker (``[DONE]``, ``message_stop``):
a server that keeps the connection open after it, or sends keepalives, does not
delay the reply by more than ``END_GRACE_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import httpx

from harnessc.runtime.messages import AssistantMessage
from harnessc.runtime.options import Model
from harnessc.runtime.providers.base import AssistantMessageEvent, ProviderRequest, ProviderRetry
from harnessc.runtime.providers.builder import MessageBuilder, finalize_usage
from harnessc.runtime.providers.channel import Channel
from harnessc.runtime.providers.clock import Interrupt, RequestClock
from harnessc.runtime.providers.errors import (
    MAX_ERROR_CHARS,
    ProviderError,
    cut_text,
    redact,
    secret_values,
    url_secrets,
)
from harnessc.runtime.providers.hints import answer_error, interrupted_error, transport_error
from harnessc.runtime.providers.retry import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_DELAY_MS,
    retry_delay_ms,
    sleep_unless_aborted,
)
from harnessc.runtime.providers.sse import SSEParser
from harnessc.runtime.providers.text import payload_bytes
from harnessc.runtime.providers.transport import (
    ACCEPT_ENCODING,
    BODY,
    CHUNK,
    END,
    FAIL,
    HttpClientPool,
    exchange,
)
from harnessc.runtime.providers.wire import (
    HttpRequestSpec,
    StreamState,
    feed_sse,
    is_local_url,
    join_url,
    json_data,
    merge_headers,
)

__all__ = [
    "END_GRACE_S",
    "HttpProvider",
    "HttpRequestSpec",
    "StreamState",
    "feed_sse",
    "is_local_url",
    "json_data",
    "join_url",
    "merge_headers",
]

_DEFAULT_TIMEOUT = httpx.Timeout(600.0, connect=30.0)
# How long the end of the body may lag behind the protocol's end marker.
END_GRACE_S = 0.05


class _Attempt:
    """What one attempt came to: the final event, or the error to retry or report."""

    __slots__ = ("final", "error", "streamed")

    def __init__(self) -> None:
        self.final: AssistantMessageEvent | None = None
        self.error: ProviderError | None = None
        self.streamed = False  # events of this reply were yielded


class HttpProvider:
    """Base of the providers that stream one HTTP POST per request.

    Sends through ``clients`` (an ``HttpClientPool``: one httpx client per event loop
    and origin, connections reused across turns). A provider made without one owns a
    private pool and closes it in ``aclose``; a shared pool is closed by its owner.
    """

    api: ClassVar[str] = ""
    default_provider: ClassVar[str] = ""
    # What base_url must look like, for the hint of a 404 ("ends with /v1").
    base_url_hint: ClassVar[str] = ""

    def __init__(self, clients: HttpClientPool | None = None) -> None:
        self._owns_clients = clients is None
        self.clients = clients if clients is not None else HttpClientPool()

    # -- to implement -------------------------------------------------------------

    def build_request(self, request: ProviderRequest, api_key: str | None) -> HttpRequestSpec:
        raise NotImplementedError

    def new_state(self, builder: MessageBuilder, request: ProviderRequest) -> StreamState:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the HTTP clients this provider owns (a later request opens new ones)."""
        if self._owns_clients:
            await self.clients.aclose()

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
        secrets: list[str | None] = [*secret_values(api_key), *url_secrets(model.base_url)]
        if api_key is None and model.api_key_env:
            message = (
                f"no API key for model {model.id!r}: set {model.api_key_env} in the environment"
            )
            yield self._final_error(builder, model, ProviderError(message), secrets)
            return
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
            del replaced
        options = request.stream_options
        headers = merge_headers(
            {"accept-encoding": ACCEPT_ENCODING}, spec.headers, model.headers, options.headers
        )
        secrets = [*secret_values(api_key, headers), *url_secrets(spec.url)]
        try:
            body = payload_bytes(payload)
        except (TypeError, ValueError, RecursionError) as exc:
            failure = ProviderError(f"the request payload is not valid JSON: {exc}")
            yield self._final_error(builder, model, failure, secrets)
            return
        # Only the encoded body is needed from here on: the payload's dicts (every
        # message of the context again) are not kept while the request waits and streams.
        url = spec.url
        del spec, payload
        timeout_ms = options.timeout_ms
        timeout = httpx.Timeout(timeout_ms / 1000) if timeout_ms else _DEFAULT_TIMEOUT
        max_retries = DEFAULT_MAX_RETRIES if options.max_retries is None else options.max_retries
        max_delay = (
            DEFAULT_MAX_RETRY_DELAY_MS
            if options.max_retry_delay_ms is None
            else options.max_retry_delay_ms
        )

        signal = request.signal
        loop = asyncio.get_running_loop()
        clock = RequestClock(loop, timeout_ms, request.deadline)
        current = [Interrupt()]

        def on_abort() -> None:  # may run in any thread
            try:
                loop.call_soon_threadsafe(lambda: current[0].trip("abort"))
            except RuntimeError:  # loop already closed
                pass

        remove_listener = signal.add_listener(on_abort)
        attempt = 0
        try:
            while True:
                attempt += 1
                if signal.aborted:
                    yield self._aborted(builder, model, signal.reason)
                    return
                interrupt = current[0] = Interrupt()
                outcome = _Attempt()
                async for event in self._attempt(
                    url,
                    headers,
                    body,
                    timeout,
                    request,
                    builder,
                    clock,
                    interrupt,
                    outcome,
                    secrets,
                ):
                    yield event
                if outcome.final is not None:
                    yield outcome.final
                    return
                error = outcome.error
                assert error is not None
                if signal.aborted or interrupt.kind == "abort":
                    yield self._aborted(builder, model, signal.reason)
                    return
                # Output received (even if not yielded yet) is never thrown away by a retry.
                received = outcome.streamed or builder.has_content
                delay = retry_delay_ms(attempt, request.retry, error.retry_after_ms, max_delay)
                no_time = error.retryable and delay / 1000 >= clock.left_s()
                if not error.retryable or received or attempt > max_retries or no_time:
                    if attempt > 1 and error.retryable and not received:
                        error.message += f" (after {attempt} attempts)"
                    if no_time and not received and attempt <= max_retries:
                        error.message += " (no time left to retry)"
                    for ev in builder.out:  # deltas decoded together with the failure
                        yield ev
                    builder.out.clear()
                    yield self._final_error(builder, model, error, secrets)
                    return
                if request.on_retry is not None:
                    shown = error.message
                    prefix = f"HTTP {error.status}: "
                    if error.status is not None and shown.startswith(prefix):
                        shown = shown[len(prefix) :]  # the retry line shows the status itself
                    notice = ProviderRetry(
                        attempt=attempt,
                        max_retries=max_retries,
                        delay_ms=delay,
                        status=error.status,
                        error=cut_text(redact(shown, secrets), MAX_ERROR_CHARS),
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

    async def _attempt(
        self,
        url: str,
        headers: dict[str, str],
        body: bytes,
        timeout: httpx.Timeout,
        request: ProviderRequest,
        builder: MessageBuilder,
        clock: RequestClock,
        interrupt: Interrupt,
        outcome: _Attempt,
        secrets: list[str | None],
    ) -> AsyncIterator[AssistantMessageEvent]:
        """One exchange: yields the reply's events, leaves the result in ``outcome``."""
        model = request.model
        timeout_ms = request.stream_options.timeout_ms
        queue: Channel[tuple[Any, ...]] = Channel(64)
        task = asyncio.get_running_loop().create_task(
            exchange(self.clients, url, headers, body, timeout, queue)
        )
        interrupt.task, interrupt.queue = task, queue
        clock.arm(interrupt)
        parser: SSEParser | None = None
        try:
            item = await queue.get()
            if interrupt.kind:
                outcome.error = interrupted_error(interrupt.kind, timeout_ms, url, clock, parser)
                return
            if item[0] == FAIL:
                outcome.error = transport_error(item[1], timeout_ms, url)
                return
            status: int = item[1]
            response_headers: dict[str, str] = item[2]
            if request.on_response is not None:
                try:
                    await request.on_response(status, response_headers)
                except Exception as exc:
                    outcome.error = ProviderError(f"after_provider_response callback failed: {exc}")
                    return
            clock.begin_content()
            item = await queue.get()
            if interrupt.kind:
                outcome.error = interrupted_error(interrupt.kind, timeout_ms, url, clock, parser)
                return
            if item[0] == BODY:
                outcome.error = answer_error(
                    status, item[1], response_headers, model, url, self.base_url_hint, secrets
                )
                return
            parser = SSEParser()
            state = self.new_state(builder, request)
            out = builder.out
            while True:
                kind = item[0]
                if kind == CHUNK:
                    for event, data in parser.feed(item[1]):
                        state.handle(event, data)
                        if state.done:
                            break
                    if out:
                        clock.last = clock.loop.time()
                        for ev in out:
                            yield ev
                        out.clear()
                        outcome.streamed = True
                    if state.done:
                        break
                elif kind == END:
                    for event, data in parser.flush():
                        state.handle(event, data)
                        if state.done:
                            break
                    if not state.done:
                        state.end()
                    if not state.done:
                        outcome.error = ProviderError(
                            "the stream ended before the reply was complete", retryable=True
                        )
                        return
                    break
                elif kind == FAIL:
                    outcome.error = transport_error(item[1], timeout_ms, url)
                    return
                item = await queue.get()
                if interrupt.kind:
                    if interrupt.kind == "idle":  # a finished reply left open (no end marker)
                        with contextlib.suppress(ProviderError):
                            state.end()
                        if state.done:
                            break
                    outcome.error = interrupted_error(
                        interrupt.kind, timeout_ms, url, clock, parser
                    )
                    return
            outcome.final = self._done(builder, model)
            for ev in out:
                yield ev
            out.clear()
        except ProviderError as exc:
            outcome.error = exc
        except Exception as exc:  # an unexpected frame shape, a callback bug
            outcome.error = ProviderError(
                f"could not read the provider's reply: {type(exc).__name__}: {exc}"
            )
        finally:
            clock.disarm()
            interrupt.task = interrupt.queue = None
            if not task.done() and outcome.final is not None:
                await _await_end(task)  # a well-behaved server's end: keep the connection
            if not task.done():
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    # -- outcomes -----------------------------------------------------------------

    def _done(self, builder: MessageBuilder, model: Model) -> AssistantMessageEvent:
        builder.finish()
        partial = builder.partial
        usage = partial.usage
        finalize_usage(usage, model)
        prompt = usage.input + usage.cache_read + usage.cache_write
        if model.context_window and prompt > model.context_window:
            partial.context_overflow = True
        return AssistantMessageEvent("done", partial)

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
        partial.error_message = cut_text(redact(error.message, secrets), 2 * MAX_ERROR_CHARS)
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


async def _await_end(task: asyncio.Task[None]) -> None:
    """Give the exchange ``END_GRACE_S`` to read the body's end (then it is cut)."""
    await asyncio.wait((task,), timeout=END_GRACE_S)

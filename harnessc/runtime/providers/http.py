"""The HTTP streaming driver shared by the wire-API providers: one request, top to bottom.

``stream`` checks the API key, then waits for one of the origin's request slots
(``clients``) under the request's clock and abort watch (``clock``); ``_attempts``
yields ``start`` and runs the attempts, retrying as the options allow (``retry``). Each
attempt (``attempt.read_attempt``) builds the request on its first run (``prepare``:
``build_request``, the payload hook, the headers, the body), exchanges it
(``transport``) and reads the reply's event stream (``sse``) into the message
(``builder``), which ends it: ``done``, or a final ``error`` event with a readable,
redacted message (``hints``, ``errors``), or an abort.

A wire module (``openai_completions``, ``anthropic_messages``, ``google_generative_ai``)
says what is its own: where a request goes (``url``), its headers (``extra_headers``,
``auth_headers``), its payload (``payload``, made from the history every wire API
accepts: ``convert.wire_sequence``; for a long history no payload hook sees, the body
its ``wire_cache`` joins from the encodings kept since the last request) and how its
event stream reads (``stream_state``). This module does the rest the same way for
every API.

The reply is complete at the protocol's end marker (``[DONE]``, ``message_stop``), at
most ``END_GRACE_S`` before the body's end.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, ClassVar

from harnessc.runtime.core.messages import AssistantMessage
from harnessc.runtime.core.options import Model
from harnessc.runtime.providers.attempt import END_GRACE_S, Attempt, Outgoing, read_attempt
from harnessc.runtime.providers.base import AssistantMessageEvent, ProviderRequest, ProviderRetry
from harnessc.runtime.providers.builder import MessageBuilder
from harnessc.runtime.providers.clients import HttpClientPool, Lease, Timeout
from harnessc.runtime.providers.clock import AbortWatch, Interrupt, RequestClock
from harnessc.runtime.providers.convert import KEEP_FROM, WireMessage, wire_sequence
from harnessc.runtime.providers.errors import (
    MAX_ERROR_CHARS,
    ProviderError,
    cut_text,
    header_value_problem,
    redact,
    request_secrets,
    secret_values,
    url_secrets,
)
from harnessc.runtime.providers.sse import feed_sse, json_data
from harnessc.runtime.providers.text import payload_bytes
from harnessc.runtime.providers.transport import ACCEPT_ENCODING
from harnessc.runtime.providers.wire import (
    HttpRequestSpec,
    StreamState,
    WireCache,
    is_local_url,
    join_url,
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

_JSON_HEADERS = {"content-type": "application/json", "accept": "text/event-stream"}


class HttpProvider:
    """Base of the providers that stream one HTTP POST per request.

    Sends through ``clients`` (an ``HttpClientPool``: keep-alive connections per event
    loop and origin, reused across turns). A provider made without one owns a
    private pool and closes it in ``aclose``; a shared pool is closed by its owner.
    """

    # Slots: a process may hold a provider for each of a thousand harnesses.
    __slots__ = ("_owns_clients", "clients", "_wire")

    api: ClassVar[str] = ""
    default_provider: ClassVar[str] = ""
    # What base_url must look like, for the hint of a 404 ("ends with /v1").
    base_url_hint: ClassVar[str] = ""
    # The base URL of a model that names none (where its requests wait for a slot and
    # which origin they must go to; a subclass without one queues them all together).
    default_base_url: ClassVar[str] = ""
    # Headers of every request besides the JSON ones and the authentication.
    extra_headers: ClassVar[dict[str, str]] = {}
    # How the reply's event stream reads.
    stream_state: ClassVar[type[StreamState]]
    # The message encodings kept between requests, for a long history no hook sees.
    wire_cache: ClassVar[type[WireCache]]

    def __init__(self, clients: HttpClientPool | None = None) -> None:
        self._owns_clients = clients is None
        self.clients = clients if clients is not None else HttpClientPool()
        self._wire: WireCache | None = None  # made by the first long request

    # -- a request, top to bottom ---------------------------------------------------

    def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        return self._stream(request)

    async def _stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        """The reply's events: ``start`` once the request holds a slot, then its content.

        The reply is made only then, so a request waiting for a slot holds no message;
        its attempts (``_attempts``) are a generator of their own, made then too, so
        the wait holds only this small frame, the clock and the abort watch.
        """
        model = request.model
        api_key = model.api_key()
        problem = header_value_problem(api_key) if api_key is not None else ""
        if (api_key is None or problem) and model.api_key_env:
            message = (
                f"no API key for model {model.id!r}: set {model.api_key_env} in the environment"
                if not problem
                else f"the API key in {model.api_key_env} (model {model.id!r}) holds {problem}, "
                "which HTTP does not allow; no request was sent (check the variable: a key "
                "file read whole may hold a second line)"
            )
            builder = self._builder(model)
            yield AssistantMessageEvent("start", builder.partial)
            error = ProviderError(message, kind="auth")
            yield builder.failed(model, error, request_secrets(api_key, model.base_url))
            return
        origin = model.base_url or self.default_base_url
        signal = request.signal
        loop = asyncio.get_running_loop()
        clock = RequestClock(loop, request.stream_options.timeout_ms, request.deadline)
        watch = AbortWatch(loop, Interrupt())
        signal.add_listener(watch)  # removed at the end
        lease: Lease | None = None  # the first attempt's slot, taken before the reply begins
        try:
            if not signal.aborted:
                clock.arm(watch.interrupt)
                try:
                    lease = await self.clients.acquire(origin, watch.interrupt)
                except ProviderError as exc:  # no connection can be made (TLS settings)
                    builder = self._builder(model)
                    yield AssistantMessageEvent("start", builder.partial)
                    yield builder.failed(model, exc, request_secrets(api_key, model.base_url))
                    return
                finally:
                    clock.disarm()
            attempts = self._attempts(request, origin, api_key, clock, watch, lease)
            del api_key
            lease = None  # the attempts give it back
            try:
                async for event in attempts:
                    yield event
            finally:
                await attempts.aclose()  # closed with this stream, not later by the loop
        finally:
            if lease is not None:
                lease.release()
            signal.remove_listener(watch)

    async def _attempts(
        self,
        request: ProviderRequest,
        origin: str,
        api_key: str | None,
        clock: RequestClock,
        watch: AbortWatch,
        lease: Lease | None,
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        """``start``, then each attempt's events, retrying as the options allow.

        Made once the request holds a slot (``lease``): what it sends (``Outgoing``) is
        made then, so a request waiting for a slot holds only its key.
        """
        model = request.model
        options = request.stream_options
        timeout_ms = options.timeout_ms
        timeout = Timeout.of(timeout_ms)
        signal = request.signal
        interrupt = watch.interrupt
        attempt = 0
        try:
            builder = self._builder(model)
            yield AssistantMessageEvent("start", builder.partial)
            out = Outgoing(origin, api_key, request_secrets(api_key, model.base_url))
            del api_key
            while True:
                attempt += 1
                if signal.aborted:
                    yield builder.aborted(model, signal.reason)
                    return
                if attempt > 1:
                    interrupt = watch.interrupt = Interrupt()
                outcome = Attempt()
                held, lease = lease, None  # read_attempt gives it back
                async for event in read_attempt(
                    self, out, timeout, request, builder, clock, interrupt, outcome, held
                ):
                    yield event
                if outcome.final is not None:
                    if builder.warnings and request.on_warning is not None:
                        await _notify_warnings(request, builder.warnings, out.secrets)
                    yield outcome.final
                    return
                error = outcome.error
                assert error is not None
                if signal.aborted or interrupt.kind == "abort":
                    yield builder.aborted(model, signal.reason)
                    return
                # Output received (even if not yielded yet) is never thrown away by a retry.
                received = outcome.streamed or builder.has_content
                from harnessc.runtime.providers.retry import (
                    DEFAULT_MAX_RETRIES,
                    DEFAULT_MAX_RETRY_DELAY_MS,
                    retry_delay_ms,
                    sleep_unless_aborted,
                )

                max_retries = (
                    DEFAULT_MAX_RETRIES if options.max_retries is None else options.max_retries
                )
                max_delay = (
                    DEFAULT_MAX_RETRY_DELAY_MS
                    if options.max_retry_delay_ms is None
                    else options.max_retry_delay_ms
                )
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
                    yield builder.failed(model, error, out.secrets)
                    return
                if request.on_retry is not None:
                    await _notify_retry(request, error, attempt, max_retries, delay, out.secrets)
                builder.reset()
                if not await sleep_unless_aborted(signal, delay):
                    yield builder.aborted(model, signal.reason)
                    return
        finally:
            if lease is not None:  # closed before its first attempt
                lease.release()

    async def prepare(self, request: ProviderRequest, out: Outgoing) -> None:
        """Build the request into ``out``: the spec, the payload hook, headers, the body.

        Runs on the first attempt once it holds a request slot, so a request waiting
        for one holds no payload; only the encoded body is kept for the retries.
        """
        model = request.model
        try:
            spec = self.build_request(request, out.api_key)
        except Exception as exc:
            raise ProviderError(
                f"could not build the request: {type(exc).__name__}: {exc}"
            ) from None
        payload: Any = spec.payload
        if request.on_payload is not None:
            if payload is None and spec.body is not None:  # the hook sees a payload
                payload = json.loads(spec.body)
            try:
                replaced = await request.on_payload(payload)
            except Exception as exc:
                raise ProviderError(f"before_provider_payload hook failed: {exc}") from None
            if replaced is not None:
                payload = replaced
        options = request.stream_options
        headers = merge_headers(
            {"accept-encoding": ACCEPT_ENCODING}, spec.headers, model.headers, options.headers
        )
        out.secrets[:] = [*secret_values(out.api_key, headers), *url_secrets(spec.url)]
        for name, value in headers.items():
            problem = header_value_problem(value) if isinstance(value, str) else ""
            if problem:
                raise ProviderError(
                    f"the request header {name!r} holds {problem}, which HTTP does not allow; "
                    "the request was not sent (check the model's and the stream's headers "
                    "and the variables they name)"
                )
        body = spec.body if payload is None else None
        if body is None:
            try:
                body = payload_bytes(payload)
            except (TypeError, ValueError, RecursionError) as exc:
                raise ProviderError(f"the request payload is not valid JSON: {exc}") from None
        out.url, out.headers, out.body, out.api_key = spec.url, headers, body, None

    def build_request(self, request: ProviderRequest, api_key: str | None) -> HttpRequestSpec:
        """What to send: the payload (or, for a long history no payload hook sees, the
        body from the encodings kept since the last request), the URL, and the JSON
        headers with the API's own and the authentication."""
        messages = request.context.messages
        if request.on_payload is not None or len(messages) < KEEP_FROM:
            self._wire = None  # encoded whole, nothing kept; a payload hook sees the payload
            payload: dict[str, Any] | None = self.payload(request, list(wire_sequence(messages)))
            body = None
        else:
            if self._wire is None:
                self._wire = self.wire_cache()
            payload, body = None, self._wire.body(request)
        headers = {**_JSON_HEADERS, **self.extra_headers}
        if api_key:
            headers.update(self.auth_headers(api_key))
        return HttpRequestSpec(self.url(request.model), headers, payload, body)

    def _builder(self, model: Model) -> MessageBuilder:
        return MessageBuilder(
            AssistantMessage(
                api=model.api or self.api,
                provider=model.provider or self.default_provider,
                model=model.id,
            )
        )

    async def aclose(self) -> None:
        """Close the HTTP clients this provider owns (a later request opens new ones)."""
        if self._owns_clients:
            await self.clients.aclose()

    # -- what a wire module says ----------------------------------------------------

    def url(self, model: Model) -> str:
        """Where ``model``'s requests go."""
        raise NotImplementedError

    def auth_headers(self, api_key: str) -> dict[str, str]:
        """The headers that send ``api_key``."""
        raise NotImplementedError

    def payload(self, request: ProviderRequest, messages: list[WireMessage]) -> dict[str, Any]:
        """The JSON body of ``request``, its history given as ``messages``."""
        raise NotImplementedError

    def new_state(self, builder: MessageBuilder, request: ProviderRequest) -> StreamState:
        return self.stream_state(builder)


async def _notify_warnings(
    request: ProviderRequest, warnings: list[str], secrets: list[str | None]
) -> None:
    """Tell ``request.on_warning`` what the reply's stream got wrong (never breaks it)."""
    assert request.on_warning is not None
    for text in warnings:
        try:
            await request.on_warning(cut_text(redact(text, secrets), MAX_ERROR_CHARS))
        except Exception:
            pass


async def _notify_retry(
    request: ProviderRequest,
    error: ProviderError,
    attempt: int,
    max_retries: int,
    delay: int,
    secrets: list[str | None],
) -> None:
    """Tell ``request.on_retry`` about the failed attempt (an observer never breaks it)."""
    assert request.on_retry is not None
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
    except Exception:
        pass

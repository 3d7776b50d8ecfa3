"""One attempt of an HTTP provider request.

``read_attempt`` runs one exchange (``transport.exchange`` in a task) and reads what it
passes on: the response head (callbacks, error answers), then the event stream fed to
the provider's ``StreamState``, yielding the reply's events as they are decoded. What
the attempt came to (the final event, or the error to retry or report) is left in an
``Attempt``; ``http.HttpProvider`` decides about retries.

The reply is complete at the protocol's end marker (``[DONE]``, ``message_stop``):
a server that keeps the connection open after it, or sends keepalives, does not
delay the reply by more than ``END_GRACE_S``.

What a failure means (``hints``) is loaded with the first failure: a reply that comes
needs none of it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from harnessc.runtime.providers.base import AssistantMessageEvent, ProviderRequest
from harnessc.runtime.providers.builder import MessageBuilder
from harnessc.runtime.providers.channel import Channel
from harnessc.runtime.providers.clients import HttpClientPool, Lease, Timeout, origin_of
from harnessc.runtime.providers.clock import Interrupt, RequestClock
from harnessc.runtime.providers.errors import ProviderError, redact
from harnessc.runtime.providers.sse import SSEParser
from harnessc.runtime.providers.transport import BODY, CHUNK, END, FAIL, exchange
from harnessc.runtime.providers.wire import StreamState

__all__ = ["END_GRACE_S", "Attempt", "AttemptReader", "Outgoing", "read_attempt"]

# How long the end of the body may lag behind the protocol's end marker.
END_GRACE_S = 0.05


_NOT_BUILT: dict[str, str] = {}  # the headers of a request not built yet (never written)


class Outgoing:
    """What a request sends: built on its first attempt, once it holds a slot.

    ``origin`` is the model's base URL (where the request waits for a slot); ``secrets``
    are the values its error messages must not show, completed when it is built.
    """

    __slots__ = ("origin", "api_key", "secrets", "url", "headers", "body")

    def __init__(self, origin: str, api_key: str | None, secrets: list[str | None]) -> None:
        self.origin = origin
        self.api_key = api_key  # for building; dropped once built
        self.secrets = secrets
        self.url = ""
        self.headers = _NOT_BUILT  # a request waiting for a slot holds no dict
        self.body = b""


class AttemptReader(Protocol):
    """What an attempt needs of its provider."""

    @property
    def clients(self) -> HttpClientPool: ...

    @property
    def base_url_hint(self) -> str: ...  # what base_url must look like, for a 404's hint

    def new_state(self, builder: MessageBuilder, request: ProviderRequest) -> StreamState: ...

    async def prepare(self, request: ProviderRequest, out: Outgoing) -> None:
        """Fill in ``out`` (URL, headers, body); a ProviderError when it cannot."""
        ...


class Attempt:
    """What one attempt came to: the final event, or the error to retry or report."""

    __slots__ = ("final", "error", "streamed")

    def __init__(self) -> None:
        self.final: AssistantMessageEvent | None = None
        self.error: ProviderError | None = None
        self.streamed = False  # events of this reply were yielded


async def read_attempt(
    reader: AttemptReader,
    out: Outgoing,
    timeout: Timeout,
    request: ProviderRequest,
    builder: MessageBuilder,
    clock: RequestClock,
    interrupt: Interrupt,
    outcome: Attempt,
    lease: Lease | None = None,
) -> AsyncIterator[AssistantMessageEvent]:
    """One exchange: yields the reply's events, leaves the result in ``outcome``.

    It first waits in turn for one of the origin's request slots, unless the caller
    holds one for it (``lease``, given back at the end either way); the first attempt
    builds the request only once it holds one (``AttemptReader.prepare``).
    """
    model = request.model
    timeout_ms = request.stream_options.timeout_ms
    clock.arm(interrupt)
    try:
        if lease is None and not interrupt.kind:
            try:
                lease = await reader.clients.acquire(out.origin, interrupt)
            except ProviderError as exc:  # no connection can be made (TLS settings)
                outcome.error = exc
                return
        if lease is None:
            from harnessc.runtime.providers.hints import interrupted_error

            outcome.error = interrupted_error(interrupt.kind, timeout_ms, out.origin, clock, None)
            return
        if not out.url:
            try:
                await reader.prepare(request, out)
                if out.origin and origin_of(out.url) != origin_of(out.origin):
                    raise ProviderError(
                        f"the request URL {redact(out.url, out.secrets)} is not on the "
                        "origin of the model's base_url"
                    )
            except ProviderError as exc:
                out.url = ""
                outcome.error = exc
            if outcome.error is None and interrupt.kind:  # stopped while it was built
                from harnessc.runtime.providers.hints import interrupted_error

                outcome.error = interrupted_error(
                    interrupt.kind, timeout_ms, out.origin, clock, None
                )
            if outcome.error is not None:
                return
        url = out.url
        queue: Channel[tuple[Any, ...]] = Channel(64)
        task = asyncio.get_running_loop().create_task(
            exchange(lease.pool, url, out.headers, out.body, timeout, queue, lease.proxy)
        )
        interrupt.task, interrupt.queue = task, queue
        parser: SSEParser | None = None
        # The whole response head (and the interim 1xx answers before it) within timeout_ms:
        # a head trickled a byte at a time never trips a read timeout.
        head_timer = clock.loop.call_later(clock.idle_s, interrupt.trip, "head")
        try:
            item = await queue.get()
            head_timer.cancel()
            if interrupt.kind:
                from harnessc.runtime.providers.hints import interrupted_error

                outcome.error = interrupted_error(interrupt.kind, timeout_ms, url, clock, parser)
                return
            if item[0] == FAIL:
                from harnessc.runtime.providers.hints import transport_error

                outcome.error = transport_error(item[1], timeout_ms, url, _label(lease))
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
            # the idle timer may trip with the first bytes already come (after a stall
            # of the loop): those are read first, and the reply may still end well
            if interrupt.kind and not (interrupt.kind == "idle" and item[0] == CHUNK):
                from harnessc.runtime.providers.hints import interrupted_error

                outcome.error = interrupted_error(interrupt.kind, timeout_ms, url, clock, parser)
                return
            if item[0] == BODY:
                from harnessc.runtime.providers.hints import answer_error

                outcome.error = answer_error(
                    status, item[1], response_headers, model, url, reader.base_url_hint, out.secrets
                )
                return
            parser = SSEParser()
            state = reader.new_state(builder, request)
            pending = builder.out
            while True:
                kind = item[0]
                if kind == CHUNK:
                    for event, data in parser.feed(item[1]):
                        state.handle(event, data)
                        if state.done:
                            break
                    if pending:
                        clock.last = clock.loop.time()
                        for ev in pending:
                            yield ev
                        pending.clear()
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
                            "the stream ended before the reply was complete",
                            retryable=True,
                            kind="connection",
                        )
                        return
                    break
                elif kind == FAIL:
                    from harnessc.runtime.providers.hints import transport_error

                    outcome.error = transport_error(item[1], timeout_ms, url, _label(lease))
                    return
                item = await queue.get()
                if interrupt.kind:
                    if interrupt.kind == "idle":  # a finished reply left open (no end marker)
                        # what came before the timer fired is read first: on a busy loop
                        # the reply's last chunk can wait in the queue behind it
                        while item[0] == CHUNK and not state.done:
                            for event, data in parser.feed(item[1]):
                                state.handle(event, data)
                                if state.done:
                                    break
                            if not len(queue):
                                break
                            item = await queue.get()  # there: no wait
                        with contextlib.suppress(ProviderError):
                            state.end()
                        if state.done:
                            break
                    from harnessc.runtime.providers.hints import interrupted_error

                    outcome.error = interrupted_error(
                        interrupt.kind, timeout_ms, url, clock, parser
                    )
                    return
            outcome.final = builder.done(model)
            for ev in pending:
                yield ev
            pending.clear()
        except ProviderError as exc:
            outcome.error = exc
        except Exception as exc:  # an unexpected frame shape, a callback bug
            outcome.error = ProviderError(
                f"could not read the provider's reply: {type(exc).__name__}: {exc}"
            )
        finally:
            head_timer.cancel()
            clock.disarm()
            interrupt.task = interrupt.queue = None
            if not task.done() and outcome.final is not None:
                await _await_end(task)  # a well-behaved server's end: keep the connection
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            elif not task.cancelled():
                task.exception()  # retrieved: a failure was passed on as an item
    finally:
        clock.disarm()
        if lease is not None:
            lease.release()


def _label(lease: Lease) -> str:
    """The proxy the lease's requests go through, as messages name it ("" for none)."""
    return lease.proxy.label if lease.proxy is not None else ""


async def _await_end(task: asyncio.Task[None]) -> None:
    """Give the exchange ``END_GRACE_S`` to read the body's end (then it is cut)."""
    await asyncio.wait((task,), timeout=END_GRACE_S)

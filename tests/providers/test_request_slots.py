"""Requests over a shared pool's cap wait in turn, holding nothing of themselves yet."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

from harnessc.runtime import Model
from harnessc.runtime.providers.base import AssistantMessageEvent, ProviderRequest
from harnessc.runtime.providers.pool import ProviderPool
from harnessc.runtime.providers.transport import HttpClientPool
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

from .conftest import MakeRequest


def _model(server: ProtocolServer) -> Model:
    return Model(id="m", api="openai-completions", base_url=server.url + "/v1")


def _held_server(server: ProtocolServer) -> threading.Event:
    """Every request is answered once the returned event is set."""
    go = threading.Event()

    def handler(request: object) -> ScriptedResponse:
        go.wait(10)
        return ScriptedResponse.sse(openai_events(["ok"]))

    server.set_handler(handler)
    return go


async def _last(pool: ProviderPool, request: ProviderRequest) -> AssistantMessageEvent:
    events = [e async for e in pool.get("openai-completions").stream(request)]
    return events[-1]


async def _until(check: Any) -> None:
    for _ in range(500):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("timed out waiting")


def test_a_request_waiting_for_a_slot_has_not_built_its_payload(
    server: ProtocolServer, make_request: MakeRequest
):
    """Before: a request built and encoded its whole payload (every message of its
    context) and then waited for a slot, so a thousand waiting harnesses each held one."""
    go = _held_server(server)
    shared = HttpClientPool(max_concurrent=1)
    built: list[str] = []

    def request(name: str) -> ProviderRequest:
        req = make_request(_model(server))

        async def on_payload(payload: Any) -> None:
            built.append(name)

        req.on_payload = on_payload
        return req

    async def run() -> list[str]:
        first = asyncio.create_task(_last(ProviderPool(shared), request("first")))
        await _until(lambda: len(server.requests) == 1)
        second = asyncio.create_task(_last(ProviderPool(shared), request("second")))
        await _until(lambda: shared.waiting(server.url) == 1)
        assert built == ["first"]  # the second waits without a payload
        go.set()
        done = [(await first).type, (await second).type]
        await shared.aclose()
        return done

    assert asyncio.run(run()) == ["done", "done"]
    assert built == ["first", "second"]
    assert len(server.requests) == 2


def test_an_abort_while_waiting_ends_the_request_and_leaves_the_slots_whole(
    server: ProtocolServer, make_request: MakeRequest
):
    go = _held_server(server)
    shared = HttpClientPool(max_concurrent=1)

    async def run() -> tuple[str, str | None, str, str]:
        first = asyncio.create_task(_last(ProviderPool(shared), make_request(_model(server))))
        await _until(lambda: len(server.requests) == 1)
        waiting = make_request(_model(server))
        second = asyncio.create_task(_last(ProviderPool(shared), waiting))
        await _until(lambda: shared.waiting(server.url) == 1)
        waiting.signal.abort("stop")
        aborted = await asyncio.wait_for(second, 5)  # ends while the first still runs
        assert not first.done()
        go.set()
        assert (await first).type == "done"
        # the aborted waiter gave nothing back twice, and wedges no later request
        third = await asyncio.wait_for(_last(ProviderPool(shared), make_request(_model(server))), 5)
        await shared.aclose()
        return aborted.type, aborted.partial.stop_reason, third.type, str(len(server.requests))

    assert asyncio.run(run()) == ("error", "aborted", "done", "2")


def test_the_run_deadline_ends_a_wait_for_a_slot(server: ProtocolServer, make_request: MakeRequest):
    go = _held_server(server)
    shared = HttpClientPool(max_concurrent=1)

    async def run() -> AssistantMessageEvent:
        first = asyncio.create_task(_last(ProviderPool(shared), make_request(_model(server))))
        await _until(lambda: len(server.requests) == 1)
        late = make_request(_model(server))
        late.deadline = time.monotonic() + 0.2
        ended = await asyncio.wait_for(_last(ProviderPool(shared), late), 5)
        go.set()
        await first
        await shared.aclose()
        return ended

    ended = asyncio.run(run())
    assert ended.type == "error"
    assert "time budget ran out" in (ended.partial.error_message or "")
    assert len(server.requests) == 1


def test_a_provider_without_a_default_base_url_still_sends_and_checks_origins(
    server: ProtocolServer, make_request: MakeRequest
):
    """A third-party subclass that names no default base URL keeps working; a request
    whose URL leaves its model's origin is refused before anything is sent."""
    from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider
    from harnessc.runtime.providers.wire import HttpRequestSpec

    server.set_handler(lambda request: ScriptedResponse.sse(openai_events(["ok"])))
    target = server.url + "/v1/chat/completions"

    class Elsewhere(OpenAICompletionsProvider):
        default_base_url = ""

        def build_request(self, request: ProviderRequest, api_key: str | None) -> HttpRequestSpec:
            spec = super().build_request(request, api_key)
            return HttpRequestSpec(target, spec.headers, spec.payload)

    async def last(model: Model) -> AssistantMessageEvent:
        provider = Elsewhere()
        try:
            return [e async for e in provider.stream(make_request(model))][-1]
        finally:
            await provider.aclose()

    unnamed = asyncio.run(last(Model(id="m", api="openai-completions")))
    assert unnamed.type == "done"
    moved = asyncio.run(
        last(Model(id="m", api="openai-completions", base_url="http://127.0.0.1:9/v1"))
    )
    assert moved.type == "error"
    assert "not on the origin of the model's base_url" in (moved.partial.error_message or "")
    assert len(server.requests) == 1


def test_a_request_waiting_for_a_slot_has_not_begun_its_reply(
    server: ProtocolServer, make_request: MakeRequest
):
    """Before: the reply (its message, usage and builder) was made and announced with
    ``start`` before the wait, so every waiting harness held one more message."""
    go = _held_server(server)
    shared = HttpClientPool(max_concurrent=1)

    async def run() -> list[str]:
        first = asyncio.create_task(_last(ProviderPool(shared), make_request(_model(server))))
        await _until(lambda: len(server.requests) == 1)
        seen: list[str] = []

        async def second() -> None:
            async for event in (
                ProviderPool(shared).get("openai-completions").stream(make_request(_model(server)))
            ):
                seen.append(event.type)

        waiting = asyncio.create_task(second())
        await _until(lambda: shared.waiting(server.url) == 1)
        await asyncio.sleep(0.05)
        assert seen == []  # no start while it waits
        go.set()
        assert (await first).type == "done"
        await waiting
        await shared.aclose()
        return seen

    seen = asyncio.run(run())
    assert seen[0] == "start" and seen[-1] == "done"


def test_a_request_closed_while_waiting_gives_its_slot_back(
    server: ProtocolServer, make_request: MakeRequest
):
    """A caller that stops reading a stream that waits for (or was just handed) its
    slot leaves the slot to the next request."""
    go = _held_server(server)
    shared = HttpClientPool(max_concurrent=1)

    async def run() -> str:
        first = asyncio.create_task(_last(ProviderPool(shared), make_request(_model(server))))
        await _until(lambda: len(server.requests) == 1)
        gone = asyncio.create_task(_last(ProviderPool(shared), make_request(_model(server))))
        await _until(lambda: shared.waiting(server.url) == 1)
        gone.cancel()
        go.set()
        assert (await first).type == "done"
        with contextlib.suppress(asyncio.CancelledError):
            await gone
        last = await asyncio.wait_for(_last(ProviderPool(shared), make_request(_model(server))), 5)
        await shared.aclose()
        return last.type

    assert asyncio.run(run()) == "done"

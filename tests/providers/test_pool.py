"""One ProviderPool per harness; HTTP clients shared only on purpose, with a cap."""

from __future__ import annotations

import asyncio
import threading

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.providers import get_provider, register_provider, registered_factories
from harnessc.runtime.providers.anthropic_messages import AnthropicMessagesProvider
from harnessc.runtime.providers.openai_completions import OpenAICompletionsProvider
from harnessc.runtime.providers.pool import ProviderPool
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.providers.transport import HttpClientPool
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

from .conftest import Collect, MakeRequest


def _model(server: ProtocolServer) -> Model:
    return Model(id="m", api="openai-completions", base_url=server.url + "/v1")


def test_get_makes_one_provider_per_api_and_names_known_apis():
    pool = ProviderPool()
    first = pool.get("openai-completions")
    assert isinstance(first, OpenAICompletionsProvider)
    assert pool.get("openai-completions") is first
    assert isinstance(pool.get("anthropic-messages"), AnthropicMessagesProvider)
    with pytest.raises(KeyError) as info:
        pool.get("nope")
    message = str(info.value)
    assert "'nope'" in message and "openai-completions" in message
    assert "google-generative-ai" in message


def test_pools_do_not_share_providers_or_clients():
    one, two = ProviderPool(), ProviderPool()
    assert one.get("openai-completions") is not two.get("openai-completions")
    assert one.clients is not two.clients
    assert get_provider("openai-completions") is not one.get("openai-completions")


def test_register_provider_feeds_every_pool(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(
        "harnessc.runtime.providers.registry.REGISTERED", dict(registered_factories()), raising=True
    )
    pool = ProviderPool()
    builtin = pool.get("openai-completions")
    made: list[ScriptedProvider] = []

    def factory() -> ScriptedProvider:
        made.append(ScriptedProvider([]))
        return made[-1]

    register_provider("openai-completions", factory)
    register_provider("custom-api", factory)
    assert pool.get("openai-completions") is made[0] is not builtin  # a later registration wins
    assert ProviderPool().get("custom-api") is made[1]
    assert "custom-api" in pool.known_apis()


def test_closing_one_harness_leaves_the_other_working(server: ProtocolServer):
    """Before: closing one harness closed the HTTP clients of the process-wide providers,
    so a reply another harness was streaming at that moment broke off."""
    from harnessc.runtime.cli import close_harness

    slow = ScriptedResponse.sse(openai_events([f"{i} " for i in range(8)]), chunk_delay_s=0.05)
    server.enqueue(ScriptedResponse.sse(openai_events(["ok"])), slow)

    async def run() -> tuple[str, str]:
        first = AgentHarness(AgentHarnessOptions(models={"main": _model(server)}))
        second = AgentHarness(AgentHarnessOptions(models={"main": _model(server)}))
        assert (await first.prompt("one")).text == "ok"
        streaming = asyncio.create_task(second.prompt("two"))
        while len(server.requests) < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        await close_harness(first)
        result = await streaming
        await close_harness(second)
        return result.status, result.text

    assert asyncio.run(run()) == ("done", "".join(f"{i} " for i in range(8)))


def test_shared_client_pool_reuses_connections_and_caps_concurrency(
    server: ProtocolServer, make_request: MakeRequest
):
    active = 0
    peak = 0
    lock = threading.Lock()

    def handler(request: object) -> ScriptedResponse:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        try:
            threading.Event().wait(0.05)
            return ScriptedResponse.sse(openai_events(["ok"]))
        finally:
            with lock:
                active -= 1

    server.set_handler(handler)
    shared = HttpClientPool(max_concurrent=3)
    pools = [ProviderPool(shared) for _ in range(10)]

    async def one(pool: ProviderPool) -> str:
        provider = pool.get("openai-completions")
        last = None
        async for event in provider.stream(make_request(_model(server))):
            last = event
        assert last is not None
        return last.type

    async def run() -> list[str]:
        results = await asyncio.gather(*(one(pool) for pool in pools))
        for pool in pools:
            await pool.aclose()  # pools that do not own the clients leave them open
        assert not shared.connection_pool(server.url).closed  # still open
        await shared.aclose()
        return results

    assert asyncio.run(run()) == ["done"] * 10
    assert peak <= 3
    ports = {r.client_port for r in server.requests}
    assert len(ports) <= 3  # ten requests over at most three connections


def test_a_provider_works_on_a_second_event_loop(
    server: ProtocolServer, make_request: MakeRequest, collect: Collect
):
    server.set_handler(lambda request: ScriptedResponse.sse(openai_events(["ok"])))
    provider = ProviderPool().get("openai-completions")
    assert collect(provider, make_request(_model(server)))[-1].type == "done"
    assert collect(provider, make_request(_model(server)))[-1].type == "done"

"""Every generated module's build_options() takes http_clients=; by default its
harnesses share the process's pool (one set of connections per event loop)."""

from __future__ import annotations

import asyncio
import importlib.util
import types
from pathlib import Path

import pytest

from harnessc.runtime import AgentHarness
from harnessc.runtime.providers import shared_http_clients
from harnessc.runtime.providers.transport import HttpClientPool
from harnessc.runtime.session import Session
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import openai_events

GENERATED = Path(__file__).resolve().parents[2] / "generated"


def _module(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"gen_{name}", GENERATED / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["hello", "coder"])
def test_build_options_passes_the_shared_clients_on(name: str) -> None:
    module = _module(name)
    clients = HttpClientPool(max_concurrent=8)
    shared = module.build_options(session=Session(), http_clients=clients)
    assert shared.http_clients is clients
    # Unless told otherwise, the process's pool (before: None, each harness its own).
    assert module.build_options(session=Session()).http_clients is shared_http_clients()


def test_harnesses_of_a_module_share_one_connection_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: each harness of build_options() opened its own connections and closed
    them in close(), so a thousand sessions held a thousand connections and the next
    session connected again; now the second harness sends on the first one's."""
    module = _module("hello")
    with ProtocolServer() as server:
        server.set_handler(lambda request: ScriptedResponse.sse(openai_events(["hi"])))
        monkeypatch.setenv("HELLO_BASE_URL", f"{server.url}/v1")

        async def one() -> str:
            harness = AgentHarness(module.build_options(session=Session()))
            try:
                result = await harness.prompt("hello")
                return result.text
            finally:
                await harness.close()

        async def run() -> list[str]:
            try:
                return [await one(), await one(), *await asyncio.gather(one(), one())]
            finally:
                await shared_http_clients().aclose()

        assert asyncio.run(run()) == ["hi"] * 4
        ports = [r.client_port for r in server.requests]
    assert ports[0] == ports[1]  # the second harness reused the first one's connection
    assert len(set(ports)) <= 2

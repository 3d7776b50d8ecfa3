"""The MCP door over a durable agent (issue 44): ``/mcp`` of a served agent with
``durable:`` submits the run to the DBOS queue, a real worker process runs it, its
permission ask reaches the MCP client as elicitation, and the answer resumes it in the
worker (SQLite, and PostgreSQL when HARNESSC_TEST_PG_DSN names one)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from harnessc.testing import ProtocolServer

from .test_durable import Durable, _durable
from .test_mcp_server import _answering, _http, _meta, _text

pytest.importorskip("mcp.client")


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def durable_mcp(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ProtocolServer,
) -> Iterator[Durable]:
    with _durable(tmp_path_factory.mktemp("mcp-durable"), model_server.url, request.param) as made:
        yield made


def test_a_durable_run_over_mcp_asks_and_is_answered(durable_mcp: Durable) -> None:
    server, workers = durable_mcp.server, durable_mcp.workers
    workers.ensure("mcp-w1")
    allow, asked = _answering({"action": "accept", "content": {"decision": "allow"}})

    async def scenario() -> tuple[Any, Any]:
        async with _http(server, elicitation_callback=allow) as client:
            plain = await client.call_tool("helper", {"prompt": "hello durable mcp"})
            asking = await client.call_tool(
                "helper", {"prompt": 'call bash {"command": "echo mcp-durable"}'}
            )
            return plain, asking

    plain, asking = asyncio.run(scenario())
    assert _text(plain) == "echo: hello durable mcp" and _meta(plain)["status"] == "done"
    assert len(asked) == 1 and "echo mcp-durable" in asked[0].message
    assert not asking.is_error and "mcp-durable" in _text(asking)
    with server.client() as http:
        run = http.get(f"/v1/runs/{_meta(asking)['run_id']}").json()
    assert run["status"] == "done"

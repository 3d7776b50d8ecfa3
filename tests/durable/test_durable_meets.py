"""Durable runs meeting the other features and a user's ordinary mistakes: MCP tools,
permission asks, pauses of a one-shot run, budgets, failures, base URLs and the queue's
settings, each through the generated agent in a subprocess with real DBOS."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .durakit import DurableAgent, make_agent
from .test_durable_runs import Server, submit, wait_for

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")

HERE = Path(__file__).resolve().parent
SQLITE = "sqlite:///.harnessc/durable.sqlite"


@pytest.fixture
def server() -> Iterator[Server]:
    from harnessc.testing import ProtocolServer

    with ProtocolServer() as running:
        yield Server(running)


@pytest.fixture
def agent(tmp_path: Path, server: Server) -> Iterator[DurableAgent]:
    made = make_agent(tmp_path, server.running, SQLITE)
    yield made
    made.stop_workers()


def _runs(agent: DurableAgent) -> str:
    return agent.client("--runs")[1]


def test_a_recovered_run_does_not_call_an_mcp_tool_again(
    agent: DurableAgent, tmp_path: Path
) -> None:
    """An MCP tool's call is a step: a worker SIGKILLed after two calls (at the pull
    point that follows) and restarted replays them from the record, the server sees
    each once."""
    pytest.importorskip("mcp")
    log = tmp_path / "tickets.log"
    agent.env.update(TICKETS_SERVER=str(HERE / "tickets_server.py"), TICKETS_LOG=str(log))
    run_id = submit(agent, "mcp 2 approve m")
    victim = agent.worker("w1")
    wait_for(lambda: "awaiting_tool" in _runs(agent), what="the pull point", every=0.3)
    assert [line.split()[1] for line in log.read_text().splitlines()] == ["t1", "t2"]
    victim.kill()
    victim.wait(timeout=30)
    agent.worker("w1")  # the same id: recovers the run at once
    assert agent.client("--run", run_id, "--resume-with", '{"ask_m": "yes"}')[0] == 0
    wait_for(lambda: f"{run_id}  done" in _runs(agent), what="the run's end", every=0.3)
    code, done, err = agent.client("--follow", run_id)
    assert code == 0, err
    assert done.splitlines()[-1] == "finished 2 m"
    assert [line.split()[1] for line in log.read_text().splitlines()] == ["t1", "t2"]

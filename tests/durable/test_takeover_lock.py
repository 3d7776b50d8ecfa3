"""A durable takeover always finishes the run (issue 40 item 10).

A worker SIGSTOPped inside a tool keeps the lock of the run's session file (the default
JSONL store). Once its lease has passed another worker takes the run over, finds the
session locked, and waits for it under its own lease, however long the stalled worker
stays stopped; it never marks the run failed for another worker's lock. When the
stalled worker goes on it finds its lease lost and ends, its lock with it, and the run
finishes exactly once. On SQLite and on PostgreSQL, with real worker processes."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .durakit import DurableAgent, make_agent
from .test_durable_runs import Server, submit, wait_for

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")

HOLD_S = 14.0  # the stalled worker stays stopped this long after the other took over


@pytest.fixture
def server() -> Iterator[Server]:
    from harnessc.testing import ProtocolServer

    with ProtocolServer() as running:
        yield Server(running)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return "sqlite:///.harnessc/durable.sqlite"
    return str(request.getfixturevalue("pg_database"))


def _state(agent: DurableAgent, run_id: str) -> dict[str, object]:
    rows = [json.loads(line) for line in agent.client("--runs", "--json")[1].splitlines()]
    return next(r for r in rows if r["id"] == run_id)


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_a_takeover_waits_for_the_stalled_workers_session_lock(
    tmp_path: Path, server: Server, database_url: str
) -> None:
    agent = make_agent(tmp_path, server.running, database_url, sessions=True)
    stalled = None
    try:
        run_id = submit(agent, "steps 2 k")
        stalled = agent.worker("a", env={"TOOL_SLEEP_S": "1"})
        wait_for(lambda: "start call_k_1" in _read(agent.side_effects), what="the first tool")
        stalled.send_signal(signal.SIGSTOP)  # in the tool, the session file locked
        taker = agent.worker("b")
        wait_for(lambda: _state(agent, run_id)["worker"] == "b", what="b taking the run over")
        deadline = time.monotonic() + HOLD_S
        while time.monotonic() < deadline:  # b waits for the lock, the run never fails
            state = _state(agent, run_id)
            assert state["state"] in ("running", "queued"), state
            time.sleep(0.5)
        stalled.send_signal(signal.SIGCONT)  # it finds its lease lost and ends
        assert stalled.wait(timeout=60) == 75
        wait_for(lambda: _state(agent, run_id)["state"] == "done", what="b finishing the run")
        executions = agent.executions()
        # the call the stalled worker was in is not run again (interrupted_tools: fail)
        assert executions.get("call_k_2") == 1 and executions.get("call_k_1", 0) <= 1
        code, out, err = agent.client("--follow", run_id)
        assert code == 0, err
        assert out.splitlines()[-1] == "finished 2 k"
        taker.terminate()
        taker.wait(timeout=60)
        assert taker.stderr is not None
        said = taker.stderr.read()
        assert said.count("waiting for it") == 1, said  # said once, no traceback
        assert "Traceback" not in said
    finally:
        if stalled is not None and stalled.poll() is None:
            stalled.send_signal(signal.SIGCONT)
        agent.stop_workers()

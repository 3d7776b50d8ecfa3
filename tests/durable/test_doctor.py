"""``harnessc doctor`` of a spec with ``durable:``: the database answers, its DBOS schema
version is this DBOS's (``dbos._migration``, a private module: this test fails when
DBOS changes it), the queue is registered, the live workers are named."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .durakit import DurableAgent, make_agent
from .test_durable_runs import Server, wait_for
from .test_spec_wiring import SPEC, write_spec

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> Iterator[Server]:
    from harnessc.testing import ProtocolServer

    with ProtocolServer() as running:
        yield Server(running)


def _doctor(spec: Path, cwd: Path, database_url: str) -> list[str]:
    code = "import sys; from harnessc.cli import main; sys.exit(main())"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DURABLE_URL": database_url,
        "TEST_BASE_URL": "http://127.0.0.1:9/v1",
        "TEST_API_KEY": "sk-doctor",
    }
    done = subprocess.run(
        [sys.executable, "-c", code, "doctor", str(spec)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return [line for line in done.stdout.splitlines() if "durable:" in line]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_doctor_checks_the_durable_database_schema_queue_and_workers(
    tmp_path: Path, server: Server, kind: str, request: pytest.FixtureRequest
) -> None:
    url = "sqlite:///.harnessc/durable.sqlite"
    if kind == "postgres":
        url = str(request.getfixturevalue("pg_database"))
    spec_text = SPEC.replace("session:\n  repo: postgres\n  url: ${DATABASE_URL}\n", "")
    spec_text = spec_text.replace("{name: demo, concurrency: 2}", "{name: dtest}")
    spec = write_spec(tmp_path, spec_text)
    agent: DurableAgent = make_agent(tmp_path, server.running, url, sessions=False)
    try:
        if kind == "sqlite":
            (line,) = _doctor(spec, agent.workdir, url)
            assert line.startswith("warning") and "does not exist (a run creates it)" in line
        agent.worker("w1")
        wait_for(lambda: _live(agent, url) == ["w1"], what="the worker's heartbeat", every=0.3)
        lines = _doctor(spec, agent.workdir, url)
        assert [line.split()[0] for line in lines] == ["ok"] * 4, lines
        assert "answers" in lines[0] and "sk-" not in "".join(lines)
        assert "DBOS schema version" in lines[1] and "(this DBOS's)" in lines[1]
        assert "queue dtest is registered" in lines[2]
        assert "1 live worker(s) on dtest: w1" in lines[3]
    finally:
        agent.stop_workers()


def _live(agent: DurableAgent, url: str) -> list[str]:
    import sqlalchemy as sa

    from harnessc.runtime.durable.config import resolve_database_url
    from harnessc.runtime.durable.engine import _sqlalchemy_url, live_workers

    engine = sa.create_engine(_sqlalchemy_url(resolve_database_url(url, str(agent.workdir))))
    try:
        return live_workers(engine, "dtest", 30.0)
    except sa.exc.OperationalError:  # the database is not made yet
        return []
    finally:
        engine.dispose()

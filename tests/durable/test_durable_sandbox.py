"""A durable run's bash runs in the agent's sandbox, in a one-shot durable run and in a
worker process; the worker's operator flag ``--sandbox off`` is the one way to lift it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harnessc.testing import ProtocolServer
from tests.sandboxing import require_sandbox

from .durakit import DurableAgent, make_agent, scripted

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")

SECRET = "durable-dotenv-SECRET-5151"


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[DurableAgent]:
    require_sandbox()
    with ProtocolServer() as server:
        server.set_handler(scripted)
        made = make_agent(tmp_path, server, "sqlite:///.harnessc/durable.sqlite")
        made.env["BASH_SANDBOX"] = "1"
        (made.workdir / ".env").write_text(f"TOKEN={SECRET}\n")
        yield made
        made.stop_workers()


def _submitted(agent: DurableAgent, prompt: str) -> str:
    code, out, err = agent.client("--submit", prompt)
    assert code == 0, err
    return out.strip()


def test_a_durable_runs_bash_is_sandboxed_and_only_the_operator_lifts_it(
    agent: DurableAgent,
) -> None:
    one_shot = agent.run("bash cat .env; echo end")
    assert one_shot.returncode == 0, one_shot.stderr
    assert "Permission denied" in one_shot.stdout and SECRET not in one_shot.stdout
    boxed = _submitted(agent, "bash cat .env; echo boxed")
    agent.worker("w1")
    followed = agent.run("--follow", boxed)
    assert followed.returncode == 0, followed.stderr
    assert "Permission denied" in followed.stdout and SECRET not in followed.stdout
    agent.stop_workers()
    lifted = _submitted(agent, "bash cat .env; echo lifted")
    agent.worker("w2", "--sandbox", "off")
    followed = agent.run("--follow", lifted)
    assert followed.returncode == 0, followed.stderr
    assert SECRET in followed.stdout

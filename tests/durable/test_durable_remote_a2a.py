"""A durable lead's hand-over to a remote A2A agent survives a worker kill (issue 44): the
lead hands over to ``judge``, a served harnessc agent whose model is slow; the worker is
SIGKILLed while the judge's task runs and another worker recovers the run. The recovered
run re-attaches to the task its first worker created (its id recorded as a step of the
run) and finishes with the judge's answer: the judge got exactly one task."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import openai_events

from .test_durable_runs import wait_for
from .test_durable_subagents import HELPER, MODEL, Tree, _results, _tool, database_url

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")
pytest.importorskip("a2a.client")

from tests.serve.servekit import TOKEN, Served, compile_agent  # noqa: E402

__all__ = ["database_url"]  # the fixture shared with test_durable_subagents

LEAD = f"""\
version: 1
name: lead
description: Hands work to a remote judge.
{MODEL}system_prompt: You are LEAD.
agents:
  judge:
    a2a: ${{JUDGE_URL}}
    headers:
      Authorization: Bearer ${{JUDGE_TOKEN}}
    description: Judges a change.
durable:
  database_url: ${{DURABLE_URL}}
  queue: {{name: dsub}}
  lease_s: 2
"""


def lead_script(request: RecordedRequest) -> ScriptedResponse:
    """LEAD hands "judge this" to the judge, then ends with the judge's answer."""
    messages = request.json["messages"]
    results = _results(messages)
    if not results:
        args = {"subagent_type": "judge", "description": "judge", "prompt": "judge this"}
        return _tool("j1", "task", args)
    return ScriptedResponse.sse(openai_events(["LEAD DONE | " + results[0]]))


def judge_script(request: RecordedRequest) -> ScriptedResponse:
    """The judge's model: one slow reply per task."""
    return ScriptedResponse.sse(openai_events(["JUDGED"]), delay_s=4.0)


@pytest.fixture(scope="module")
def judge_model() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


@pytest.fixture
def judge(
    tmp_path_factory: pytest.TempPathFactory, judge_model: ProtocolServer
) -> Iterator[Served]:
    judge_model.reset()
    judge_model.set_handler(judge_script)
    with compile_agent(tmp_path_factory.mktemp("judge"), judge_model.url) as kit:
        yield kit.serve()


@pytest.fixture
def tree(
    tmp_path: Path, server: ProtocolServer, database_url: str, judge: Served
) -> Iterator[Tree]:
    made = Tree(tmp_path, server, database_url, LEAD, HELPER)
    server.set_handler(lead_script)
    made.env.update(JUDGE_URL=judge.url, JUDGE_TOKEN=TOKEN)
    yield made
    made.stop()


def _judged(judge_model: ProtocolServer) -> list[Any]:
    return [r for r in judge_model.requests if "judge this" in json.dumps(r.json)]


def _sent(runs: Any, run_id: str) -> bool:
    steps = runs.client.list_workflow_steps(run_id)
    return any(step["function_name"] == "a2a:sent" for step in steps)


def test_a_worker_killed_during_a_remote_task_reattaches_to_it(
    tree: Tree, judge_model: ProtocolServer
) -> None:
    run_id = tree.submit("go")
    victim = tree.worker()
    wait_for(lambda: len(_judged(judge_model)) == 1, what="the judge's model call")
    # killed once the remote task's id is recorded (a kill between the send and that
    # record is the at-most-once case: the hand-over fails, it is not sent again)
    with tree.runs() as runs:
        wait_for(lambda: _sent(runs, run_id), what="the remote task's id recorded")
    victim.kill()
    victim.wait(timeout=30)
    tree.worker()  # the same worker id: recovers the run at once
    with tree.runs() as runs:
        wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run to end")
    followed = tree.run("--follow", run_id)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.startswith("LEAD DONE | JUDGED\n"), followed.stdout
    assert len(_judged(judge_model)) == 1, "the judge got one task"
    lead_calls = [len(_results(r.json["messages"])) for r in tree.server.requests]
    assert lead_calls.count(0) == 1, "the lead's first model call is replayed, not sent again"

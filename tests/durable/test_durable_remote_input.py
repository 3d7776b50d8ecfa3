"""A durable lead paused on a remote A2A agent's question survives a worker kill (issue
44): the lead hands over to ``judge``, a served harnessc agent whose model calls its
external tool ``ask_human``, so the judge's task is ``input-required`` and the lead's
run waits for the ``a2a_input`` call. The worker waiting on that answer is SIGKILLed;
another worker recovers the run, the answer reaches it, and the hand-over goes on with
the same remote task: the judge gets the answer on the task it asked in (one task, one
first model call) and the lead ends with the judge's value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import openai_events

from .test_durable_remote_a2a import LEAD
from .test_durable_runs import wait_for
from .test_durable_subagents import HELPER, Tree, _results, _tool, database_url

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")
pytest.importorskip("a2a.client")

from tests.serve.servekit import TOKEN, Served, compile_agent  # noqa: E402
from tests.serve.typedkit import TYPED_SPEC, VALUE, model_reply  # noqa: E402

__all__ = ["database_url"]  # the fixture shared with test_durable_subagents

QUESTION = 'call ask_human {"question": "which branch?"}'


class LeadScript:
    """LEAD hands ``prompt`` to the judge, then ends with its answer."""

    def __init__(self) -> None:
        self.prompt = QUESTION

    def __call__(self, request: RecordedRequest) -> ScriptedResponse:
        results = _results(request.json["messages"])
        if not results:
            args = {"subagent_type": "judge", "description": "judge", "prompt": self.prompt}
            return _tool("j1", "task", args)
        return ScriptedResponse.sse(openai_events(["LEAD DONE | " + results[0]]))


@pytest.fixture(scope="module")
def judge_model() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


class JudgeReply:
    """The judge's model; with ``slow`` on, its reply to the answer takes 4 s (a kill
    lands during it)."""

    def __init__(self) -> None:
        self.slow = False

    def __call__(self, request: RecordedRequest) -> ScriptedResponse:
        response = model_reply(request)
        if self.slow and request.json["messages"][-1]["role"] == "tool":
            response.delay_s = 4.0
        return response


@pytest.fixture(scope="module")
def served_judge(
    tmp_path_factory: pytest.TempPathFactory, judge_model: ProtocolServer
) -> Iterator[Served]:
    with compile_agent(tmp_path_factory.mktemp("judge"), judge_model.url, TYPED_SPEC) as kit:
        yield kit.serve()


@pytest.fixture
def judge_script(judge_model: ProtocolServer) -> JudgeReply:
    judge_model.reset()
    script = JudgeReply()
    judge_model.set_handler(script)
    return script


@pytest.fixture
def judge(served_judge: Served, judge_script: JudgeReply) -> Served:
    """The judge, served once for the module; its model's requests start afresh."""
    return served_judge


class RemoteTree(Tree):
    """The durable lead, its model scripted by ``lead``."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.lead = LeadScript()


@pytest.fixture
def tree(
    tmp_path: Path, server: ProtocolServer, database_url: str, judge: Served
) -> Iterator[RemoteTree]:
    made = RemoteTree(tmp_path, server, database_url, LEAD, HELPER)
    server.set_handler(made.lead)
    made.env.update(JUDGE_URL=judge.url, JUDGE_TOKEN=TOKEN)
    yield made
    made.stop()


def _asked(judge_model: ProtocolServer) -> list[Any]:
    """The judge's model calls with the hand-over's prompt last (its first of a task)."""
    return [
        r
        for r in judge_model.requests
        if json.dumps(r.json["messages"][-1]).find("which branch?") >= 0
        and r.json["messages"][-1]["role"] == "user"
    ]


def _sends(runs: Any, run_id: str) -> int:
    steps = runs.client.list_workflow_steps(run_id)
    return sum(step["function_name"] == "a2a:sent" for step in steps)


@pytest.mark.parametrize("when", ["paused", "answered-meanwhile", "answer-sent"])
def test_a_remote_question_answered_around_a_worker_kill_goes_on_in_the_same_task(
    tree: RemoteTree, judge_model: ProtocolServer, judge_script: JudgeReply, when: str
) -> None:
    """The worker is killed while the run waits (``paused``: the answer reaches the
    next worker), before the answer comes (``answered-meanwhile``: it waits for the
    next worker), or once the answer was sent to the judge (``answer-sent``: the next
    worker follows the task the answer went on, it does not send it again)."""
    from harnessc.runtime.runs.answers import Answer

    judge_script.slow = when == "answer-sent"
    run_id = tree.submit("go")
    victim = tree.worker()
    with tree.runs() as runs:
        wait_for(lambda: runs.state(run_id)["state"] == "awaiting_tool", what="the pause")
        pause = runs.pause(run_id)
        [call] = pause.calls
        assert call.name == "a2a_input" and call.path == "lead > judge", pause
        assert "which branch?" in call.arguments["question"]
        answer = Answer(results={call.id: "main"})
        if when == "answered-meanwhile":
            victim.kill()
            victim.wait(timeout=30)
            runs.answer(run_id, answer)
        elif when == "answer-sent":
            runs.answer(run_id, answer)
            wait_for(lambda: _sends(runs, run_id) == 2, what="the answer's send recorded")
            victim.kill()
            victim.wait(timeout=30)
        else:
            victim.kill()
            victim.wait(timeout=30)
    tree.worker()  # the same worker id: recovers the run at once
    with tree.runs() as runs:
        if when == "paused":  # the recovered run waits for the same call again
            wait_for(
                lambda: (
                    runs.state(run_id)["state"] == "awaiting_tool"
                    and [c.id for c in runs.pause(run_id).calls] == [call.id]
                ),
                what="the recovered run's pause",
            )
            runs.answer(run_id, answer)
        wait_for(lambda: runs.state(run_id)["state"] in ("done", "failed"), what="the end")
        assert runs.state(run_id)["state"] == "done", runs.state(run_id)
    followed = tree.run("--follow", run_id)
    assert followed.returncode == 0, followed.stderr
    head, _, value = followed.stdout.strip().partition(" | ")
    assert head == "LEAD DONE" and json.loads(value) == VALUE, followed.stdout
    assert len(_asked(judge_model)) == 1, "the judge got one task"
    answered = [
        r
        for r in judge_model.requests
        if r.json["messages"][-1]["role"] == "tool" and "main" in str(r.json["messages"][-1])
    ]
    assert len(answered) == 1, "the answer reached the judge's task once"
    lead_calls = [len(_results(r.json["messages"])) for r in tree.server.requests]
    assert lead_calls.count(0) == 1, "the lead's first model call is replayed, not sent again"


def test_a_remote_permission_ask_approved_after_a_worker_kill_runs_once(
    tree: RemoteTree, judge: Served, judge_model: ProtocolServer
) -> None:
    """The judge's bash call behind an ``ask``: the lead's pause holds it (an approval,
    path ``lead > judge``); killed while paused, the next worker takes the approval to
    the judge's task, which runs the call once."""
    marker = judge.log.parent / "durable-approved.txt"
    marker.unlink(missing_ok=True)  # the judge is the module's: an earlier case's call
    tree.lead.prompt = f'call bash {{"command": "touch {marker.name}"}}'
    run_id = tree.submit("go")
    victim = tree.worker()
    with tree.runs() as runs:
        wait_for(lambda: runs.state(run_id)["state"] == "paused", what="the pause")
        [held] = runs.pause(run_id).held
        assert held.name == "bash" and held.path == "lead > judge"
        victim.kill()
        victim.wait(timeout=30)
    assert not marker.exists()
    tree.worker()
    with tree.runs() as runs:
        wait_for(
            lambda: (
                runs.state(run_id)["state"] == "paused"
                and [c.id for c in runs.pause(run_id).held] == [held.id]
            ),
            what="the recovered run's pause",
        )
        runs.approve(run_id, [held.id])
        wait_for(lambda: runs.state(run_id)["state"] in ("done", "failed"), what="the end")
        assert runs.state(run_id)["state"] == "done", runs.state(run_id)
    assert marker.exists()
    bash_calls = [r for r in judge_model.requests if r.json["messages"][-1]["role"] == "tool"]
    assert len(bash_calls) == 1, "the judge ran its call once and answered once"

"""A remote A2A agent as a sub-agent (issue 44): the lead's spec names ``judge`` by its
A2A address with a bearer token from the environment; the judge is a real served
harnessc agent (the a2a-sdk's server side), the lead hands over with the a2a-sdk's
client. The lead is served too and driven through its native API: the judge's typed
value comes back as the hand-over's result, its permission ask and its question pause
the lead and the lead's answer resumes both, what it used counts against the lead's
budget, and the lead's abort cancels the judge's task."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.testing import ProtocolServer

from .servekit import TOKEN, Served, compile_agent, wait_status
from .typedkit import TYPED_SPEC, VALUE, model_reply

pytest.importorskip("a2a.client")

JUDGE_TOKEN = "judge-token-SECRET-55aa77"
LEAD_SPEC = """\
version: 1
name: lead
description: A lead that hands work to a remote judge.
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
system_prompt: You lead.
budget: {tokens: 40}
agents:
  judge:
    a2a: ${JUDGE_URL}
    headers:
      Authorization: Bearer ${JUDGE_TOKEN}
    description: Judges a change and gives a verdict.
"""


@pytest.fixture(scope="module")
def model() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        running.set_handler(model_reply)
        yield running


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory, model: ProtocolServer) -> Iterator[Served]:
    kit = compile_agent(tmp_path_factory.mktemp("judge"), model.url, TYPED_SPEC)
    kit.env["SERVE_TOKEN"] = JUDGE_TOKEN
    try:
        yield kit.serve(token=JUDGE_TOKEN)
    finally:
        kit.stop()


@pytest.fixture(scope="module")
def lead(
    tmp_path_factory: pytest.TempPathFactory, model: ProtocolServer, judge: Served
) -> Iterator[Served]:
    kit = compile_agent(tmp_path_factory.mktemp("lead"), model.url, LEAD_SPEC)
    kit.env.update(JUDGE_URL=judge.url, JUDGE_TOKEN=JUDGE_TOKEN)
    try:
        yield kit.serve()
    finally:
        kit.stop()


def _start(lead: Served, prompt: str) -> dict[str, Any]:
    with lead.client() as http:
        response = http.post("/v1/runs", json={"prompt": prompt})
        assert response.status_code == 201, response.text
        run_id = response.json()["run_id"]
        return wait_status(http, run_id, "done", "paused", "awaiting_tool", "error", "aborted")


def _resume(lead: Served, run_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    with lead.client() as http:
        response = http.post(f"/v1/runs/{run_id}/resume", json=answer)
        assert response.status_code in (200, 202), response.text
        return wait_status(http, run_id, "done", "paused", "awaiting_tool", "error", "aborted")


def _events(lead: Served, run_id: str) -> list[dict[str, Any]]:
    with lead.client() as http, http.stream("GET", f"/v1/runs/{run_id}/events") as stream:
        return [json.loads(line[5:]) for line in stream.iter_lines() if line.startswith("data:")]


def _handover_end(events: list[dict[str, Any]]) -> dict[str, Any]:
    ends = [e for e in events if e["type"] == "tool_execution_end" and e["tool_name"] == "task"]
    assert ends, [e["type"] for e in events]
    return ends[-1]


def _judge_workdir(judge: Served) -> Path:
    return judge.log.parent


def test_the_typed_value_comes_back_and_counts_against_the_budget(
    lead: Served, judge: Served
) -> None:
    """The judge's value is the hand-over's result; what it used (15 tokens) is added to
    the lead's (30): over the lead's 40, the lead pauses on its budget after the
    hand-over, and a raise lets it finish."""
    run = _start(lead, "delegate verdict please")
    assert run["status"] == "paused", run
    assert run["pause"]["kind"] == "budget" and run["pause"]["budget"]["limit"] == "tokens"
    assert run["pause"]["budget"]["used"] == 45
    end = _handover_end(_events(lead, run["run_id"]))
    assert (
        end["result"]["details"]["output"] == VALUE
        and end["result"]["details"]["state"] == "TASK_STATE_COMPLETED"
    )
    assert json.loads(end["result"]["content"][0]["text"]) == VALUE
    done = _resume(lead, run["run_id"], {"budget": {"tokens": 1000}})
    assert done["status"] == "done" and json.loads(done["text"].removeprefix("done: ")) == VALUE
    assert done["usage"]["turns"] >= 2


def test_the_judges_permission_ask_pauses_the_lead(lead: Served, judge: Served) -> None:
    marker = _judge_workdir(judge) / "remote-allowed.txt"
    run = _start(lead, f'delegate call bash {{"command": "touch {marker.name}"}}')
    assert run["status"] == "paused" and run["pause"]["kind"] == "approval", run
    [held] = run["pause"]["calls"]
    assert held["name"] == "bash" and held["held"] and held["path"] == "lead > judge"
    assert not marker.exists()
    after = _resume(lead, run["run_id"], {"approvals": {held["id"]: "allow"}})
    # the judge went on and finished; its tokens put the lead over its budget
    assert after["status"] == "paused" and after["pause"]["kind"] == "budget", after
    assert marker.exists()
    done = _resume(lead, run["run_id"], {"budget": {"tokens": 1000}})
    assert done["status"] == "done" and "approve" in done["text"]


def test_a_denied_ask_is_refused_by_the_judge(lead: Served, judge: Served) -> None:
    marker = _judge_workdir(judge) / "remote-denied.txt"
    run = _start(lead, f'delegate call bash {{"command": "touch {marker.name}"}}')
    [held] = run["pause"]["calls"]
    _resume(lead, run["run_id"], {"approvals": {held["id"]: "deny"}, "budget": {"tokens": 1000}})
    assert not marker.exists()


def test_the_judges_question_is_a_tool_result_of_the_lead(lead: Served) -> None:
    run = _start(lead, 'delegate call ask_human {"question": "which branch?"}')
    assert run["status"] == "awaiting_tool", run
    [call] = run["pause"]["calls"]
    assert call["name"] == "a2a_input" and "which branch?" in call["arguments"]["question"]
    assert call["path"] == "lead > judge"
    done = _resume(
        lead, run["run_id"], {"results": {call["id"]: "main"}, "budget": {"tokens": 1000}}
    )
    assert done["status"] == "done" and "approve" in done["text"]


def test_the_leads_abort_cancels_the_judges_task(lead: Served, judge: Served) -> None:
    with lead.client() as http:
        run_id = http.post("/v1/runs", json={"prompt": "delegate slow please"}).json()["run_id"]
        with judge.client() as remote:
            for _ in range(400):
                listed = remote.get("/v1/sessions").json()["sessions"]
                slow = [s for s in listed if s["first_prompt"] == "slow please"]
                if slow and slow[0]["status"] == "running":
                    break
                time.sleep(0.05)
            assert slow, listed
        assert http.post(f"/v1/runs/{run_id}/abort", json={}).status_code in (200, 202)
        wait_status(http, run_id, "aborted")
    with judge.client() as remote:
        for _ in range(400):
            judged = remote.get(f"/v1/runs/{slow[0]['latest_run']}").json()
            if judged["status"] != "running":
                break
            time.sleep(0.05)
    assert judged["status"] == "aborted" and "cancelled over A2A" in judged["reason"]


def test_no_token_reaches_the_leads_events_or_files(lead: Served) -> None:
    run = _start(lead, "delegate verdict again")
    events = json.dumps(_events(lead, run["run_id"]))
    assert JUDGE_TOKEN not in events and TOKEN not in events
    assert JUDGE_TOKEN not in lead.output()
    for path in lead.log.parent.parent.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".log", ".py"):
            assert JUDGE_TOKEN not in path.read_text(errors="replace"), path


def test_a_wrong_token_is_an_error_result(
    tmp_path: Path, model: ProtocolServer, judge: Served
) -> None:
    kit = compile_agent(tmp_path, model.url, LEAD_SPEC.replace("{tokens: 40}", "{turns: 5}"))
    kit.env.update(JUDGE_URL=judge.url, JUDGE_TOKEN="wrong-token")
    served = kit.serve()
    try:
        run = _start(served, "delegate verdict please")
        end = _handover_end(_events(served, run["run_id"]))
        assert end["is_error"] and "judge" in end["result"]["content"][0]["text"]
        assert run["status"] == "done"
    finally:
        kit.stop()


def test_hand_overs_to_one_remote_share_its_client_until_an_exchange_fails(
    judge: Served,
) -> None:
    """In one event loop the hand-overs to a remote share one client (its card read and
    its HTTP client made once, also by two first hand-overs at once); a hand-over whose
    exchange fails (here a wrong token) drops it, and the next one makes a new one."""
    from harnessc.runtime.agent.remote_a2a import (
        RemoteA2A,
        RemoteHandOver,
        drop_client,
        shared_client,
    )
    from harnessc.runtime.core.budget import BudgetUsage
    from harnessc.runtime.core.signal import AbortSignal

    async def emit(event: Any) -> None:
        return None

    async def main() -> None:
        good = RemoteA2A(judge.url, headers={"Authorization": f"Bearer {JUDGE_TOKEN}"})
        first, second = await asyncio.gather(
            shared_client(good, "judge"), shared_client(good, "judge")
        )
        assert first is second and await shared_client(good, "judge") is first
        await drop_client(good)
        assert await shared_client(good, "judge") is not first
        await drop_client(good)

        bad = RemoteA2A(judge.url, headers={"Authorization": "Bearer wrong-token"})
        before = await shared_client(bad, "judge")  # the card is public: made
        handover = RemoteHandOver(
            bad, name="judge", path=("lead", "judge"), call_id="c1", emit=emit, usage=BudgetUsage()
        )
        result = await handover.run("verdict please", AbortSignal(), None, None)
        assert result.is_error
        after = await shared_client(bad, "judge")
        assert after is not before
        await drop_client(bad)

    asyncio.run(main())


def test_the_spec_keeps_the_credential_in_the_environment(tmp_path: Path) -> None:
    from harnessc.spec import parse_spec

    bad = LEAD_SPEC.replace("Bearer ${JUDGE_TOKEN}", "Bearer abc123")
    loaded = parse_spec(bad.encode(), tmp_path / "lead.yaml")
    assert loaded.spec is None
    assert any("keep it in the environment" in d.message for d in loaded.diagnostics)
    both = LEAD_SPEC.replace("    a2a: ${JUDGE_URL}\n", "    a2a: ${JUDGE_URL}\n    spec: x.yaml\n")
    loaded = parse_spec(both.encode(), tmp_path / "lead.yaml")
    assert any("exactly one of spec, from or a2a" in d.message for d in loaded.diagnostics)


def test_a_pause_on_the_judge_survives_a_restart_of_the_lead(
    tmp_path: Path, model: ProtocolServer, judge: Served
) -> None:
    """The lead pauses on the judge's ask and is stopped; a new lead process answers
    the pause: the hand-over goes on with the same remote task (recorded on the call)."""
    kit = compile_agent(tmp_path, model.url, LEAD_SPEC)
    kit.env.update(JUDGE_URL=judge.url, JUDGE_TOKEN=JUDGE_TOKEN)
    marker = _judge_workdir(judge) / "after-restart.txt"
    try:
        first = kit.serve()
        run = _start(first, f'delegate call bash {{"command": "touch {marker.name}"}}')
        [held] = run["pause"]["calls"]
        assert first.stop() == 0
        second = kit.serve()
        answer = {"approvals": {held["id"]: "allow"}, "budget": {"tokens": 1000}}
        done = _resume(second, run["run_id"], answer)
        assert done["status"] == "done" and "approve" in done["text"], done
        assert marker.exists()
    finally:
        kit.stop()


def test_check_reads_the_remote_card_and_shows_its_skills(
    tmp_path: Path, judge: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from harnessc.cli import cli

    spec = tmp_path / "lead.yaml"
    spec.write_text(LEAD_SPEC)
    monkeypatch.setenv("JUDGE_URL", judge.url)
    monkeypatch.setenv("JUDGE_TOKEN", JUDGE_TOKEN)
    shown = CliRunner().invoke(cli, ["check", str(spec)])
    assert shown.exit_code == 0, shown.output
    assert "judge: remote A2A agent 'helper' (1 skill: helper)" in shown.output
    assert JUDGE_TOKEN not in shown.output
    monkeypatch.delenv("JUDGE_TOKEN")
    unset = CliRunner().invoke(cli, ["check", str(spec)])
    assert unset.exit_code == 0 and "judge: remote A2A agent not read: JUDGE_TOKEN not set" in (
        unset.output
    )
    monkeypatch.setenv("JUDGE_TOKEN", JUDGE_TOKEN)
    monkeypatch.setenv("JUDGE_URL", "http://127.0.0.1:9")
    down = CliRunner().invoke(cli, ["check", str(spec)])
    assert down.exit_code == 0 and "cannot read http://127.0.0.1:9" in down.output


def test_aborting_the_lead_paused_on_the_judge_cancels_the_judges_task(
    lead: Served, judge: Served
) -> None:
    run = _start(lead, 'delegate call ask_human {"question": "abort me?"}')
    assert run["status"] == "awaiting_tool", run
    with judge.client() as remote:
        listed = remote.get("/v1/sessions").json()["sessions"]
        [asked] = [s for s in listed if "abort me?" in (s["first_prompt"] or "")]
        assert remote.get(f"/v1/runs/{asked['latest_run']}").json()["status"] == "awaiting_tool"
    with lead.client() as http:
        assert http.post(f"/v1/runs/{run['run_id']}/abort", json={}).status_code in (200, 202)
        wait_status(http, run["run_id"], "aborted")
    with judge.client() as remote:
        judged = wait_status(remote, asked["latest_run"], "aborted")
    assert "cancelled over A2A" in judged["reason"]

"""Durable runs meeting the other features and a user's ordinary mistakes: MCP tools,
permission asks, pauses of a one-shot run, budgets, failures, base URLs and the queue's
settings, each through the generated agent in a subprocess with real DBOS."""

from __future__ import annotations

import json
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


def _run_id(stderr: str) -> str:
    (run_id,) = [line.split()[1] for line in stderr.splitlines() if line.startswith("run ")]
    return run_id


def _listed(agent: DurableAgent) -> dict[str, dict[str, object]]:
    rows = [json.loads(line) for line in agent.client("--runs", "--json")[1].splitlines()]
    return {str(r["id"]): r for r in rows}


def _state(agent: DurableAgent, run_id: str) -> object:
    return _listed(agent)[run_id]["state"]


def test_a_one_shot_run_at_a_pull_point_pauses_says_how_to_answer_and_a_worker_goes_on(
    agent: DurableAgent,
) -> None:
    done = agent.run("steps 1 approve p")
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and "CancelledError" not in done.stderr
    run_id = _run_id(done.stderr)
    assert "[work] step=1" in done.stderr  # the plain printer's tool line
    assert "pending: approve  id=ask_p" in done.stderr
    assert f"--run {run_id} --resume-with" in done.stderr
    # the same state in every view
    assert _state(agent, run_id) == "awaiting_tool"
    code, _, err = agent.client("--follow", run_id)
    assert code == 3 and "pending: approve  id=ask_p" in err
    agent.worker("w1")  # a different worker: takes the run over once the lease has passed
    assert agent.client("--run", run_id, "--resume-with", '{"ask_p": "yes"}')[0] == 0
    wait_for(lambda: _state(agent, run_id) == "done", what="the run's end", every=0.3)
    code, out, _ = agent.client("--follow", run_id)
    assert code == 0 and out.splitlines()[-1] == "finished 1 p"
    assert agent.executions() == {"call_p_1": 1}


def _asks(agent: DurableAgent) -> list[str]:
    """The permission entries of the run's session: call id and decision, in order."""
    (session_file,) = sorted((agent.path.parent / "sessions").glob("*/*.jsonl"))
    found = []
    for line in session_file.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "custom" and entry.get("customType") == "harnessc.permission":
            found.append(f"{entry['data']['callId']} {entry['data']['decision']}")
    return found


def test_an_ask_is_approved_or_denied_from_any_process_and_runs_can_be_cancelled(
    agent: DurableAgent,
) -> None:
    agent.env["ASK_TOOLS"] = "work"
    queued = submit(agent, "steps 1 queued")  # no worker yet
    assert agent.client("--run", queued, "--cancel")[0] == 0
    asked = agent.run("steps 2 q")
    assert asked.returncode == 3, asked.stderr
    run_id = _run_id(asked.stderr)
    assert "paused: permission needed: work" in asked.stderr
    assert f"--run {run_id} --approve call_q_1  (or --deny call_q_1)" in asked.stderr
    code, _, err = agent.client("--run", run_id, "--approve", "call_q_9")
    assert code == 2 and "holds call_q_1" in err
    agent.worker("w1")
    code, out, err = agent.client("--run", run_id, "--approve", "call_q_1")
    assert code == 0 and "approved call_q_1" in out, err
    wait_for(
        lambda: "call_q_2" in json.dumps(agent.client("--follow", run_id)[2]),
        what="the second ask",
        every=0.3,
    )
    assert agent.client("--run", run_id, "--deny", "call_q_2")[0] == 0
    wait_for(lambda: _state(agent, run_id) == "done", what="the run's end", every=0.3)
    assert agent.executions() == {"call_q_1": 1}  # approved: ran once; denied: never
    assert _asks(agent) == [
        "call_q_1 pending",
        "call_q_1 allow",
        "call_q_2 pending",
        "call_q_2 deny",
    ]
    paused = agent.run("steps 1 approve c")  # a run waiting at a pull point, cancelled
    other = _run_id(paused.stderr)
    code, out, err = agent.client("--run", other, "--cancel")
    assert code == 0 and f"cancelled {other}" in out, err
    # the waiting run's worker ends it, as a plain run is aborted: recorded in its session
    wait_for(lambda: _state(agent, other) == "aborted", what="the abort taken", every=0.3)
    listed = _listed(agent)
    assert listed[queued]["state"] == "cancelled" and listed[other]["reason"] == "cancelled"
    code, _, err = agent.client("--run", other, "--resume-with", '{"ask_c": "x"}')
    assert code == 2 and "not waiting (aborted)" in err
    assert "call_queued_1" not in agent.executions()


def test_a_resume_with_a_budget_raises_the_named_limits_only(agent: DurableAgent) -> None:
    agent.env.update(BUDGET_TURNS="1", BUDGET_TOOL_CALLS="2")
    paused = agent.run("steps 3 b")
    assert paused.returncode == 3, paused.stderr
    run_id = _run_id(paused.stderr)
    assert "budget limit hit: turns" in paused.stderr
    assert '"budget": {"turns": ' in paused.stderr  # how to raise it
    agent.worker("w1")
    assert agent.client("--run", run_id, "--resume-with", '{"budget": {"turns": 40}}')[0] == 0
    wait_for(lambda: _state(agent, run_id) != "running", what="the next stop", every=0.3)
    wait_for(
        lambda: "tool_calls" in str(_listed(agent)[run_id]["reason"]),
        what="the tool-call limit",
        every=0.3,
    )
    assert _state(agent, run_id) == "paused"  # the tool-call cap still holds


def test_failures_say_their_error_and_exit_as_plain_runs_do(agent: DurableAgent) -> None:
    keyless = agent.run("steps 1 nokey", env={"TEST_API_KEY": ""})
    assert keyless.returncode == 2
    assert "error: no API key for model 'main' (test-model)" in keyless.stderr
    assert "TEST_API_KEY" in keyless.stderr
    worker = agent.run("--worker", "--worker-id", "w0", env={"TEST_API_KEY": ""})
    assert worker.returncode == 2 and "TEST_API_KEY" in worker.stderr
    from harnessc.testing import ProtocolServer, ScriptedResponse

    with ProtocolServer() as refusing:
        refusing.set_handler(
            lambda _: ScriptedResponse.error(400, "the model refuses", kind="invalid_request_error")
        )
        url = f"{refusing.url}/v1"
        # the variable and the flag point the run at another server, as for a plain run
        for args, env in (((), {"HARNESSC_BASE_URL": url}), (("--base-url", url), {})):
            failed = agent.run(*args, "steps 1 fails", env=env)
            assert failed.returncode == 1, failed.stderr
            assert "error: " in failed.stderr and "the model refuses" in failed.stderr
        assert len(refusing.requests) == 2
        run_id = _run_id(failed.stderr)
        code, _, err = agent.client("--follow", run_id)
        assert code == 1 and "the model refuses" in err
        assert _state(agent, run_id) == "failed"
        assert "the model refuses" in str(_listed(agent)[run_id]["reason"])
        # a worker too: --base-url is taken, the submitted run goes to that server
        queued = submit(agent, "steps 1 worker")
        agent.worker("w1", "--base-url", url)
        wait_for(lambda: _state(agent, queued) == "failed", what="the run's end", every=0.3)
        assert len(refusing.requests) == 3


def test_a_one_shot_run_leaves_the_queue_settings_of_the_workers_alone(
    tmp_path: Path, server: Server, pg_database: str
) -> None:
    """A worker configured for 2 runs at once still takes 2 after a one-shot run of the
    same agent (which runs 1, itself): both runs start before either ends."""
    agent = make_agent(tmp_path, server.running, pg_database, sessions=False)
    try:
        agent.worker("w1", env={"DURABLE_CONCURRENCY": "2", "TOOL_SLEEP_S": "2"})
        done = agent.run("steps 1 alone")
        assert done.returncode == 0, done.stderr
        first, second = submit(agent, "steps 1 a"), submit(agent, "steps 1 b")
        wait_for(
            lambda: _state(agent, first) == "done" and _state(agent, second) == "done",
            what="both runs",
            every=0.3,
        )
        order = [line.split()[1] for line in agent.side_effects.read_text().splitlines()[2:]]
        assert order[:2] == ["start", "start"], order
    finally:
        agent.stop_workers()


def test_runs_is_a_table_and_a_closed_pipe_ends_quietly(agent: DurableAgent) -> None:
    import subprocess
    import sys

    run_id = submit(agent, "steps 1 listed")
    code, table, _ = agent.client("--runs")
    header, row = table.splitlines()
    assert header.split() == ["ID", "STATUS", "REASON", "AGE", "WORKER"]
    assert row.startswith(f"{run_id}  queued") and row.split()[-1] == "-"
    listed = _listed(agent)[run_id]
    assert {"id", "state", "reason", "age_s", "worker"} <= set(listed)
    reader = subprocess.Popen(
        [sys.executable, str(agent.path), "--runs"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=agent.env,
        cwd=agent.workdir,
        stdin=subprocess.DEVNULL,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # the reader is gone (``| head`` that has read enough)
    err = reader.stderr.read().decode()
    reader.stderr.close()
    assert reader.wait(timeout=60) == 0, err
    assert "Error" not in err and "Traceback" not in err


def test_a_stalled_worker_declared_dead_abandons_the_runs_it_lost(
    tmp_path: Path, server: Server, pg_database: str
) -> None:
    """SIGSTOP a worker in a tool past its lease: another worker recovers the run and
    finishes it. SIGCONT: the stalled worker finds its lease lost before its next step
    and lets the run go; no step after the stalled one runs twice."""
    import signal

    agent = make_agent(tmp_path, server.running, pg_database, sessions=False)
    try:
        run_id = submit(agent, "steps 3 f")
        stalled = agent.worker("a", env={"TOOL_SLEEP_S": "1"})
        wait_for(lambda: "start call_f_1" in _read(agent.side_effects), what="the first tool")
        stalled.send_signal(signal.SIGSTOP)
        agent.worker("b")
        wait_for(lambda: _state(agent, run_id) == "done", what="b finishing the run", every=0.3)
        stalled.send_signal(signal.SIGCONT)
        mine = f"{stalled.pid} start call_f_2"
        wait_for(
            lambda: stalled.poll() is not None or mine in _read(agent.side_effects),
            what="the stalled worker to go on or stop",
            timeout=15,
        )
        executions = agent.executions()
        assert executions["call_f_2"] == 1 and executions["call_f_3"] == 1, executions
        assert mine not in _read(agent.side_effects)
        assert stalled.poll() is not None  # it stopped: its runs are another's
        code, out, _ = agent.client("--follow", run_id)
        assert code == 0 and out.splitlines()[-1] == "finished 3 f"
    finally:
        if agent.workers and agent.workers[0].poll() is None:
            agent.workers[0].send_signal(signal.SIGCONT)
        agent.stop_workers()


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_the_python_client_submits_reads_and_cancels_without_executing(
    agent: DurableAgent,
) -> None:
    from harnessc.runtime.durable import DurableConfig, DurableError, DurableRuns

    config = DurableConfig(database_url=SQLITE, queue="dtest")
    with DurableRuns(config, str(agent.workdir), create=True) as runs:
        run_id = runs.submit("steps 1 py")
        assert runs.state(run_id)["state"] == "queued"
        with pytest.raises(DurableError, match="is not waiting \\(queued\\)"):
            runs.approve(run_id, ["call_py_1"])
        runs.cancel(run_id)
        assert runs.state(run_id)["state"] == "cancelled"
        with pytest.raises(DurableError, match="has ended"):
            runs.cancel(run_id)
        with pytest.raises(DurableError, match="no run nope"):
            runs.state("nope")
    assert agent.executions() == {}

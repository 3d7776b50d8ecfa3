"""Durable runs end to end: real worker processes, a real DBOS system database (SQLite,
and PostgreSQL when one can be started), a local protocol server counting model
requests and a side-effect file counting tool executions."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse

from .durakit import DurableAgent, make_agent, scripted

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")


class Server:
    """The scripted server, with optional delays for chosen requests."""

    def __init__(self, running: ProtocolServer) -> None:
        self.running = running
        self.slow: dict[tuple[str, int], float] = {}  # (tag, tool results so far) -> delay
        running.set_handler(self.answer)

    def answer(self, request: RecordedRequest) -> ScriptedResponse:
        response = scripted(request)
        delay = self.slow.get(key_of(request))
        if delay:
            response.delay_s = delay
        return response

    def requests_by_key(self) -> Counter[tuple[str, int]]:
        return Counter(key_of(r) for r in self.running.requests)


def key_of(request: RecordedRequest) -> tuple[str, int]:
    messages = request.json["messages"]
    prompt = next(m for m in messages if m["role"] == "user")["content"]
    if isinstance(prompt, list):
        prompt = "".join(p.get("text", "") for p in prompt)
    return str(prompt).split()[-1], sum(1 for m in messages if m["role"] == "tool")


@pytest.fixture
def server() -> Iterator[Server]:
    with ProtocolServer() as running:
        yield Server(running)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return "sqlite:///.harnessc/durable.sqlite"  # relative: resolves in the agent's cwd
    return str(request.getfixturevalue("pg_database"))


@pytest.fixture
def sqlite_agent(tmp_path: Path, server: Server) -> Iterator[DurableAgent]:
    agent = make_agent(tmp_path, server.running, "sqlite:///.harnessc/durable.sqlite")
    yield agent
    agent.stop_workers()


@pytest.fixture
def any_agent(tmp_path: Path, server: Server, database_url: str) -> Iterator[DurableAgent]:
    agent = make_agent(tmp_path, server.running, database_url)
    yield agent
    agent.stop_workers()


def wait_for(
    predicate: Any, timeout: float = 60.0, what: str = "condition", every: float = 0.1
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def shape(path: Path) -> list[Any]:
    """A session file's entries without ids, timestamps and run-specific metadata."""
    out: list[Any] = []
    for line in path.read_text().splitlines()[1:]:
        entry = json.loads(line)
        for key in ("id", "parentId", "timestamp"):
            entry.pop(key, None)
        data = entry.get("data")
        if entry.get("customType") == "harnessc.checkpoint" and isinstance(data, dict):
            # a workspace checkpoint: when and of what batch (its ids, time and trees are
            # the workspace's at that moment, not the run's)
            entry["data"] = {"phase": data["checkpoint"]["phase"], "tools": data.get("tools")}
        elif isinstance(data, dict):  # the harness's pause record: its run id and clock
            _drop(data, {"run_id", "wall_clock_s", "timestamp"})
        message = entry.get("message")
        if isinstance(message, dict):
            message.pop("timestamp", None)
            message.pop("usage", None)
            message.pop("responseId", None)
        out.append(entry)
    return out


def _drop(value: Any, keys: set[str]) -> None:
    if isinstance(value, dict):
        for key in keys & set(value):
            del value[key]
        for item in value.values():
            _drop(item, keys)
    elif isinstance(value, list):
        for item in value:
            _drop(item, keys)


def sessions_of(agent: DurableAgent) -> list[Path]:
    return sorted((agent.path.parent / "sessions").glob("*/*.jsonl"))


def submit(agent: DurableAgent, prompt: str) -> str:
    code, out, err = agent.client("--submit", prompt)
    assert code == 0, err
    run_id = out.strip()
    assert len(run_id) == 36
    return run_id


def test_one_shot_durable_run_leaves_the_session_a_plain_run_leaves(
    sqlite_agent: DurableAgent, tmp_path: Path
) -> None:
    durable = sqlite_agent.run("steps 2 same")
    assert durable.returncode == 0, durable.stderr
    assert durable.stdout.strip() == "finished 2 same"
    (durable_file,) = sessions_of(sqlite_agent)
    plain_dir = tmp_path / "plain"
    plain = sqlite_agent.run("--session-dir", str(plain_dir), "steps 2 same")  # not durable
    assert plain.returncode == 0, plain.stderr
    (plain_file,) = sorted(plain_dir.glob("*/*.jsonl"))
    assert shape(durable_file) == shape(plain_file)
    assert sqlite_agent.executions() == {"call_same_1": 2, "call_same_2": 2}  # once per run
    assert (sqlite_agent.workdir / ".harnessc" / "durable.sqlite").is_file()


def test_submit_worker_follow_runs_and_a_resume_from_a_third_process(
    any_agent: DurableAgent, server: Server
) -> None:
    plain = submit(any_agent, "steps 2 plain")
    asking = submit(any_agent, "steps 1 approve asking")
    listed = any_agent.client("--runs", "--json")[1]
    states = {json.loads(line)["id"]: json.loads(line)["state"] for line in listed.splitlines()}
    assert states == {plain: "queued", asking: "queued"}  # no worker yet: nothing ran
    assert server.running.requests == []
    any_agent.worker("w1")
    followed = any_agent.run("--follow", plain)  # a client in a process of its own
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout.splitlines() == ["finished 2 plain"]  # as a plain run prints it
    tools = [line.split("  ")[0] for line in followed.stderr.splitlines() if "[work]" in line]
    assert tools == ["[work] step=1", "[work] step=2"]
    code, waiting, _ = any_agent.client("--follow", asking, "--json")
    assert code == 3
    assert any(json.loads(line)["type"] == "tool_execution_start" for line in waiting.splitlines())
    runs = any_agent.client("--runs")[1]
    assert f"{asking}  awaiting_tool" in runs and f"{plain}  done" in runs
    code, _, err = any_agent.client("--run", asking, "--resume-with", '{"nope": "x"}')
    assert code == 2 and "waits for ask_asking" in err
    resumed = any_agent.run("--run", asking, "--resume-with", '{"ask_asking": "approved"}')
    assert resumed.returncode == 0, resumed.stderr
    code, final, _ = any_agent.client("--follow", asking)
    assert code == 0 and final.splitlines()[-1] == "finished 1 asking"
    assert any_agent.executions() == {"call_plain_1": 1, "call_plain_2": 1, "call_asking_1": 1}
    assert max(server.requests_by_key().values()) == 1  # no model request twice
    stopped = any_agent.workers[0]
    stopped.send_signal(signal.SIGTERM)
    assert stopped.wait(timeout=30) == 0


@pytest.mark.parametrize("where", ["tool", "model", "pull"])
def test_sigkill_mid_run_repeats_nothing_committed(
    sqlite_agent: DurableAgent, server: Server, tmp_path: Path, where: str
) -> None:
    agent = sqlite_agent
    # the same run, uninterrupted and not durable, for the session to compare with
    plain = tmp_path / "plain"
    first = agent.run("--session-dir", str(plain), "steps 3 approve k")
    assert first.returncode == 3, first.stderr  # waits for approve: a pull point
    answer = ("--resume-with", '{"ask_k": "yes"}')
    second = agent.run("--session-dir", str(plain), "--continue", *answer)
    assert second.returncode == 0, second.stdout + second.stderr
    (reference_file,) = sorted(plain.glob("*/*.jsonl"))
    server.running.reset()
    server.running.set_handler(server.answer)
    agent.side_effects.unlink()

    # a tool killed mid-execution runs again here (durable.interrupted_tools: rerun; the
    # default, fail, is test_durable_interrupted's)
    env = {"TOOL_SLEEP_S": "3" if where == "tool" else "0", "DURABLE_INTERRUPTED": "rerun"}
    if where == "model":
        server.slow[("k", 2)] = 3.0  # the third model call takes 3 s
    run_id = submit(agent, "steps 3 approve k")
    victim = agent.worker("w1", env=env)
    if where == "tool":
        wait_for(lambda: "start call_k_2" in _read(agent.side_effects), what="the second tool")
    elif where == "model":
        wait_for(lambda: server.requests_by_key()[("k", 2)] == 1, what="the third model call")
    else:
        wait_for(
            lambda: "awaiting_tool" in agent.client("--runs")[1], what="the pull point", every=0.5
        )
    victim.kill()  # SIGKILL: no drain, no cleanup
    victim.wait(timeout=30)
    server.slow.clear()
    agent.worker("w1", env={"DURABLE_INTERRUPTED": "rerun"})  # the same id: recovers its runs
    if where == "pull":
        resumed = agent.run("--run", run_id, "--resume-with", '{"ask_k": "yes"}')
        assert resumed.returncode == 0, resumed.stderr
    else:
        wait_for(
            lambda: "awaiting_tool" in agent.client("--runs")[1], what="the pull point", every=0.5
        )
        assert agent.client("--run", run_id, "--resume-with", '{"ask_k": "yes"}')[0] == 0
    # the answer is taken once the recovering worker has replayed the run to its wait (a
    # follower started before that would see the wait and stop)
    wait_for(lambda: f"{run_id}  done" in agent.client("--runs")[1], what="the end", every=0.5)
    code, done, err = agent.client("--follow", run_id)
    assert code == 0, err
    assert done.splitlines()[-1] == "finished 3 k"
    assert agent.executions() == {"call_k_1": 1, "call_k_2": 1, "call_k_3": 1}
    requests = server.requests_by_key()
    interrupted = ("k", 2) if where == "model" else None
    for key, count in requests.items():
        assert count == (2 if key == interrupted else 1), (key, count)
    (session_file,) = sessions_of(agent)
    assert shape(session_file) == shape(reference_file)


def test_a_dead_workers_runs_are_finished_by_another_after_the_lease(
    tmp_path: Path, server: Server, pg_database: str
) -> None:
    any_agent = make_agent(tmp_path, server.running, pg_database)
    try:
        _lease(any_agent)
    finally:
        any_agent.stop_workers()


def _lease(any_agent: DurableAgent) -> None:
    run_id = submit(any_agent, "steps 2 lease")
    victim = any_agent.worker("gone", env={"TOOL_SLEEP_S": "3"})
    wait_for(lambda: "start call_lease_1" in _read(any_agent.side_effects), what="the first tool")
    victim.kill()
    victim.wait(timeout=30)
    any_agent.worker("other")  # a different id: takes over once the lease (2 s) has passed
    code, done, err = any_agent.client("--follow", run_id)
    assert code == 0, err
    assert done.splitlines()[-1] == "finished 2 lease"
    # the call the dead worker was running is not run again (it started once)
    assert any_agent.executions() == {"call_lease_2": 1}
    assert _read(any_agent.side_effects).count("start call_lease_1") == 1
    listed = [json.loads(line) for line in any_agent.client("--runs", "--json")[1].splitlines()]
    assert [(r["id"], r["state"], r["worker"]) for r in listed] == [(run_id, "done", "other")]


def test_four_workers_complete_200_runs_exactly_once(
    tmp_path: Path, server: Server, pg_database: str
) -> None:
    agent = make_agent(tmp_path, server.running, pg_database, sessions=False)
    try:
        for n in range(4):
            agent.worker(f"w{n}", env={"DURABLE_CONCURRENCY": "8", "DURABLE_LEASE_S": "60"})
        script = (
            "import sys, uuid\n"
            "from dbos import DBOS, DBOSClient\n"
            "DBOS.migrate(sys.argv[1])\n"
            "c = DBOSClient(system_database_url=sys.argv[1], application_name='hx-dtest')\n"
            "for i in range(200):\n"
            "    c.enqueue({'workflow_name': 'harnessc_run', 'queue_name': 'dtest',"
            " 'workflow_id': f'run-{i:03d}'}, {'prompt': f'steps 1 r{i}', 'cwd': sys.argv[2]})\n"
            "c.destroy()\n"
        )
        import subprocess
        import sys

        subprocess.run(
            [sys.executable, "-c", script, pg_database, str(agent.workdir)],
            check=True,
            env=agent.env,
            timeout=120,
        )

        from dbos import DBOSClient

        client = DBOSClient(system_database_url=pg_database, application_name="hx-dtest")
        try:
            wait_for(
                lambda: len(client.list_workflows(status="SUCCESS", load_input=False)) == 200,
                timeout=300,
                what="200 finished runs",
                every=1.0,
            )
        finally:
            client.destroy()
        rows = [json.loads(line) for line in agent.client("--runs", "--json")[1].splitlines()]
        assert len(rows) == 200 and {r["state"] for r in rows} == {"done"}
        assert len({r["worker"] for r in rows}) > 1  # the queue was shared
        executions = agent.executions()
        assert len(executions) == 200 and set(executions.values()) == {1}
        assert set(server.requests_by_key().values()) == {1}
        assert len(server.running.requests) == 400
    finally:
        agent.stop_workers()


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_without_durable_dbos_is_never_imported(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import harnessc.runtime, harnessc.runtime.durable\n"
        "from harnessc.runtime.durable import DurableConfig\n"
        "DurableConfig()\n"
        "assert 'dbos' not in sys.modules and 'psycopg' not in sys.modules, sorted(sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}
    )
    assert done.returncode == 0, done.stderr


def test_clients_say_clearly_when_there_is_nothing(sqlite_agent: DurableAgent) -> None:
    code, _, err = sqlite_agent.client("--runs")
    assert code == 2 and "no durable runs yet" in err
    assert not (sqlite_agent.workdir / ".harnessc").exists()  # a reader creates nothing
    submit(sqlite_agent, "steps 1 queued")
    code, _, err = sqlite_agent.client("--follow", "not-a-run")
    assert code == 2 and "no run not-a-run" in err
    code, _, err = sqlite_agent.client("--run", "not-a-run", "--resume-with", "[1]")
    assert code == 2 and "JSON object" in err


def _write_resources(root: Path, word: str) -> None:
    (root / "templates").mkdir(parents=True, exist_ok=True)
    (root / "templates" / "task.md").write_text(
        f"---\ndescription: a task\n---\nsteps 2 {word} $1\n"
    )


def _run_ids(value: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "run_id" and isinstance(item, str):
                found.add(item)
            found |= _run_ids(item)
    elif isinstance(value, list):
        for item in value:
            found |= _run_ids(item)
    return found


def test_a_recovered_run_keeps_its_run_id_wall_clock_and_resources(
    sqlite_agent: DurableAgent, server: Server, tmp_path: Path
) -> None:
    """SIGKILL during a tool, then edit the template on disk: the recovered run keeps its
    run id (the durable one), its wall clock counts the time spent before the kill (a 3 s
    budget pauses it), and its /task expansion is the one it started with."""
    agent = sqlite_agent
    resources = tmp_path / "resources"
    _write_resources(resources, "original")
    env = {"RESOURCES_DIR": str(resources), "WALL_CLOCK_S": "3"}
    run_id = submit(agent, "/task pin")
    # The victim's budget is wide: the loop would stop a tool at the run's deadline, and
    # the kill must come inside the tool. The recovering worker's 3 s budget pauses the run.
    victim = agent.worker("w1", env={**env, "TOOL_SLEEP_S": "6", "WALL_CLOCK_S": "600"})
    wait_for(lambda: "start call_pin_1" in _read(agent.side_effects), what="the first tool")
    time.sleep(3.5)  # past the recovering worker's wall-clock budget, inside the tool
    victim.kill()
    victim.wait(timeout=30)
    _write_resources(resources, "changed")
    agent.worker("w1", env=env)  # the same id: recovers the run at once
    wait_for(
        lambda: any(s in agent.client("--runs")[1] for s in ("paused", "done")),
        what="the recovered run to stop",
        every=0.3,
    )
    assert f"{run_id}  paused" in agent.client("--runs")[1]  # the clock went on counting
    resumed = agent.client("--run", run_id, "--resume-with", '{"budget": {"wall_clock_s": 600}}')
    assert resumed[0] == 0, resumed[2]
    code, events, err = agent.client("--follow", run_id, "--json")
    assert code == 0, err
    stream = [json.loads(line) for line in events.splitlines()]
    assert stream[-1]["type"] == "agent_end"
    assert _run_ids(stream) == {run_id}  # one run id, before and after the kill
    assert agent.executions() == {"call_pin_2": 1}  # the killed call is not run again
    prompts = {
        next(str(m["content"]) for m in r.json["messages"] if m["role"] == "user")
        for r in server.running.requests
    }
    assert prompts == {"steps 2 original pin"}  # the template the run started with
    (session_file,) = sessions_of(agent)
    entries = [json.loads(line) for line in session_file.read_text().splitlines()]
    assert _run_ids(entries) == {run_id}
    pauses = [e for e in entries if "wall_clock_s" in json.dumps(e.get("data", {}))]
    assert pauses  # the pause record of the budget


def test_workers_starting_together_all_create_the_heartbeat_table(pg_database: str) -> None:
    """Heartbeat rows of workers that start at the same moment on a new database: each
    creates the table unless it exists, and a race lost is no error (one used to kill a
    worker with a unique violation)."""
    from concurrent.futures import ThreadPoolExecutor

    from harnessc.runtime.durable.engine import Heartbeat

    def start(n: int) -> str:
        beat = Heartbeat(pg_database, f"w{n}", "q", 30.0)
        try:
            beat.take()
            return beat.worker_id
        finally:
            beat.engine.dispose()

    for _ in range(3):  # the race is likely, not certain, in one round
        import psycopg

        with psycopg.connect(pg_database, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS harnessc_workers")
        with ThreadPoolExecutor(8) as pool:
            assert sorted(pool.map(start, range(8))) == [f"w{n}" for n in range(8)]


def test_a_run_records_one_step_per_model_call_and_tool_and_its_last_events_in_its_output(
    sqlite_agent: DurableAgent,
) -> None:
    """The DBOS steps of a finished run: the session step, then each model call and each
    tool execution, nothing else (the events after the last step are part of the run's
    output, not a step of their own); --json and --follow still print them all."""
    from dbos import DBOSClient

    done = sqlite_agent.run("steps 2 count", "--json")
    assert done.returncode == 0, done.stderr
    (run_id,) = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("run ")]
    printed = [json.loads(line) for line in done.stdout.splitlines()]
    code, followed, err = sqlite_agent.client("--follow", run_id, "--json")
    assert code == 0, err
    assert [json.loads(line) for line in followed.splitlines()] == printed
    assert printed[-1]["type"] == "agent_end"
    assert sum(e["type"] == "tool_execution_end" for e in printed) == 2
    url = "sqlite:///" + str(sqlite_agent.workdir / ".harnessc" / "durable.sqlite")
    client = DBOSClient(system_database_url=url, application_name="hx-dtest")
    try:
        names = [step["function_name"] for step in client.list_workflow_steps(run_id)]
    finally:
        client.destroy()
    assert names == ["begin", *["model_call", "tool:work"] * 2, "model_call"]


def test_follow_and_run_take_a_unique_run_id_prefix(sqlite_agent: DurableAgent) -> None:
    """As session commands take a session id prefix: --follow and --run take the first
    characters of a run id that name one run; a prefix naming several is refused with
    the runs it names."""
    ids = [submit(sqlite_agent, f"steps 1 p{i}") for i in range(17)]
    # 17 ids, 16 hex digits: two share their first character
    first = Counter(run_id[0] for run_id in ids)
    shared = next(c for c, n in first.items() if n > 1)
    code, _, err = sqlite_agent.client("--follow", shared)
    assert code == 2 and f"run id prefix {shared!r} names" in err, err
    assert sum(run_id in err for run_id in ids) >= 2

    def shortest(run_id: str) -> str:
        return next(
            run_id[:n] for n in range(4, 37) if sum(r.startswith(run_id[:n]) for r in ids) == 1
        )

    target, done = ids[0], ids[1]
    code, _, err = sqlite_agent.client("--run", shortest(target), "--cancel")
    assert code == 0, err
    sqlite_agent.worker("w1")
    wait_for(lambda: f"{done}  done" in sqlite_agent.client("--runs")[1], what="a run done")
    code, out, err = sqlite_agent.client("--follow", shortest(done))
    assert code == 0, err
    assert out.splitlines()[-1] == "finished 1 p1"
    runs = sqlite_agent.client("--runs")[1]
    assert f"{target}  cancelled" in runs

"""A worker SIGKILLed while a bash tool runs: with ``durable.interrupted_tools: fail`` (the
default) the recovered run does not run the call again and its model gets an error
result saying the worker stopped while the call ran; with ``rerun`` the call runs again.
The bash command appends to a file when it starts, then waits for a file the test
creates, so the kill comes inside the call without a fixed sleep."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.durable.steps import INTERRUPTED
from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import openai_events

from .test_durable_runs import wait_for
from .test_durable_subagents import HELPER, MODEL, Tree, _results, _tool

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")


def lead(policy: str) -> str:
    return f"""\
version: 1
name: lead
description: Runs one command.
{MODEL}system_prompt: You are LEAD.
tools: [bash]
durable:
  database_url: ${{DURABLE_URL}}
  queue: {{name: dsub}}
  lease_s: 2
  interrupted_tools: {policy}
"""


@pytest.mark.parametrize(
    ("policy", "database"), [("fail", "sqlite"), ("fail", "postgres"), ("rerun", "sqlite")]
)
def test_a_worker_killed_inside_a_bash_call(
    tmp_path: Path, server: ProtocolServer, policy: str, database: str, request: Any
) -> None:
    url = "sqlite:///.harnessc/durable.sqlite"
    if database == "postgres":
        url = str(request.getfixturevalue("pg_database"))
    tree = Tree(tmp_path, server, url, lead(policy), HELPER)
    go = tree.work / "go"  # the sandbox has a private /tmp: the workspace is shared
    command = (
        f"echo started >> {tree.effects}; "
        f"while [ ! -e {go} ]; do sleep 0.05; done; echo finished >> {tree.effects}"
    )

    def script(req: RecordedRequest) -> ScriptedResponse:
        results = _results(req.json["messages"])
        if not results:
            return _tool("b1", "bash", {"command": command})
        return ScriptedResponse.sse(openai_events(["saw: " + results[0]]))

    server.set_handler(script)
    try:
        run_id = tree.killed_inside_a_call("the bash call to start")
        tree.worker()  # the same worker id: recovers the run at once
        with tree.runs() as runs:
            if policy == "rerun":
                wait_for(lambda: tree.effects_seen()["started"] == 2, what="the call again")
            else:
                wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run's end")
            go.touch()  # a rerun's command ends (the killed worker's died with it)
            wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run's end")
        followed = tree.run("--follow", run_id)
        assert followed.returncode == 0, followed.stderr
        last = [_results(r.json["messages"]) for r in server.requests][-1]
        if policy == "fail":
            assert tree.effects_seen()["started"] == 1, "the call was not run again"
            assert last == [INTERRUPTED], "the model saw why the call has no result"
            assert followed.stdout.startswith("saw: The worker running this durable run")
        else:
            assert tree.effects_seen()["started"] == 2, "the call ran again"
            assert last != [INTERRUPTED]
    finally:
        go.touch()
        tree.stop()


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_a_call_is_marked_started_once_and_never_by_a_worker_that_lost_its_lease(
    tmp_path: Path, database: str, request: Any
) -> None:
    import sqlalchemy as sa

    from harnessc.runtime.durable.engine import Heartbeat

    url = f"sqlite:///{tmp_path}/d.sqlite"
    if database == "postgres":
        url = str(request.getfixturevalue("pg_database"))
    lost: list[str] = []
    beat = Heartbeat(url, "w", "q", 30.0, on_lost=lost.append)
    try:
        beat.take()
        assert beat.start_call("run", "1:a") is True
        assert beat.start_call("run", "1:a") is False  # an earlier execution started it
        assert beat.start_call("run", "2:a") is True
        with beat.engine.begin() as conn:  # another worker claimed this one
            conn.execute(sa.update(beat.table).values(state="recovered by x"))
        beat.renewed = -1e9  # the lease is due: the mark checks it
        with pytest.raises(RuntimeError, match="lease was lost"):
            beat.start_call("run", "3:a")
        assert lost == ["recovered by x"]
        assert beat.marks.calls("run") == ["1:a", "2:a"]  # nothing recorded without the lease
    finally:
        beat.engine.dispose()
        beat.marks.close()


def _mark_in_a_process_that_dies(url: str, key: str) -> None:
    """A worker process that marks a call started and dies at once (no close)."""
    code = (
        "import os, sys\n"
        "from harnessc.runtime.durable.engine import Heartbeat\n"
        "beat = Heartbeat(sys.argv[1], 'dying', 'q', 30.0)\n"
        "beat.take()\n"
        "assert beat.start_call('run', sys.argv[2])\n"
        "os._exit(9)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, url, key], capture_output=True, text=True)
    assert done.returncode == 9, done.stderr


def test_sqlite_marks_are_a_write_ahead_log_beside_the_system_database(tmp_path: Path) -> None:
    import sqlite3

    from harnessc.runtime.durable.engine import Heartbeat, calls_path

    database = tmp_path / "d.sqlite"
    url = f"sqlite:///{database}"
    _mark_in_a_process_that_dies(url, "1:a")  # the mark outlives the worker
    beat = Heartbeat(url, "w", "q", 30.0)
    try:
        beat.take()
        assert beat.start_call("run", "1:a") is False  # the dead worker's mark holds
        assert beat.start_call("run", "2:a") is True
        assert beat.marks.calls("run") == ["1:a", "2:a"]
    finally:
        beat.engine.dispose()
        beat.marks.close()
    with sqlite3.connect(calls_path(str(database))) as lite:
        assert lite.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    with sqlite3.connect(database) as system:  # DBOS's database keeps its journal mode
        assert system.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_marks_an_older_worker_left_in_the_system_database_still_hold(tmp_path: Path) -> None:
    import sqlite3

    from harnessc.runtime.durable.engine import Heartbeat

    database = tmp_path / "d.sqlite"
    with sqlite3.connect(database) as system:  # as a worker before the calls file wrote it
        system.execute(
            "CREATE TABLE harnessc_started_calls (run_id TEXT NOT NULL, call TEXT NOT NULL,"
            " worker_id TEXT NOT NULL, PRIMARY KEY (run_id, call))"
        )
        system.execute("INSERT INTO harnessc_started_calls VALUES ('run', '1:a', 'old')")
    beat = Heartbeat(f"sqlite:///{database}", "w", "q", 30.0)
    try:
        beat.take()
        assert beat.start_call("run", "1:a") is False  # started by the older worker
        assert beat.start_call("run", "2:a") is True
    finally:
        beat.engine.dispose()
        beat.marks.close()

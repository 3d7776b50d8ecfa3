"""A durable run's workspace checkpoint is a step of the run, recorded before the tool
batch it guards: a worker SIGKILLed inside the bash call it guards leaves a run whose
recovery gets the recorded checkpoint back and takes no second one; the session holds
one checkpoint before the batch and one after it, and a rewind to the prompt restores
the files the bash call changed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.checkpoints import CheckpointStore, Workspace
from harnessc.runtime.checkpoints.history import points
from harnessc.runtime.checkpoints.rewind import rewind
from harnessc.runtime.core.checkpoint_settings import STORE_FOLDER
from harnessc.runtime.session.repo import JsonlSessionRepo
from harnessc.runtime.support.data_folder import DataFolder, resolve_folder
from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import openai_events

from .test_durable_runs import wait_for
from .test_durable_subagents import HELPER, MODEL, Tree, _results, _tool

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")

MARKS = ("effects.log", "go")  # the test's own files in the workspace

LEAD = f"""\
version: 1
name: lead
description: Runs one command.
{MODEL}system_prompt: You are LEAD.
tools: [bash]
durable:
  database_url: ${{DURABLE_URL}}
  queue: {{name: dsub}}
  lease_s: 2
"""


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_a_recovered_run_takes_no_second_checkpoint(
    tmp_path: Path, server: ProtocolServer, database: str, request: Any
) -> None:
    url = "sqlite:///.harnessc/durable.sqlite"
    if database == "postgres":
        url = str(request.getfixturevalue("pg_database"))
    tree = Tree(tmp_path, server, url, LEAD, HELPER)
    (tree.work / "notes.txt").write_text("before the run\n")
    go = tree.work / "go"  # the sandbox has a private /tmp: the workspace is shared
    command = (
        f"echo started >> {tree.effects}; echo changed > notes.txt; "
        f"while [ ! -e {go} ]; do sleep 0.05; done"
    )

    def script(req: RecordedRequest) -> ScriptedResponse:
        if not _results(req.json["messages"]):
            return _tool("b1", "bash", {"command": command})
        return ScriptedResponse.sse(openai_events(["done"]))

    server.set_handler(script)
    try:
        run_id = tree.killed_inside_a_call("the bash call to start")
        go.touch()
        tree.worker()  # recovers the run
        with tree.runs() as runs:
            wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run's end")
    finally:
        go.touch()
        tree.stop()

    store = CheckpointStore(resolve_folder(STORE_FOLDER, tree.work))
    [refs] = store.sessions()
    phases = [c.phase for c in refs.checkpoints]
    assert phases == ["before", "after"], "one checkpoint before the batch, recorded once"
    [session_file] = sorted(resolve_folder(DataFolder("sessions"), tree.work).glob("*/*.jsonl"))
    session = JsonlSessionRepo(session_file.parent.parent).open(session_file)
    try:
        assert [p.checkpoint.phase for p in points(session)] == ["before", "after"]
        before = points(session)[0].checkpoint
        assert before.id == refs.checkpoints[0].id  # the recorded one, not a new one
        assert (tree.work / "notes.txt").read_text() == "changed\n"
        prompt = next(e.id for e in session.entries() if e.role == "user")
        workspace = Workspace(store, tree.work)
        shown = asyncio.run(rewind(session, workspace, prompt, mode="files", dry_run=True))
        assert shown.plan is not None and [
            c.path for c in shown.plan.changes if c.path not in MARKS
        ] == ["notes.txt"]
        workspace.close()
    finally:
        session.close()
    # the durable agent's own command line rewinds the session and its files
    done = tree.run("--session", session.id, "--rewind", prompt, "--rewind-mode", "both")
    assert done.returncode == 0, done.stderr
    assert "-changed" in done.stderr and "+before the run" in done.stderr
    assert (tree.work / "notes.txt").read_text() == "before the run\n"

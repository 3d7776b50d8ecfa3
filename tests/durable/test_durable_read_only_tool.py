"""A worker SIGKILLed while a python tool runs (``interrupted_tools: fail``, the
default): a tool declared ``read_only: true`` in the spec is simply run again by the
recovered run, as ``read`` is; an undeclared one is not, and its model is told why.
The tool notes its start in a file, then waits for a file the test creates, so the
kill comes inside the call without a fixed sleep."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessc.runtime.durable.steps import INTERRUPTED
from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import openai_events

from .test_durable_runs import wait_for
from .test_durable_subagents import HELPER, MODEL, Tree, _results, _tool

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")

WAITTOOLS = '''\
"""The test's python tool: notes its start, then waits for the go file."""

import time
from pathlib import Path


def look(effects: str, go: str) -> str:
    """Note a start in effects, wait until go exists."""
    with open(effects, "a") as fh:
        fh.write("started\\n")
    while not Path(go).exists():
        time.sleep(0.05)
    return "looked"
'''


def lead(read_only: bool) -> str:
    entry = "{function: waittools:look, read_only: true}" if read_only else "waittools:look"
    return f"""\
version: 1
name: lead
description: Looks once.
{MODEL}system_prompt: You are LEAD.
tools:
  - python: {entry}
durable:
  database_url: ${{DURABLE_URL}}
  queue: {{name: dsub}}
  lease_s: 2
"""


@pytest.mark.parametrize("read_only", [True, False])
def test_a_worker_killed_inside_a_python_call(
    tmp_path: Path, server: ProtocolServer, read_only: bool
) -> None:
    (tmp_path / "waittools.py").write_text(WAITTOOLS)
    tree = Tree(tmp_path, server, "sqlite:///.harnessc/durable.sqlite", lead(read_only), HELPER)
    go = tree.work / "go"

    def script(req: RecordedRequest) -> ScriptedResponse:
        results = _results(req.json["messages"])
        if not results:
            return _tool("p1", "look", {"effects": str(tree.effects), "go": str(go)})
        return ScriptedResponse.sse(openai_events(["saw: " + results[0]]))

    server.set_handler(script)
    try:
        run_id = tree.killed_inside_a_call("the python call to start")
        tree.worker()  # the same worker id: recovers the run at once
        with tree.runs() as runs:
            if read_only:
                wait_for(lambda: tree.effects_seen()["started"] == 2, what="the call again")
            go.touch()
            wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run's end")
        last = [_results(r.json["messages"]) for r in server.requests][-1]
        if read_only:
            assert tree.effects_seen()["started"] == 2, "the read-only call ran again"
            assert last == ["looked"]
        else:
            assert tree.effects_seen()["started"] == 1, "the call was not run again"
            assert last == [INTERRUPTED], "the model saw why the call has no result"
    finally:
        go.touch()
        tree.stop()

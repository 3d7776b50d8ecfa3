"""Durable sub-agents: a generated lead agent with ``durable:`` and ``agents:`` hands work
to a sub-agent whose bash calls append to a file. A worker SIGKILLed in the middle of
the sub-agent's work, or after the hand-over ended, is recovered: every bash call ran
once, no model request answered before the kill is sent again, and the sessions (the
lead's and the sub-agent's) equal those of the same run never interrupted. An ``ask``
inside the sub-agent pauses the durable run and ``--run ID --approve CALL`` reaches it;
the sub-agent's turns count toward the run's budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.support.data_folder import DataFolder, resolve_folder
from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import openai_events, openai_tool_call_events

from .test_durable_runs import _drop, shape, wait_for

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")

ROOT = Path(__file__).resolve().parents[2]

MODEL = """\
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
"""

LEAD = f"""\
version: 1
name: lead
description: Hands work to a helper.
{MODEL}system_prompt: You are LEAD.
agents:
  helper: {{spec: helper.yaml}}
durable:
  database_url: ${{DURABLE_URL}}
  queue: {{name: dsub}}
  lease_s: 2
"""

HELPER = f"""\
version: 1
name: helper
description: Does work with bash.
{MODEL}system_prompt: You are HELPER.
tools: [bash]
"""


def _prompt(messages: list[dict[str, Any]]) -> str:
    return str(next(m for m in messages if m["role"] == "user")["content"])


def _results(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content")) for m in messages if m["role"] == "tool"]


def _tool(call_id: str, name: str, args: dict[str, Any]) -> ScriptedResponse:
    return ScriptedResponse.sse(openai_tool_call_events([(call_id, name, json.dumps(args))]))


class Script:
    """LEAD hands "work N" to the helper once, then ends with its result; HELPER runs
    ``echo bK >> EFFECTS`` N times, one call per reply, then says how many it ran. A
    request can be delayed (agent, tool results so far) to kill a worker during it."""

    def __init__(self, effects: Path) -> None:
        self.effects = effects
        self.slow: dict[tuple[str, int], float] = {}

    def key(self, request: RecordedRequest) -> tuple[str, int]:
        messages = request.json["messages"]
        system = " ".join(str(m.get("content")) for m in messages if m["role"] == "system")
        return ("LEAD" if "LEAD" in system else "HELPER", len(_results(messages)))

    def __call__(self, request: RecordedRequest) -> ScriptedResponse:
        messages = request.json["messages"]
        agent, done = self.key(request)
        if agent == "LEAD":
            if done == 0:
                args = {"subagent_type": "helper", "description": "work", "prompt": "work 3"}
                response = _tool("h1", "task", args)
            else:
                response = ScriptedResponse.sse(
                    openai_events(["LEAD DONE | " + _results(messages)[0]])
                )
        else:
            steps = int(_prompt(messages).split()[1])
            if done < steps:
                command = f"echo b{done + 1} >> {self.effects}"
                response = _tool(f"b{done + 1}", "bash", {"command": command})
            else:
                response = ScriptedResponse.sse(openai_events([f"HELPER ran {done}"]))
        delay = self.slow.get((agent, done))
        if delay:
            response.delay_s = delay
        return response


class Tree:
    """The lead and helper specs built into ``generated/``, run in ``work/``."""

    def __init__(self, root: Path, server: ProtocolServer, url: str, lead: str, helper: str):
        from harnessc.compiler import compile as compile_specs
        from harnessc.compiler.write import write_outputs
        from harnessc.spec import load_spec

        self.root = root
        self.server = server
        self.url = url
        (root / "lead.yaml").write_text(lead)
        (root / "helper.yaml").write_text(helper)
        loaded = load_spec(root / "lead.yaml")
        assert loaded.ok, [d.format() for d in loaded.diagnostics]
        write_outputs(compile_specs([loaded], root / "generated"), root / "generated")
        self.work = root / "work"
        self.work.mkdir()
        # in the workspace: the only folder a sandboxed bash call may write
        self.effects = self.work / "effects.log"
        self.script = Script(self.effects)
        server.reset()
        server.set_handler(self.script)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(
            TEST_BASE_URL=f"{server.url}/v1",
            TEST_API_KEY="sk-durable-subagents",
            DURABLE_URL=url,
            PYTHONPATH=str(ROOT),
            PYTHONDONTWRITEBYTECODE="1",
        )
        self.env = env
        self.workers: list[subprocess.Popen[str]] = []

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(self.root / "generated" / "lead.py"), *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.work,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def worker(self) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(self.root / "generated" / "lead.py"), "--worker"]
            + ["--worker-id", "w1", "--drain-s", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            env=self.env,
            cwd=self.work,
            stdin=subprocess.DEVNULL,
        )
        self.workers.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)

    def runs(self) -> Any:
        from harnessc.runtime.durable import DurableConfig, DurableRuns

        return DurableRuns(DurableConfig(database_url=self.url, queue="dsub"), str(self.work))

    def submit(self, prompt: str) -> str:
        done = self.run("--submit", prompt)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def effects_seen(self) -> Counter[str]:
        text = self.effects.read_text() if self.effects.exists() else ""
        return Counter(text.split())

    def killed_inside_a_call(self, what: str) -> str:
        """A run submitted on "go", its worker SIGKILLed once the tool call (``what``, as
        the wait names it) has started; the run's id."""
        run_id = self.submit("go")
        victim = self.worker()
        wait_for(lambda: self.effects_seen()["started"] == 1, what=what)
        victim.kill()
        victim.wait(timeout=30)
        return run_id

    def requests(self) -> Counter[tuple[str, int]]:
        return Counter(self.script.key(r) for r in self.server.requests)

    def sessions(self, folder: Path) -> tuple[Path, Path]:
        (lead,) = sorted(folder.glob("*/*.jsonl"))
        (helper,) = sorted(lead.with_suffix("").glob("*.jsonl"))
        return lead, helper


def tree_shape(path: Path) -> list[Any]:
    """``shape`` without the paths and ids of the sub-agent's session (they name the
    run's own folders) and the times tools and the sub-agent took."""
    out = shape(path)
    for entry in out:
        _drop(entry.get("data"), {"session", "session_id"})  # a pause record's hand-over
        details = (entry.get("message") or {}).get("details")
        if isinstance(details, dict):
            for key in ("session", "session_id", "wall_clock_s", "elapsed_s"):
                details.pop(key, None)
    return out


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest) -> str:
    if request.param == "sqlite":
        return "sqlite:///.harnessc/durable.sqlite"
    return str(request.getfixturevalue("pg_database"))


@pytest.fixture
def tree(tmp_path: Path, server: ProtocolServer, database_url: str) -> Iterator[Tree]:
    made = Tree(tmp_path, server, database_url, LEAD, HELPER)
    yield made
    made.stop()


@pytest.mark.parametrize("where", ["inside", "after"])
def test_a_worker_killed_during_a_sub_agent_repeats_nothing(tree: Tree, where: str) -> None:
    plain_dir = tree.root / "plain"
    plain = tree.run("--session-dir", str(plain_dir), "go")  # the same run, not durable
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.startswith("LEAD DONE | HELPER ran 3\n")
    reference = [tree_shape(p) for p in tree.sessions(plain_dir)]
    tree.effects.unlink()
    tree.server.reset()
    tree.server.set_handler(tree.script)

    # inside: while the helper's last model call is in flight (two bash calls done);
    # after: while the lead's second model call is (the hand-over has ended)
    slow = ("HELPER", 2) if where == "inside" else ("LEAD", 1)
    tree.script.slow[slow] = 5.0
    run_id = tree.submit("go")
    victim = tree.worker()
    wait_for(lambda: tree.requests()[slow] == 1, what="the slow request")
    victim.kill()
    victim.wait(timeout=30)
    tree.script.slow.clear()
    tree.worker()  # the same worker id: recovers the run at once
    with tree.runs() as runs:
        wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run to end")
    followed = tree.run("--follow", run_id)
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout == plain.stdout
    assert tree.effects_seen() == Counter({"b1": 1, "b2": 1, "b3": 1}), "each bash call once"
    for key, count in tree.requests().items():  # only the request in flight, again
        assert count == (2 if key == slow else 1), (key, count)
    durable = [
        tree_shape(p) for p in tree.sessions(resolve_folder(DataFolder("sessions"), tree.work))
    ]
    assert durable == reference


ASKING_HELPER = HELPER + "permissions:\n  default: ask\n"


def test_an_ask_inside_a_sub_agent_pauses_the_run_and_is_approved(
    tmp_path: Path, server: ProtocolServer, database_url: str
) -> None:
    tree = Tree(tmp_path, server, database_url, LEAD, ASKING_HELPER)
    try:
        run_id = tree.submit("go")
        tree.worker()
        with tree.runs() as runs:
            for call in ("b1", "b2", "b3"):
                wait_for(
                    lambda c=call: (
                        [x["id"] for x in runs.waiting(run_id).get("calls", [])] == [c]
                        and runs.state(run_id)["state"] == "paused"
                    ),
                    what=f"the ask of {call}",
                )
                state = runs.waiting(run_id)
                assert state["asks"] == [call]
                assert state["calls"][0]["path"] == "lead > helper"
                assert tree.effects_seen()[call] == 0
                if call == "b1":
                    code = tree.run("--follow", run_id)
                    assert code.returncode == 3
                    assert f"--run {run_id} --approve b1" in code.stderr
                approved = tree.run("--run", run_id, "--approve", call)
                assert approved.returncode == 0, approved.stderr
            wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run to end")
        assert tree.effects_seen() == Counter({"b1": 1, "b2": 1, "b3": 1})
        assert max(tree.requests().values()) == 1
    finally:
        tree.stop()


BUDGET_LEAD = LEAD + "budget:\n  turns: 3\n"


def test_a_sub_agents_turns_count_toward_the_runs_budget(
    tmp_path: Path, server: ProtocolServer
) -> None:
    """The lead's budget of 3 turns: one is the lead's, so the helper (4 turns of work)
    pauses the whole run after its second, as the same run not durable does; raising
    the limit finishes it."""
    tree = Tree(tmp_path, server, "sqlite:///.harnessc/durable.sqlite", BUDGET_LEAD, HELPER)
    try:
        plain = tree.run("--session-dir", str(tmp_path / "plain"), "go")
        assert plain.returncode == 3, plain.stdout + plain.stderr
        assert tree.effects_seen() == Counter({"b1": 1, "b2": 1})
        tree.effects.unlink()
        paused = tree.run("go")
        assert paused.returncode == 3, paused.stdout + paused.stderr
        assert "budget limit hit: turns (3 of 3 used)" in paused.stderr
        run_id = next(
            line.split()[1] for line in paused.stderr.splitlines() if line.startswith("run ")
        )
        assert tree.effects_seen() == Counter({"b1": 1, "b2": 1})
        answer = json.dumps({"budget": {"turns": 20}})
        assert tree.run("--run", run_id, "--resume-with", answer).returncode == 0
        tree.worker()
        with tree.runs() as runs:
            wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run to end")
        assert tree.effects_seen() == Counter({"b1": 1, "b2": 1, "b3": 1})
    finally:
        tree.stop()


EXTERNAL_HELPER = f"""\
version: 1
name: helper
description: Asks a human.
{MODEL}system_prompt: You are HELPER.
tools:
  - external:
      name: request_approval
      description: Ask a human to approve.
      parameters: {{type: object, properties: {{}}}}
"""


def test_an_external_tool_inside_a_sub_agent_is_answered_by_call_id(
    tmp_path: Path, server: ProtocolServer
) -> None:
    tree = Tree(tmp_path, server, "sqlite:///.harnessc/durable.sqlite", LEAD, EXTERNAL_HELPER)

    def script(request: RecordedRequest) -> ScriptedResponse:
        messages = request.json["messages"]
        results = _results(messages)
        if "LEAD" in str(messages[0].get("content")):
            if not results:
                args = {"subagent_type": "helper", "description": "ask", "prompt": "ask"}
                return _tool("h1", "task", args)
            return ScriptedResponse.sse(openai_events(["LEAD DONE | " + results[0]]))
        if not results:
            return _tool("x1", "request_approval", {})
        return ScriptedResponse.sse(openai_events(["HELPER got " + results[0]]))

    server.set_handler(script)
    try:
        paused = tree.run("go")
        assert paused.returncode == 3, paused.stderr
        assert "waiting for the results of external tool calls" in paused.stderr
        run_id = next(
            line.split()[1] for line in paused.stderr.splitlines() if line.startswith("run ")
        )
        with tree.runs() as runs:
            state = runs.state(run_id)
            assert state["state"] == "awaiting_tool", state
            assert [(c["id"], c["path"]) for c in runs.waiting(run_id)["calls"]] == [
                ("x1", "lead > helper")
            ]
        answered = tree.run("--run", run_id, "--resume-with", '{"x1": "yes"}')
        assert answered.returncode == 0, answered.stderr
        tree.worker()  # takes the run once the one-shot run's lease has passed
        with tree.runs() as runs:
            wait_for(lambda: runs.state(run_id)["state"] == "done", what="the run to end")
        followed = tree.run("--follow", run_id)
        assert followed.returncode == 0, followed.stderr
        assert followed.stdout.startswith("LEAD DONE | HELPER got yes")
    finally:
        tree.stop()

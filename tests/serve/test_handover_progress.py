"""A served run's events carry its hand-overs' progress (issue 46): the parent sends a
``handover_progress`` event as its sub-agent starts, begins each turn, gets each reply
and ends, read here over the native event stream and as AG-UI ``CUSTOM`` events, from
a plain server and from a durable one (its worker runs the tree, the steps record the
events)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter

from harnessc.testing import ProtocolServer

from .servekit import SPEC, AgentKit, Served, compile_agent, sse_events, wait_status
from .typedkit import TEXT_USAGE, TOOL_USAGE, model_reply

core = pytest.importorskip("ag_ui.core")

OPEN = SPEC.replace('  ask: ["Bash(*)"]\n', "  ask: []\n")
LEAD_SPEC = OPEN.replace("name: helper", "name: lead") + "agents:\n  judge:\n    spec: judge.yaml\n"
DURABLE = "durable:\n  database_url: sqlite:///.harnessc/durable.sqlite\n  lease_s: 2\n"
JUDGE_SPEC = OPEN.replace("name: helper", "name: judge")
# the lead hands over a bash call: the judge's turn 1 calls bash, its turn 2 answers
PROMPT = 'delegate call bash {"command": "echo judged"}'
# (turn, input tokens with the cached ones, output tokens, status) as the judge starts,
# begins each turn, gets each reply and ends
TOOL_IN, TOOL_OUT = TOOL_USAGE[0], TOOL_USAGE[1]
TEXT_IN, TEXT_OUT = TEXT_USAGE[0], TEXT_USAGE[1]
PROGRESS = [
    (0, 0, 0, "working"),
    (1, 0, 0, "working"),
    (1, TOOL_IN, TOOL_OUT, "working"),
    (2, TOOL_IN, TOOL_OUT, "working"),
    (2, TOOL_IN + TEXT_IN, TOOL_OUT + TEXT_OUT, "working"),
    (2, TOOL_IN + TEXT_IN, TOOL_OUT + TEXT_OUT, "ended"),
]


@pytest.fixture(scope="module", params=["plain", "durable"])
def lead(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    from harnessc.compiler import compile as compile_specs
    from harnessc.compiler.write import write_outputs
    from harnessc.spec import load_spec

    spec = LEAD_SPEC + (DURABLE if request.param == "durable" else "")
    with ProtocolServer() as model:
        model.set_handler(model_reply)
        root = tmp_path_factory.mktemp(request.param)
        (root / "spec").mkdir()
        (root / "spec" / "judge.yaml").write_text(JUDGE_SPEC)
        kit: AgentKit = compile_agent(root, model.url, spec)  # folders, environment
        spec_dir = root / "spec"
        (spec_dir / "lead.yaml").write_text(spec)
        loaded = load_spec(spec_dir / "lead.yaml")
        assert loaded.ok, [d.format() for d in loaded.diagnostics]
        write_outputs(compile_specs([loaded], kit.module.parent), kit.module.parent)
        kit.module = kit.module.parent / "lead.py"
        worker = None
        if request.param == "durable":
            pytest.importorskip("dbos", reason="durable runs need dbos")
            worker = subprocess.Popen(
                kit.command("--worker", "--worker-id", "w1", "--drain-s", "2"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=kit.env,
                cwd=kit.workdir,
            )
        served = kit.serve()
        try:
            yield served
        finally:
            served.stop()
            if worker is not None:
                worker.kill()
                worker.wait(30)


def _progress(events: list[dict[str, Any]]) -> list[tuple[int, int, int, str]]:
    for event in events:
        assert event["agent_path"] == ["lead", "judge"], event
        assert event["tool_call_id"].startswith("task_"), event
    return [(e["turn"], e["input_tokens"], e["output_tokens"], e["status"]) for e in events]


def test_the_native_event_stream_carries_the_hand_overs_progress(lead: Served) -> None:
    with lead.client() as client:
        run_id = client.post("/v1/runs", json={"prompt": PROMPT}).json()["run_id"]
        assert wait_status(client, run_id, "done", timeout=60)["status"] == "done"
        with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            events = [e for _, e in sse_events(stream.iter_lines())]
    assert _progress([e for e in events if e["type"] == "handover_progress"]) == PROGRESS
    # each one follows the sub-agent's event that moved it
    kinds = [e["type"] if e["type"] != "subagent" else e["event"]["type"] for e in events]
    first = kinds.index("handover_progress")
    assert kinds[first - 1] == "agent_start"


def test_the_ag_ui_stream_carries_the_hand_overs_progress_as_custom_events(
    lead: Served,
) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(core.Event)
    body = {
        "threadId": "thread-progress",
        "runId": "run-progress",
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": PROMPT}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    with httpx.Client(base_url=lead.url, headers=lead.headers, timeout=60) as client:
        with client.stream("POST", "/agui", json=body) as stream:
            assert stream.status_code == 200, stream.read()
            events = [
                adapter.validate_python(json.loads(line[5:]))
                for line in stream.iter_lines()
                if line.startswith("data:")
            ]
    custom = [e for e in events if e.type.value == "CUSTOM"]
    assert {e.name for e in custom} == {"handover_progress"}
    assert _progress([e.value for e in custom]) == PROGRESS
    assert events[-1].type.value == "RUN_FINISHED"

"""One scenario through every door, plain and durable (issue 40).

A typed agent (``output:``, a final_result tool) with a bash tool behind an ``ask`` and
a budget of one turn. The run asks for its bash call (an approval pause), runs it once,
hits its budget (a budget pause) and answers with its typed value. Each door answers
both pauses in its own protocol and must give the same typed value, the same usage, the
effect once; a second run is cancelled at its approval through every door that has a
cancel, and its effect never happens. The doors: the native API (httpx), OpenAI (the
official client; it answers pauses through the run API its reply names), A2A (the
a2a-sdk client), AG-UI (events parsed by ag-ui-protocol), the command line, and a
hand-over (a parent agent hands the run to the typed agent as its sub-agent)."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from harnessc.testing import ProtocolServer

from .servekit import SPEC, AgentKit, Served, compile_agent, compile_with_subagent
from .typedkit import OUTPUT, VALUE, model_reply

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")
pytest.importorskip("a2a.client")
pytest.importorskip("ag_ui.core")
openai = pytest.importorskip("openai")

DOORS_SPEC = SPEC + "budget: {turns: 1}\n" + OUTPUT
DURABLE = "durable:\n  database_url: sqlite:///.harnessc/durable.sqlite\n  lease_s: 2\n"
JUDGE_SPEC = SPEC.replace("name: helper", "name: judge") + OUTPUT
PARENT_SPEC = (
    SPEC.replace("name: helper", "name: lead").replace('  ask: ["Bash(*)"]\n', "  ask: []\n")
    + "agents:\n  judge:\n    spec: judge.yaml\n"
)
# the whole scenario: a tool call (20 prompt tokens, 4 of them cached; 10 out), then
# the typed value (10 in, 5 out)
PROMPT_TOKENS, OUTPUT_TOKENS = 30, 15


@dataclass
class Outcome:
    value: Any = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    pauses: list[str] = field(default_factory=list)
    status: str = ""


@dataclass
class Doors:
    plain: Served
    durable: Served
    kits: dict[str, AgentKit]


@pytest.fixture(scope="module")
def model() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        running.set_handler(model_reply)
        yield running


@pytest.fixture(scope="module")
def doors(tmp_path_factory: pytest.TempPathFactory, model: ProtocolServer) -> Iterator[Doors]:
    kits = {
        "plain": compile_agent(tmp_path_factory.mktemp("plain"), model.url, DOORS_SPEC),
        "durable": compile_agent(
            tmp_path_factory.mktemp("durable"), model.url, DOORS_SPEC + DURABLE
        ),
    }
    kits["handover"] = compile_with_subagent(
        tmp_path_factory.mktemp("lead"), model.url, PARENT_SPEC, "judge.yaml", JUDGE_SPEC
    )
    worker = None
    try:
        durable = kits["durable"]
        worker = subprocess.Popen(
            durable.command("--worker", "--worker-id", "w1", "--drain-s", "2"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=durable.env,
            cwd=durable.workdir,
        )
        yield Doors(kits["plain"].serve(), durable.serve(), kits)
    finally:
        if worker is not None:
            worker.kill()
            worker.wait(30)
        for kit in kits.values():
            kit.stop()


def _prompt(name: str) -> str:
    return f'call bash {{"command": "printf x >> {name}.log"}}'


def _effects(kit: AgentKit, name: str) -> int:
    path = kit.workdir / f"{name}.log"
    return len(path.read_text()) if path.exists() else 0


def _wait(client: httpx.Client, run_id: str, want: str, timeout: float = 120) -> dict[str, Any]:
    """The run once it is ``want``: a status, or a pause kind."""
    deadline = time.monotonic() + timeout
    while True:
        status = client.get(f"/v1/runs/{run_id}").json()
        pause = status.get("pause") or {}
        if status["status"] == want or (status["status"] == "paused" and pause.get("kind") == want):
            return status
        assert status["status"] not in ("error", "aborted") or want in ("error", "aborted"), status
        assert time.monotonic() < deadline, f"run {run_id} is {status}, not {want}"
        time.sleep(0.1)


def _native_usage(status: dict[str, Any]) -> tuple[int, int]:
    used = status["usage"]
    prompt = used["input_tokens"] + used["cache_read_tokens"] + used["cache_write_tokens"]
    return prompt, used["output_tokens"]


# -- the doors ---------------------------------------------------------------------------


def _answer_natively(server: Served, run_id: str, out: Outcome) -> None:
    """Both pauses answered through the native API (the OpenAI door's way too)."""
    with server.client(timeout=120) as client:
        held = _wait(client, run_id, "approval")
        out.pauses.append(held["pause"]["kind"])
        [call] = [c for c in held["pause"]["calls"] if c.get("held")]
        answer = client.post(f"/v1/runs/{run_id}/resume", json={"approvals": {call["id"]: True}})
        assert answer.status_code == 200, answer.text
        budget = _wait(client, run_id, "budget")
        out.pauses.append(budget["pause"]["kind"])
        raised = client.post(f"/v1/runs/{run_id}/resume", json={"budget": {"turns": 3}})
        assert raised.status_code == 200, raised.text
        done = _wait(client, run_id, "done")
    out.value, out.status = done["output"], done["status"]
    out.prompt_tokens, out.output_tokens = _native_usage(done)


def native(server: Served, name: str) -> Outcome:
    out = Outcome()
    with server.client(timeout=120) as client:
        started = client.post("/v1/runs", json={"prompt": _prompt(name)})
        assert started.status_code == 201, started.text
    _answer_natively(server, started.json()["run_id"], out)
    return out


def openai_door(server: Served, name: str) -> Outcome:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=server.token, max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="helper", messages=[{"role": "user", "content": _prompt(name)}], timeout=120
    )
    run_id = raw.headers["x-run-id"]
    content = raw.parse().choices[0].message.content or ""
    assert content.startswith("[paused: permission needed"), content
    assert f"/v1/runs/{run_id}/resume" in content  # where the pause is answered
    out = Outcome()
    _answer_natively(server, run_id, out)
    return out


async def _a2a(server: Served, text: str = "", data: Any = None, **ids: str) -> Any:
    from a2a.client import ClientConfig, create_client
    from a2a.types import a2a_pb2 as a2a
    from google.protobuf import json_format, struct_pb2

    part = (
        a2a.Part(text=text)
        if data is None
        else a2a.Part(data=json_format.ParseDict(data, struct_pb2.Value()))
    )
    message = a2a.Message(
        message_id=str(uuid.uuid4()), role=a2a.Role.ROLE_USER, parts=[part], **ids
    )
    async with httpx.AsyncClient(headers=server.headers, timeout=120) as http:
        client = await create_client(
            server.url, client_config=ClientConfig(streaming=False, httpx_client=http)
        )
        try:
            items = [i async for i in client.send_message(a2a.SendMessageRequest(message=message))]
        finally:
            await client.close()
    return next(i.task for i in reversed(items) if i.HasField("task"))


def a2a_door(server: Served, name: str) -> Outcome:
    from a2a.helpers import get_data_parts
    from a2a.types import a2a_pb2 as a2a
    from google.protobuf.json_format import MessageToDict

    out = Outcome()
    task = asyncio.run(_a2a(server, _prompt(name)))
    ids = {"task_id": task.id, "context_id": task.context_id}
    assert task.status.state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED
    text = "".join(p.text for p in task.status.message.parts)
    assert "permission needed" in text, text
    out.pauses.append("approval")
    task = asyncio.run(_a2a(server, "yes", **ids))
    assert task.status.state == a2a.TaskState.TASK_STATE_INPUT_REQUIRED
    assert "budget_exceeded:turns" in "".join(p.text for p in task.status.message.parts)
    out.pauses.append("budget")
    task = asyncio.run(_a2a(server, data={"budget": {"turns": 3}}, **ids))
    assert task.status.state == a2a.TaskState.TASK_STATE_COMPLETED
    [data] = get_data_parts(task.artifacts[-1].parts)
    out.value = {k: int(v) if isinstance(v, float) else v for k, v in data.items()}
    used = MessageToDict(task.status.message.metadata)["harnessc"]["usage"]
    out.prompt_tokens = int(used["input_tokens"] + used["cache_read_tokens"])
    out.output_tokens = int(used["output_tokens"])
    out.status = "done"
    return out


def agui_door(server: Served, name: str) -> Outcome:
    from .test_agui import _input, _run

    out = Outcome()
    thread = f"{name}-{uuid.uuid4().hex[:6]}"
    prompt = {"id": "u1", "role": "user", "content": _prompt(name)}
    finished = _run(server, _input(thread, "r1", [prompt]))[-1]
    [held] = finished.outcome.interrupts
    assert held.reason == "permission"
    out.pauses.append("approval")
    resume = [{"interruptId": held.id, "status": "resolved"}]
    finished = _run(server, _input(thread, "r2", [prompt], resume=resume))[-1]
    [budget] = finished.outcome.interrupts
    assert budget.reason == "budget"
    out.pauses.append("budget")
    resume = [{"interruptId": budget.id, "status": "resolved", "payload": {"budget": {"turns": 3}}}]
    finished = _run(server, _input(thread, "r3", [prompt], resume=resume))[-1]
    assert finished.type.value == "RUN_FINISHED", finished
    out.value, out.status = finished.result, "done"
    [used] = finished.usage
    out.prompt_tokens, out.output_tokens = used.input_tokens, used.output_tokens
    return out


_USAGE = re.compile(r"([\d,]+) tokens in(?: \(([\d,]+) cached\))? / ([\d,]+) out")


def _usage_lines(stderr: str) -> tuple[int, int]:
    prompt = output = 0
    for found in _USAGE.finditer(stderr):
        prompt += int(found[1].replace(",", "")) + int((found[2] or "0").replace(",", ""))
        output += int(found[3].replace(",", ""))
    return prompt, output


def _hint(stderr: str) -> list[str]:
    """The flags of the last ``continue with:`` line (after the program)."""
    [line] = [x for x in stderr.splitlines() if x.startswith("continue with:")][-1:]
    words = shlex.split(line.removeprefix("continue with:").split("  (")[0])
    return words[next(i for i, w in enumerate(words) if w.endswith(".py")) + 1 :]


def _cli(kit: AgentKit, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        kit.command(*args),
        capture_output=True,
        text=True,
        env=kit.env,
        cwd=kit.workdir,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def cli_door(kit: AgentKit, name: str) -> Outcome:
    out = Outcome()
    first = _cli(kit, _prompt(name))
    assert first.returncode == 3, first.stderr
    assert "--approve" in first.stderr
    out.pauses.append("approval")
    second = _cli(kit, *_hint(first.stderr))
    assert second.returncode == 3, second.stderr
    assert "budget limit hit: turns" in second.stderr
    out.pauses.append("budget")
    third = _cli(kit, *_hint(second.stderr))
    assert third.returncode == 0, third.stderr
    out.value, out.status = json.loads(third.stdout.splitlines()[-1]), "done"
    out.prompt_tokens, out.output_tokens = _usage_lines(first.stderr + second.stderr + third.stderr)
    return out


def _follow(
    kit: AgentKit, run_id: str, code: int, answered: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``--follow`` until it ends with ``code`` (a worker takes the answer meanwhile); with
    ``answered`` (the flags of an answer given), at a pause other than the answered one:
    until a worker took the answer, the run still shows the pause it was given for."""
    deadline = time.monotonic() + 120
    while True:
        done = _cli(kit, "--follow", run_id)
        if done.returncode == code and (answered is None or _hint(done.stderr) != answered):
            return done
        assert time.monotonic() < deadline, done.stderr
        time.sleep(0.3)


def durable_cli_door(kit: AgentKit, name: str) -> Outcome:
    out = Outcome()
    first = _cli(kit, _prompt(name))  # a one-shot durable run: it ends at the pause
    assert first.returncode == 3, first.stderr
    [run_id] = [x.split()[1] for x in first.stderr.splitlines() if x.startswith("run ")]
    out.pauses.append("approval")
    approve = _hint(first.stderr)
    assert _cli(kit, *approve).returncode == 0  # --run RUN --approve CALL
    second = _follow(kit, run_id, 3, answered=approve)
    assert "budget limit hit: turns" in second.stderr, second.stderr
    out.pauses.append("budget")
    assert _cli(kit, *_hint(second.stderr)).returncode == 0  # --resume-with budget
    third = _follow(kit, run_id, 0)
    out.value, out.status = json.loads(third.stdout.splitlines()[-1]), "done"
    out.prompt_tokens, out.output_tokens = _usage_lines(third.stderr)
    return out


def handover_door(kit: AgentKit, name: str) -> Outcome:
    out = Outcome()
    first = _cli(kit, f"delegate {_prompt(name)}")
    assert first.returncode == 3, first.stderr
    assert "--approve" in first.stderr and "(in lead > judge)" in first.stderr, first.stderr
    out.pauses.append("approval")
    second = _cli(kit, "--json", *_hint(first.stderr))
    assert second.returncode == 0, second.stderr
    events = [json.loads(line) for line in second.stdout.splitlines()]
    [ended] = [e for e in events if e["type"] == "tool_execution_end" and e["tool_name"] == "task"]
    details = ended["result"]["details"]
    out.value, out.status = details["output"], details["status"]
    out.prompt_tokens = details["tokens"]  # the hand-over reports the sub-agent's total
    return out


# -- the table ---------------------------------------------------------------------------

DOORS = [
    ("native", "plain"),
    ("native", "durable"),
    ("openai", "plain"),
    ("openai", "durable"),
    ("a2a", "plain"),
    ("a2a", "durable"),
    ("agui", "plain"),
    ("agui", "durable"),
    ("cli", "plain"),
    ("cli", "durable"),
    ("handover", "plain"),
]


@pytest.mark.parametrize(("door", "kind"), DOORS, ids=[f"{d}-{k}" for d, k in DOORS])
def test_every_door_gives_the_same_run(doors: Doors, door: str, kind: str) -> None:
    name = f"{door}-{kind}"
    server = doors.plain if kind == "plain" else doors.durable
    kit = doors.kits[kind]
    if door == "native":
        out = native(server, name)
    elif door == "openai":
        out = openai_door(server, name)
    elif door == "a2a":
        out = a2a_door(server, name)
    elif door == "agui":
        out = agui_door(server, name)
    elif door == "cli":
        out = cli_door(kit, name) if kind == "plain" else durable_cli_door(kit, name)
    else:
        kit = doors.kits["handover"]
        out = handover_door(kit, name)
        assert out.value == VALUE and out.status == "done"
        assert out.pauses == ["approval"]  # the sub-agent's ask, answered in the parent
        assert out.prompt_tokens == PROMPT_TOKENS + OUTPUT_TOKENS
        assert _effects(kit, name) == 1
        return
    assert out.value == VALUE
    assert out.status == "done"
    assert out.pauses == ["approval", "budget"]
    assert (out.prompt_tokens, out.output_tokens) == (PROMPT_TOKENS, OUTPUT_TOKENS)
    assert _effects(kit, name) == 1  # the approved call ran once


CANCELS = [
    ("native", "plain"),
    ("native", "durable"),
    ("a2a", "plain"),
    ("a2a", "durable"),
    ("cli", "durable"),
]


@pytest.mark.parametrize(("door", "kind"), CANCELS, ids=[f"{d}-{k}" for d, k in CANCELS])
def test_every_door_cancels_a_paused_run_the_same_way(doors: Doors, door: str, kind: str) -> None:
    name = f"cancel-{door}-{kind}"
    server = doors.plain if kind == "plain" else doors.durable
    kit = doors.kits[kind]
    with server.client(timeout=120) as client:
        if door == "native":
            run_id = client.post("/v1/runs", json={"prompt": _prompt(name)}).json()["run_id"]
            _wait(client, run_id, "approval")
            aborted = client.post(f"/v1/runs/{run_id}/abort")
            assert aborted.status_code == 200, aborted.text
        elif door == "a2a":
            from .test_one_run import _cancel

            task = asyncio.run(_a2a(server, _prompt(name)))
            canceled = asyncio.run(_cancel(server, task.id))
            from a2a.types import a2a_pb2 as a2a

            assert canceled.status.state == a2a.TaskState.TASK_STATE_CANCELED
            run_id = _a2a_run(server, task.id)
        else:
            first = _cli(kit, _prompt(name))
            assert first.returncode == 3, first.stderr
            [run_id] = [x.split()[1] for x in first.stderr.splitlines() if x.startswith("run ")]
            assert _cli(kit, "--run", run_id, "--cancel").returncode == 0
        status = _wait(client, run_id, "aborted")
        assert status["pause"] is None
        # the same session goes on: its held call got an error result, no effect
        again = client.post(
            "/v1/runs", json={"prompt": "verdict now", "session_id": status["session_id"]}
        )
        assert again.status_code == 201, again.text
        assert _wait(client, again.json()["run_id"], "done")["output"] == VALUE
    assert _effects(kit, name) == 0


def _a2a_run(server: Served, task_id: str) -> str:
    """The run of an A2A task (its id is in the status message's metadata)."""
    from google.protobuf.json_format import MessageToDict

    async def get() -> Any:
        from a2a.client import ClientConfig, create_client
        from a2a.types import a2a_pb2 as a2a

        async with httpx.AsyncClient(headers=server.headers, timeout=60) as http:
            client = await create_client(server.url, client_config=ClientConfig(httpx_client=http))
            try:
                return await client.get_task(a2a.GetTaskRequest(id=task_id))
            finally:
                await client.close()

    task = asyncio.run(get())
    return str(MessageToDict(task.status.message.metadata)["harnessc"]["run_id"])


# -- plain and durable agree (issue 40 item 7) ----------------------------------------

_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


@pytest.mark.parametrize("kind", ["plain", "durable"])
def test_a_resume_with_tool_results_keeps_its_budget(doors: Doors, kind: str) -> None:
    """The agent's budget is one turn: the answer to its external call raises it, and the
    run goes on to its value instead of pausing on the budget."""
    server = doors.plain if kind == "plain" else doors.durable
    with server.client(timeout=120) as client:
        prompt = 'call ask_human {"question": "which?"}'
        run_id = client.post("/v1/runs", json={"prompt": prompt}).json()["run_id"]
        [call] = _wait(client, run_id, "awaiting_tool")["pending_tool_calls"]
        answer = {"results": {call["id"]: "this one"}, "budget": {"turns": 3}}
        resumed = client.post(f"/v1/runs/{run_id}/resume", json=answer)
        assert resumed.status_code == 200, resumed.text
        done = _wait(client, run_id, "done")
    assert done["output"] == VALUE


@pytest.mark.parametrize("kind", ["plain", "durable"])
def test_an_awaiting_run_is_aborted_alike(doors: Doors, kind: str) -> None:
    """Abort of a run waiting for tool results: aborted, with the reason, in both."""
    server = doors.plain if kind == "plain" else doors.durable
    with server.client(timeout=120) as client:
        prompt = 'call ask_human {"question": "abort?"}'
        run_id = client.post("/v1/runs", json={"prompt": prompt}).json()["run_id"]
        _wait(client, run_id, "awaiting_tool")
        aborted = client.post(f"/v1/runs/{run_id}/abort")
        assert aborted.status_code == 200, aborted.text
        status = _wait(client, run_id, "aborted")
        assert status["reason"] == "aborted over HTTP"
        assert client.post(f"/v1/runs/{run_id}/abort").status_code == 409  # it ended


@pytest.mark.parametrize("kind", ["plain", "durable"])
def test_the_prompts_images_reach_the_model(doors: Doors, model: ProtocolServer, kind: str) -> None:
    server = doors.plain if kind == "plain" else doors.durable
    prompt = f"verdict on this picture ({kind})"
    with server.client(timeout=120) as client:
        body = {"prompt": prompt, "images": [{"data": _PNG, "mime_type": "image/png"}]}
        run_id = client.post("/v1/runs", json=body).json()["run_id"]
        assert _wait(client, run_id, "done")["output"] == VALUE
    from .typedkit import saw

    last = saw(model.requests, prompt)[-1]
    urls = [p["image_url"]["url"] for p in last["content"] if p.get("type") == "image_url"]
    assert urls == [f"data:image/png;base64,{_PNG}"]


@pytest.mark.parametrize("kind", ["plain", "durable"])
def test_a_one_shot_run_prints_the_typed_value(doors: Doors, kind: str) -> None:
    """Issue 40 item 2: the durable one-shot prints the value as the plain one does."""
    done = _cli(doors.kits[kind], f"verdict one-shot {kind}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == VALUE  # the value alone on stdout
    assert "[usage]" in done.stderr

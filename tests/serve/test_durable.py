"""A durable agent served: ``POST /v1/runs`` submits to the DBOS queue, real worker
processes run the runs, and the server follows them in the DBOS database (SQLite, and
PostgreSQL when HARNESSC_TEST_PG_DSN names one)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessc.runtime.permissions.shown_args import fingerprint
from harnessc.testing import ProtocolServer

from .servekit import (
    SPEC,
    TOKEN,
    AgentKit,
    Served,
    compile_agent,
    free_port,
    sse_events,
    wait_status,
)

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")

DURABLE_SPEC = SPEC.replace('permissions:\n  ask: ["Bash(*)"]\n', "") + (
    """permissions:
  ask: ["Bash(echo *)"]
durable:
  database_url: ${DURABLE_URL}
  queue: {name: served, concurrency: 4}
  lease_s: 2
"""
)


@contextlib.contextmanager
def _database(kind: str) -> Iterator[str]:
    if kind == "sqlite":
        yield "sqlite:///.harnessc/durable.sqlite"  # relative: in the agent's working folder
        return
    dsn = os.environ.get("HARNESSC_TEST_PG_DSN", "")
    if not dsn:
        pytest.skip("HARNESSC_TEST_PG_DSN is not set")
    psycopg = pytest.importorskip("psycopg")
    from urllib.parse import urlsplit, urlunsplit

    name = "t_" + secrets.token_hex(6)
    try:
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL at HARNESSC_TEST_PG_DSN does not answer: {exc}")
    try:
        yield urlunsplit(urlsplit(dsn)._replace(path="/" + name))
    finally:
        from tests.pgtest import drop_database

        drop_database(dsn, name)


class Workers:
    def __init__(self, kit: AgentKit) -> None:
        self.kit = kit
        self.running: list[subprocess.Popen[str]] = []

    def ensure(self, worker_id: str) -> None:
        if not any(p.poll() is None for p in self.running):
            self.start(worker_id)

    def start(self, worker_id: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            self.kit.command("--worker", "--worker-id", worker_id, "--drain-s", "2"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=self.kit.env,
            cwd=self.kit.workdir,
        )
        self.running.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.running:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)


@dataclass
class Durable:
    kit: AgentKit
    workers: Workers
    server: Served


@contextlib.contextmanager
def served_durably(kit: AgentKit) -> Iterator[Durable]:
    """``kit`` served, its workers started by the tests; the workers and the server are
    stopped after."""
    workers = Workers(kit)
    try:
        yield Durable(kit, workers, kit.serve())
    finally:
        workers.stop()
        kit.stop()


@contextlib.contextmanager
def _durable(tmp: Path, model_url: str, kind: str) -> Iterator[Durable]:
    with _database(kind) as url:
        kit = compile_agent(tmp, model_url, DURABLE_SPEC)
        kit.env["DURABLE_URL"] = url
        with served_durably(kit) as made:
            yield made


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def durable(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    model_server: ProtocolServer,
) -> Iterator[Durable]:
    """A served durable agent (one server, its workers started by the tests), per database."""
    with _durable(tmp_path_factory.mktemp("durable"), model_server.url, request.param) as made:
        yield made


def _events(client: httpx.Client, run_id: str, **headers: str) -> list[tuple[int, dict[str, Any]]]:
    with client.stream("GET", f"/v1/runs/{run_id}/events", headers=headers) as stream:
        assert stream.status_code == 200, stream.read()
        return list(sse_events(stream.iter_lines()))


def test_runs_over_http_are_submitted_run_by_a_worker_and_answered(durable: Durable) -> None:
    server, workers = durable.server, durable.workers
    assert "durable runs" in server.output()
    with server.client(timeout=90) as client:
        started = client.post("/v1/runs", json={"prompt": "hello durable"})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        assert started.json()["session_id"]  # made in the store at once
        assert client.get(f"/v1/runs/{run_id}").json()["status"] == "queued"  # no worker yet
        asking = client.post("/v1/runs", json={"prompt": 'call bash {"command": "echo ok-1"}'})
        ask_id = asking.json()["run_id"]
        workers.ensure("w1")
        events = _events(client, run_id)  # follows the run from queued to its end
        assert [i for i, _ in events] == list(range(1, len(events) + 1))
        kinds = [e["type"] for _, e in events]
        assert kinds.count("agent_start") == 1 and kinds[-1] == "agent_end", kinds
        status = client.get(f"/v1/runs/{run_id}").json()
        assert (status["status"], status["text"]) == ("done", "echo: hello durable")
        assert status["session_id"]
        # the result carries the tree's usage, as its agent_end reports it
        tree = events[-1][1]["usage"]
        assert status["usage_by_agent"] == tree["agents"] and tree["total"]["turns"] == 1
        assert {k: status["usage"][k] for k in tree["total"]} == tree["total"]
        # a permission ask pauses the run in its worker; the approval goes over HTTP
        paused = wait_status(client, ask_id, "paused", timeout=90)
        [call] = paused["pending_tool_calls"]
        assert call["name"] == "bash" and paused["reason"].startswith("permission")
        wrong = client.post(f"/v1/runs/{ask_id}/resume", json={"approvals": {"nope": True}})
        assert wrong.status_code == 409, wrong.text
        assert (
            client.post(f"/v1/runs/{ask_id}/resume", json={"results": {"x": "y"}}).status_code
            == 409
        )
        # an approval of other arguments than the held call's is refused, plain or durable
        other = fingerprint("bash", {"command": "touch pwned"})
        stale = {call["id"]: {"decision": "allow", "fingerprint": other}}
        refused = client.post(f"/v1/runs/{ask_id}/resume", json={"approvals": stale})
        assert refused.status_code == 409 and "not the one that was shown" in refused.text
        shown = {call["id"]: {"decision": "always", "fingerprint": call["fingerprint"]}}
        resumed = client.post(f"/v1/runs/{ask_id}/resume", json={"approvals": shown})
        assert resumed.status_code == 200, resumed.text
        done = wait_status(client, ask_id, "done", timeout=90)
        assert done["text"].startswith("done: ") and "ok-1" in done["text"]
        asked = _events(client, ask_id)
        kinds = [e["type"] for _, e in asked]
        assert kinds.count("agent_start") == 1 and kinds[-1] == "agent_end"
        notices = [e["message"] for _, e in asked if e["type"] == "notice"]
        assert "always allowed for this session: Bash(echo ok-1)" in notices
        # unknown runs and sessions are 404
        assert client.get("/v1/runs/no-such-run").status_code == 404
        unknown = client.post("/v1/runs", json={"prompt": "x", "session_id": "0badc0de"})
        assert unknown.status_code == 404, unknown.text
        # abort a waiting run: its worker ends it, as a plain server does
        later = client.post("/v1/runs", json={"prompt": 'call ask_human {"question": "q"}'})
        waiting = wait_status(client, later.json()["run_id"], "awaiting_tool", timeout=90)
        aborted = client.post(f"/v1/runs/{waiting['run_id']}/abort")
        assert aborted.status_code == 200, aborted.text
        ended = wait_status(client, waiting["run_id"], "aborted", timeout=90)
        assert ended["reason"] == "aborted over HTTP"


def _model_saw(model_server: ProtocolServer, last_prompt: str) -> list[str]:
    """The texts of the messages the model got with ``last_prompt`` as the last one."""
    for request in reversed(model_server.requests):
        messages = (request.json or {}).get("messages", [])
        texts = [_text(m) for m in messages]
        if texts and texts[-1] == last_prompt:
            return texts
    raise AssertionError(f"the model never got {last_prompt!r}")


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def test_a_durable_run_continues_a_session_one_run_at_a_time(
    durable: Durable, model_server: ProtocolServer
) -> None:
    server = durable.server
    durable.workers.ensure("w1")
    with server.client(timeout=90) as client:
        first = client.post("/v1/runs", json={"prompt": "the word is tangerine"}).json()
        session_id = first["session_id"]
        wait_status(client, first["run_id"], "done", timeout=90)
        # the second run on the session: the model sees the first one's exchange
        second = client.post(
            "/v1/runs", json={"prompt": "which word?", "session_id": session_id}
        ).json()
        assert second["session_id"] == session_id
        assert wait_status(client, second["run_id"], "done", timeout=90)["session_id"] == session_id
        saw = _model_saw(model_server, "which word?")
        assert saw[-3:] == ["the word is tangerine", "echo: the word is tangerine", "which word?"]
        # one run of a session at a time: queued or working, then waiting for a tool
        slow = client.post("/v1/runs", json={"prompt": "slow one", "session_id": session_id})
        assert slow.status_code == 201, slow.text
        busy = client.post("/v1/runs", json={"prompt": "no", "session_id": session_id})
        assert busy.status_code == 409, busy.text
        assert f"has a run working ({slow.json()['run_id']})" in busy.json()["error"]["message"]
        wait_status(client, slow.json()["run_id"], "done", timeout=90)
        ask = 'call ask_human {"question": "colour?"}'
        asking = client.post("/v1/runs", json={"prompt": ask, "session_id": session_id}).json()
        waiting = wait_status(client, asking["run_id"], "awaiting_tool", timeout=90)
        busy = client.post(
            "/v1/chat/completions",
            json={"model": "helper", "messages": [{"role": "user", "content": "no"}]},
            headers={"X-Session-Id": session_id},
        )
        assert busy.status_code == 409 and "waiting for tool results" in busy.text, busy.text
        [call] = waiting["pending_tool_calls"]
        answered = client.post(
            f"/v1/runs/{asking['run_id']}/resume", json={"results": {call["id"]: "green"}}
        )
        assert answered.status_code == 200, answered.text
        assert wait_status(client, asking["run_id"], "done", timeout=90)["text"] == "done: green"
        # the OpenAI endpoint goes on in it too (X-Session-Id)
        reply = client.post(
            "/v1/chat/completions",
            json={"model": "helper", "messages": [{"role": "user", "content": "and now?"}]},
            headers={"X-Session-Id": session_id},
        )
        assert reply.status_code == 200, reply.text
        assert reply.headers["x-session-id"] == session_id
        saw = _model_saw(model_server, "and now?")
        assert saw[1:3] == ["the word is tangerine", "echo: the word is tangerine"]
        assert "green" in saw and saw.count("which word?") == 1


def test_openai_compatible_completion_of_a_durable_run(durable: Durable) -> None:
    server = durable.server
    durable.workers.ensure("w1")
    with server.client(timeout=90) as client:
        body = {"model": "helper", "messages": [{"role": "user", "content": "hi openai"}]}
        reply = client.post("/v1/chat/completions", json=body)
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"] == "echo: hi openai"
        assert reply.headers["x-session-id"]
        with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as s:
            lines = [line for line in s.iter_lines() if line.startswith("data: {")]
        text = "".join(
            json.loads(line[6:])["choices"][0]["delta"].get("content") or "" for line in lines
        )
        assert text == "echo: hi openai"


def test_a_killed_workers_run_is_finished_by_another_and_its_stream_has_no_gap(
    tmp_path: Path, model_server: ProtocolServer
) -> None:
    with _durable(tmp_path, model_server.url, "sqlite") as made:
        _killed_worker(made)


def test_one_process_serves_and_works_and_sigterm_drains_both(
    tmp_path: Path, model_server: ProtocolServer
) -> None:
    """``harnessc serve SPEC --worker``: no worker process of its own, the run finishes."""
    with _database("sqlite") as url:
        kit = compile_agent(tmp_path, model_server.url, DURABLE_SPEC)
        kit.env.update(DURABLE_URL=url, SERVE_TOKEN=TOKEN)
        spec = kit.module.parent.parent / "spec" / "helper.yaml"
        port = free_port()
        log = kit.workdir / "serve-worker.log"
        with log.open("w") as handle:
            process = subprocess.Popen(
                [sys.executable, "-c", "from harnessc.cli import main; main()", "serve"]
                + [str(spec), "--port", str(port), "--token-env", "SERVE_TOKEN", "--worker"]
                + ["--", "--worker-id", "both", "--drain-s", "2"],
                stdin=subprocess.DEVNULL,
                stdout=handle,
                stderr=subprocess.STDOUT,
                env=kit.env,
                cwd=kit.workdir,
            )
        server = Served(process, f"http://127.0.0.1:{port}", TOKEN, log)
        try:
            server.wait_up()
            assert "durable runs: this process (worker both)" in server.output()
            with server.client(timeout=90) as client:
                started = client.post("/v1/runs", json={"prompt": "one process"}).json()
                done = wait_status(client, started["run_id"], "done", "error", timeout=90)
                assert (done["status"], done["text"]) == ("done", "echo: one process")
                again = client.post(
                    "/v1/runs", json={"prompt": "same session", "session_id": done["session_id"]}
                ).json()
                assert (
                    wait_status(client, again["run_id"], "done", timeout=90)["session_id"]
                    == (done["session_id"])
                )
            assert server.stop() == 0  # SIGTERM: the server drains, then the worker
            assert "worker both: stopping" in server.output()
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(10)


def _killed_worker(made: Durable) -> None:
    kit, workers, first = made.kit, made.workers, made.server
    # the tool notes each start in a file, then takes 3 s (the worker is killed inside it)
    command = 'call bash {"command": "date >> starts && sleep 3 && printf slept"}'
    with first.client() as client:
        run_id = client.post("/v1/runs", json={"prompt": command}).json()["run_id"]
    second = kit.serve(wait=False)  # another server on the same database
    victim = workers.start("w1")
    second.wait_up()
    seen: list[tuple[int, dict[str, Any]]] = []
    follower = threading.Thread(target=_follow, args=(second, run_id, seen), daemon=True)
    follower.start()
    starts = kit.workdir / "starts"
    deadline = time.monotonic() + 60
    while not (starts.exists() and seen):  # the model call's events come before the tool
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.05)
    victim.kill()  # SIGKILL in the middle of the tool
    victim.wait(timeout=30)
    workers.start("w1")  # the same id: it recovers its own runs at once
    follower.join(timeout=90)
    assert not follower.is_alive()
    # killed mid-tool: not run again (durable.interrupted_tools: fail, the default)
    assert len(starts.read_text().splitlines()) == 1
    ids = [i for i, _ in seen]
    assert ids == list(range(1, len(ids) + 1))  # no gap, no duplicate
    kinds = [e["type"] for _, e in seen]
    assert kinds.count("agent_start") == 1 and kinds[-1] == "agent_end"
    assert kinds.count("tool_execution_start") == 1 and kinds.count("tool_execution_end") == 1
    with first.client() as client:
        status = client.get(f"/v1/runs/{run_id}").json()
        assert status["status"] == "done", status
        ended = next(e for _, e in seen if e["type"] == "tool_execution_end")
        assert ended["is_error"] and ended["result"]["details"] == {"interrupted": True}, ended
        # the first server replays the same events under the same numbers
        assert _events(client, run_id) == seen
        tail = _events(client, run_id, **{"Last-Event-ID": str(len(seen) - 2)})
        assert tail == seen[-2:]
    assert first.stop() == 0  # SIGTERM: the server stops, the runs are the workers'


def test_a_killed_worker_of_a_continued_session_run_leaves_no_duplicate_entry(
    tmp_path: Path, model_server: ProtocolServer
) -> None:
    with _durable(tmp_path, model_server.url, "sqlite") as made:
        kit, workers, server = made.kit, made.workers, made.server
        workers.ensure("w1")
        with server.client(timeout=90) as client:
            first = client.post("/v1/runs", json={"prompt": "before the crash"}).json()
            session_id = first["session_id"]
            wait_status(client, first["run_id"], "done", timeout=90)
            command = 'call bash {"command": "date >> starts && sleep 3 && printf slept"}'
            run_id = client.post(
                "/v1/runs", json={"prompt": command, "session_id": session_id}
            ).json()["run_id"]
            starts = kit.workdir / "starts"
            deadline = time.monotonic() + 60
            while not starts.exists():
                assert time.monotonic() < deadline, "the tool never started"
                time.sleep(0.05)
            [victim] = [p for p in workers.running if p.poll() is None]
            victim.kill()  # SIGKILL in the middle of the tool
            victim.wait(timeout=30)
            workers.start("w1")  # the same id: it recovers its own runs at once
            done = wait_status(client, run_id, "done", "error", timeout=90)
            assert done["status"] == "done", done
            shown = client.get(f"/v1/sessions/{session_id}").json()
        roles = [m["role"] for m in shown["messages"]]
        assert roles == ["user", "assistant", "user", "assistant", "toolResult", "assistant"]
        [file] = list(Path(kit.env["XDG_DATA_HOME"]).rglob(f"*_{session_id}.jsonl"))
        ids = [json.loads(line).get("id") for line in file.read_text().splitlines()]
        assert len(ids) == len(set(ids))  # no entry twice
        saw = _model_saw(model_server, command)
        assert saw[-3:] == ["before the crash", "echo: before the crash", command]


def _follow(server: Served, run_id: str, seen: list[tuple[int, dict[str, Any]]]) -> None:
    with server.client(timeout=90) as client:
        with client.stream("GET", f"/v1/runs/{run_id}/events") as stream:
            for item in sse_events(stream.iter_lines()):
                seen.append(item)


def test_an_agui_client_tool_pauses_a_durable_run_and_its_answer_continues_it(
    durable: Durable, model_server: ProtocolServer
) -> None:
    pytest.importorskip("ag_ui.core")
    from .test_agui import _input, _run

    durable.workers.ensure("w1")
    tool = {
        "name": "pick_colour",
        "description": "Let the user pick a colour.",
        "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}},
    }
    earlier = [
        {"id": "u0", "role": "user", "content": "earlier question"},
        {"id": "a0", "role": "assistant", "content": "earlier answer"},
    ]
    prompt = {"id": "u1", "role": "user", "content": 'call pick_colour {"hint": "warm"}'}
    thread = f"durable-{secrets.token_hex(3)}"
    events = _run(durable.server, _input(thread, "run-a", [*earlier, prompt], tools=[tool]))
    start = next(e for e in events if e.type.value == "TOOL_CALL_START")
    assert start.tool_call_name == "pick_colour"
    finished = events[-1]
    assert finished.type.value == "RUN_FINISHED"
    assert finished.outcome.pending_tool_call_ids == [start.tool_call_id]
    # the earlier messages are the session's history, not a transcript in the prompt
    saw = _model_saw(model_server, prompt["content"])
    assert saw[-3:] == ["earlier question", "earlier answer", prompt["content"]]
    answer = {"id": "t1", "role": "tool", "toolCallId": start.tool_call_id, "content": "amber"}
    events = _run(durable.server, _input(thread, "run-b", [*earlier, prompt, answer], tools=[tool]))
    assert events[0].run_id == "run-b"
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "done: amber"
    assert events[-1].type.value == "RUN_FINISHED" and events[-1].result == "done: amber"
    # the thread goes on in the same session
    again = {"id": "u2", "role": "user", "content": "thread goes on"}
    events = _run(durable.server, _input(thread, "run-c", [again]))
    assert events[-1].result == "echo: thread goes on"
    saw = _model_saw(model_server, "thread goes on")
    assert "amber" in saw and saw[1] == "earlier question"


def test_agui_and_a2a_runs_of_a_durable_agent(durable: Durable) -> None:
    """AG-UI and A2A submit to the queue too: a worker runs them, the server streams them."""
    import asyncio

    pytest.importorskip("ag_ui.core")
    pytest.importorskip("a2a.client")
    from a2a.types import a2a_pb2 as a2a

    from .test_a2a import _final_state, _send
    from .test_agui import _input, _run

    durable.workers.ensure("w1")
    events = _run(
        durable.server,
        _input("t-1", "r-1", [{"id": "u1", "role": "user", "content": "hi durable agui"}]),
    )
    kinds = [e.type.value for e in events]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED"
    text = "".join(e.delta for e in events if e.type.value == "TEXT_MESSAGE_CONTENT")
    assert text == "echo: hi durable agui" and events[-1].result == text
    items = asyncio.run(_send(durable.server, "hi durable a2a", streaming=False))
    state, reply, _ = _final_state(items)
    assert (state, reply) == (a2a.TaskState.TASK_STATE_COMPLETED, "echo: hi durable a2a")


def test_a_durable_agents_session_and_files_are_rewound_over_http(durable: Durable) -> None:
    """The checkpoints a worker took (steps of its runs) are listed and rewound by the
    server; a paused run keeps its conversation; the next run goes on from the rewound
    point."""
    server = durable.server
    durable.workers.ensure("w1")
    work = durable.kit.workdir

    def bash(command: str, session_id: str | None, until: str = "done") -> dict[str, Any]:
        body: dict[str, Any] = {"prompt": "call bash " + json.dumps({"command": command})}
        if session_id is not None:
            body["session_id"] = session_id
        started = client.post("/v1/runs", json=body)
        assert started.status_code == 201, started.text
        return wait_status(client, started.json()["run_id"], until, timeout=90)

    with server.client(timeout=90) as client:
        session_id = bash("printf one > drw.txt", None)["session_id"]
        bash("printf two > drw.txt && printf new > drw2.txt", session_id)
        assert (work / "drw.txt").read_text() == "two"
        listed = client.get(f"/v1/sessions/{session_id}/checkpoints")
        assert listed.status_code == 200, listed.text
        points = listed.json()["checkpoints"]
        assert [p["tools"] for p in points] == [["bash"], ["bash"]]
        target = points[0]["entry_id"]

        held = bash("echo held > drw3.txt", session_id, until="paused")
        refused = client.post(
            f"/v1/sessions/{session_id}/rewind", json={"entry_id": target, "mode": "both"}
        )
        assert refused.status_code == 409 and "has a paused run" in refused.text
        [call] = held["pending_tool_calls"]
        client.post(f"/v1/runs/{held['run_id']}/resume", json={"approvals": {call["id"]: True}})
        wait_status(client, held["run_id"], "done", timeout=90)

        done = client.post(
            f"/v1/sessions/{session_id}/rewind", json={"entry_id": target, "mode": "both"}
        )
        assert done.status_code == 200, done.text
        assert done.json()["done"] and done.json()["moved"]
        assert (work / "drw.txt").read_text() == "one"
        assert not (work / "drw2.txt").exists() and not (work / "drw3.txt").exists()

        after = client.post("/v1/runs", json={"prompt": "after rewind", "session_id": session_id})
        assert after.status_code == 201, after.text
        wait_status(client, after.json()["run_id"], "done", timeout=90)
        messages = client.get(f"/v1/sessions/{session_id}").json()["messages"]
        texts = [json.dumps(m.get("content")) for m in messages if m["role"] == "user"]
        assert not any("echo held" in t for t in texts), texts
        assert "after rewind" in texts[-1]

"""Fixtures of the serve tests: a generated agent (compiled from a spec in tmp_path) whose
model is a scripted ProtocolServer, served by a real ``--serve`` process on 127.0.0.1.

The model answers from the conversation, so many runs can share it at once:
``call NAME {json}`` in the last user message -> a call of tool NAME with those
arguments; a tool result last -> ``done: <result>``; ``slow`` -> a reply streamed over
about 1.5 s; ``fail`` -> a 400 error; anything else -> ``echo: <text>``.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessc.compiler.render import render
from harnessc.spec import parse_spec
from harnessc.testing import (
    ProtocolServer,
    RecordedRequest,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

API_KEY = "sk-serve-test-SECRET-7373"
TOKEN = "serve-token-0123456789abcdef"

# The model every served test agent talks to (the local protocol server).
MODEL = """\
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
"""

SPEC = f"""\
version: 1
name: helper
description: A test agent that echoes, calls tools and asks a human.
{MODEL}system_prompt: You are a test agent.
tools:
  - bash
  - external:
      name: ask_human
      description: Ask the human a question.
      parameters:
        type: object
        properties:
          question: {{type: string}}
permissions:
  ask: ["Bash(*)"]
"""

_ids = itertools.count(1)


def _last(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return messages[-1] if messages else {}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def model_reply(request: RecordedRequest) -> ScriptedResponse:
    body = request.json or {}
    last = _last(body.get("messages", []))
    text = _text(last)
    if last.get("role") == "tool":
        return ScriptedResponse.sse(openai_events(["done: ", text]))
    if text.startswith("call "):
        _, name, *rest = text.split(" ", 2)
        arguments = rest[0] if rest else "{}"
        call_id = f"call_{next(_ids)}"
        return ScriptedResponse.sse(openai_tool_call_events([(call_id, name, arguments)]))
    if text.startswith("fail"):
        return ScriptedResponse.error(400, "the model refuses this prompt", kind="invalid_request")
    if text.startswith("slow"):
        return ScriptedResponse.sse(openai_events(["slow ", "reply ", "here"]), chunk_delay_s=0.5)
    return ScriptedResponse.sse(openai_events(["echo: ", text]))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A running ``--serve`` process."""

    process: subprocess.Popen[str]
    url: str
    token: str | None
    log: Path

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def client(self, **kwargs: Any) -> httpx.Client:
        kwargs.setdefault("timeout", 30)
        return httpx.Client(base_url=self.url, headers=self.headers, **kwargs)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise

    def output(self) -> str:
        return self.log.read_text()

    def wait_up(self, timeout: float = 60) -> None:
        """Wait until /healthz answers and the server has said where it serves (it says
        so once it is listening, so /healthz may answer first)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited: {self.output()}")
            try:
                up = httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                up = False
            if up and "serving " in self.output():
                return
            time.sleep(0.05)
        raise AssertionError(f"the server did not start: {self.output()}")


@dataclass
class AgentKit:
    module: Path
    workdir: Path
    env: dict[str, str]
    served: list[Served]

    def command(self, *args: str) -> list[str]:
        return [sys.executable, str(self.module), *args]

    def serve(self, *args: str, token: str | None = TOKEN, wait: bool = True) -> Served:
        port = free_port()
        env = dict(self.env)
        if token is not None:
            env["SERVE_TOKEN"] = token
            args = ("--token-env", "SERVE_TOKEN", *args)
        log = self.workdir / f"serve-{port}.log"
        handle = log.open("w")
        process = subprocess.Popen(
            self.command("--serve", "--port", str(port), *args),
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=self.workdir,
        )
        handle.close()
        served = Served(process, f"http://127.0.0.1:{port}", token, log)
        self.served.append(served)
        if wait:
            served.wait_up()
        return served

    def stop(self) -> None:
        """Kill the servers this kit started that still run."""
        for served in self.served:
            if served.process.poll() is None:
                served.process.kill()
                served.process.wait(10)

    def __enter__(self) -> AgentKit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="module")
def model_server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        running.set_handler(model_reply)
        yield running


def compile_agent(tmp: Path, model_url: str, spec: str = SPEC) -> AgentKit:
    spec_dir = tmp / "spec"
    spec_dir.mkdir(exist_ok=True)
    spec_path = spec_dir / "helper.yaml"
    spec_path.write_text(spec)
    loaded = parse_spec(spec.encode(), spec_path)
    assert loaded.spec is not None, [str(d) for d in loaded.diagnostics]
    out = tmp / "generated"
    out.mkdir(exist_ok=True)
    module = out / "helper.py"
    module.write_text(render(loaded, out))
    workdir = tmp / "work"
    workdir.mkdir(exist_ok=True)
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("HARNESSC_SERVE_TOKEN", "HARNESSC_BASE_URL")
    }
    environment.update(
        TEST_BASE_URL=f"{model_url}/v1",
        TEST_API_KEY=API_KEY,
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
    )
    return AgentKit(module, workdir, environment, [])


def compile_with_subagent(
    root: Path, model_url: str, spec: str, sub_file: str, sub_spec: str
) -> AgentKit:
    """``spec`` (``lead.yaml``) and its sub-agent's ``sub_file`` in ``root/spec``, compiled
    together into ``root/generated`` as ``harnessc build`` compiles them."""
    from harnessc.compiler import compile as compile_specs
    from harnessc.compiler.write import write_outputs
    from harnessc.spec import load_spec

    (root / "spec").mkdir(exist_ok=True)
    (root / "spec" / sub_file).write_text(sub_spec)
    kit = compile_agent(root, model_url, spec)  # the folders and the environment
    (root / "spec" / "lead.yaml").write_text(spec)
    loaded = load_spec(root / "spec" / "lead.yaml")
    assert loaded.ok and loaded.spec is not None, [d.format() for d in loaded.diagnostics]
    write_outputs(compile_specs([loaded], kit.module.parent), kit.module.parent)
    kit.module = kit.module.parent / f"{loaded.spec.name}.py"
    return kit


@pytest.fixture(scope="module")
def kit(
    tmp_path_factory: pytest.TempPathFactory, model_server: ProtocolServer
) -> Iterator[AgentKit]:
    made = compile_agent(tmp_path_factory.mktemp("serve"), model_server.url)
    with made:
        yield made


@pytest.fixture(scope="module")
def server(kit: AgentKit) -> Served:
    """One server with a token, shared by the tests of a module."""
    return kit.serve()


def sse_events(lines: Iterator[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(id, event) pairs of a text/event-stream, comments skipped."""
    event_id = 0
    data: list[str] = []
    for line in lines:
        if line.startswith("id:"):
            event_id = int(line[3:].strip())
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line == "" and data:
            yield event_id, json.loads("\n".join(data))
            data = []


def wait_status(
    client: httpx.Client, run_id: str, *wanted: str, timeout: float = 30
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = client.get(f"/v1/runs/{run_id}").json()
        if status["status"] in wanted:
            return status
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} is {status}, not {wanted}")
        time.sleep(0.05)

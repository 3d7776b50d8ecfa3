"""Fixtures of the MCP tests: real SDK servers (stdio children, one over HTTP on
127.0.0.1), agents compiled from specs in tmp_path, and a check that no server
process outlives a test."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harnessc.compiler.render import render
from harnessc.spec import parse_spec
from harnessc.testing import (
    ProtocolServer,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)

pytest.importorskip("mcp")

HERE = Path(__file__).resolve().parent
SERVER = HERE / "notes_server.py"
API_KEY = "sk-mcp-test-SECRET-5151"


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def wait_gone(pids: list[int], timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def recorded_pids(folder: Path) -> list[int]:
    return sorted(int(p.read_text()) for p in folder.glob("*-*") if p.read_text().strip())


def text_reply(*pieces: str) -> ScriptedResponse:
    return ScriptedResponse.sse(openai_events(list(pieces)))


def tool_reply(*calls: tuple[str, str, dict[str, Any]]) -> ScriptedResponse:
    return ScriptedResponse.sse(
        openai_tool_call_events([(cid, name, json.dumps(args)) for cid, name, args in calls])
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def model_server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The notes server over streamable HTTP on 127.0.0.1, named ``tracker``."""
    port = free_port()
    pid_dir = tmp_path_factory.mktemp("http-pids")
    log = (tmp_path_factory.mktemp("http-log") / "server.log").open("w")
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)],
        env={**os.environ, "NOTES_NAME": "tracker", "MCP_PID_DIR": str(pid_dir)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None:
                    pytest.fail("the HTTP MCP server exited at start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
        log.close()


@dataclass
class Agent:
    path: Path
    workdir: Path
    pid_dir: Path
    env: dict[str, str]

    def command(self, *args: str) -> list[str]:
        return [sys.executable, str(self.path), *args]

    def run(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*args),
            input="",
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.workdir,
            timeout=timeout,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(*args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.workdir,
        )

    def server_pids(self) -> list[int]:
        return recorded_pids(self.pid_dir)


@pytest.fixture
def make_agent(tmp_path: Path, model_server: ProtocolServer) -> Iterator[Any]:
    """``make_agent(spec_yaml)``: the spec compiled into tmp_path, ready to run."""
    made: list[Agent] = []

    def make(spec: str, **env: str) -> Agent:
        model_server.reset()
        spec_dir = tmp_path / "spec"
        spec_dir.mkdir(exist_ok=True)
        shutil.copy(SERVER, spec_dir / "notes_server.py")
        (spec_dir / "notes").mkdir(exist_ok=True)
        spec_path = spec_dir / "agent.yaml"
        spec_path.write_text(spec)
        loaded = parse_spec(spec.encode(), spec_path)
        assert loaded.spec is not None, [str(d) for d in loaded.diagnostics]
        out = tmp_path / "generated"
        out.mkdir(exist_ok=True)
        module = out / "agent.py"
        module.write_text(render(loaded, out))
        workdir = tmp_path / "work"
        workdir.mkdir(exist_ok=True)
        pid_dir = tmp_path / "pids"
        pid_dir.mkdir(exist_ok=True)
        environment = {
            k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "COLUMNS"
        }
        environment.update(
            TEST_BASE_URL=f"{model_server.url}/v1",
            TEST_API_KEY=API_KEY,
            MCP_PID_DIR=str(pid_dir),
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONPATH=os.pathsep.join(p for p in sys.path if p),
            **env,
        )
        agent = Agent(module, workdir, pid_dir, environment)
        made.append(agent)
        return agent

    yield make
    for agent in made:  # a failed test must not leave servers behind either
        for pid in agent.server_pids():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


MODEL = """\
version: 1
name: notes_agent
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
system_prompt: You are a test agent.
# these tests find each server by its host PID (a sandbox has PID namespace of its own);
# tests/sandbox runs stdio servers inside the sandbox
sandbox: off
"""

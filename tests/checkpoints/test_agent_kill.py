"""The generated agent as a process: killed (SIGKILL) during a checkpoint or during a
rewind (``--rewind``), the workspace is as it was or as it should be, and the next start
says which; ``harnessc sessions rewind`` and ``--rewind`` with their flags."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harnessc.compiler import compile as compile_specs
from harnessc.compiler.write import write_outputs
from harnessc.runtime.checkpoints.crash import ENV
from harnessc.runtime.support.data_folder import DataFolder, resolve_folder
from harnessc.spec import load_spec

from .agentkit import MODEL, Script, calls, model, text
from .conftest import tree_state

__all__ = ["model"]

REPO = Path(__file__).resolve().parents[2]
SPEC = f"""\
version: 1
name: lead
{MODEL}
system_prompt: You are LEAD.
tools: [write, bash]
"""


class Agent:
    def __init__(self, root: Path, server: Any) -> None:
        self.root = root
        self.ws = root / "ws"
        self.ws.mkdir()
        spec = root / "lead.yaml"
        spec.write_text(SPEC)
        loaded = load_spec(spec)
        assert loaded.ok
        write_outputs(compile_specs([loaded], root / "generated"), root / "generated")
        self.script = Script()
        server.reset()
        server.set_handler(self.script)
        self.env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        self.env.pop(ENV, None)
        self.env.update(
            TEST_BASE_URL=f"{server.url}/v1",
            TEST_API_KEY="sk-kill-test",
            PYTHONPATH=str(REPO),
            PYTHONDONTWRITEBYTECODE="1",
        )

    def run(self, *args: str, crash: str | None = None) -> subprocess.CompletedProcess[str]:
        env = dict(self.env)
        if crash is not None:
            env[ENV] = crash
        return subprocess.run(
            [
                sys.executable,
                str(self.root / "generated" / "lead.py"),
                "--cwd",
                str(self.ws),
                *args,
            ],
            input="",
            capture_output=True,
            text=True,
            env=env,
            cwd=self.root,
            timeout=120,
        )

    def session_lines(self) -> list[dict[str, Any]]:
        folder = resolve_folder(DataFolder("sessions"), self.ws)
        [path] = sorted(folder.glob("*/*.jsonl"))
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def users(self) -> dict[str, str]:
        out = {}
        for line in self.session_lines():
            message = line.get("message") or {}
            if line.get("type") == "message" and message.get("role") == "user":
                content = message["content"]
                words = content if isinstance(content, str) else content[0]["text"]
                out[words] = line["id"]
        return out


@pytest.fixture
def agent(tmp_path: Path, model: Any) -> Agent:
    kit = Agent(tmp_path, model)
    kit.script.plays[("LEAD", "first")] = [
        calls(("write", {"path": "a.txt", "content": "one\n"})),
        text("first done"),
    ]
    kit.script.plays[("LEAD", "second")] = [
        calls(
            ("bash", {"command": "echo two > a.txt && mv a.txt b.txt && mkdir -p sub"}),
            ("write", {"path": "sub/c.txt", "content": "c\n"}),
        ),
        text("second done"),
    ]
    kit.script.plays[("LEAD", "after")] = [text("after done")]
    return kit


def test_killed_during_a_checkpoint_the_tools_never_ran_and_the_next_start_says_so(
    agent: Agent,
) -> None:
    (agent.ws / "keep.txt").write_text("keep\n")
    before = tree_state(agent.ws)
    done = agent.run("first", crash="take:scanned")
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert tree_state(agent.ws) == before  # the batch never ran
    again = agent.run("--continue", "after")
    assert again.returncode == 0, again.stderr
    assert "[checkpoints] a checkpoint of" in again.stderr
    assert "was interrupted and discarded" in again.stderr
    assert "which is as it was" in again.stderr
    quiet = agent.run("--continue", "after")
    assert "[checkpoints]" not in quiet.stderr  # said once


@pytest.mark.parametrize("point", ["rewind:journal", "rewind:op:2", "rewind:files-done"])
def test_killed_during_a_rewind_the_next_start_finishes_it(agent: Agent, point: str) -> None:
    assert agent.run("first").returncode == 0
    first = tree_state(agent.ws)
    assert agent.run("--continue", "second").returncode == 0
    second = tree_state(agent.ws)
    assert second != first
    target = agent.users()["second"]

    dry = agent.run("--continue", "--rewind", target, "--rewind-dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "[rewind] files:" in dry.stderr and "-two" in dry.stderr
    assert tree_state(agent.ws) == second

    killed = agent.run("--continue", "--rewind", target, "--rewind-mode", "both", crash=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # the changes and the diff were shown before the kill, before any file was touched
    assert "[rewind] files:" in killed.stderr and "-two" in killed.stderr
    again = agent.run("--continue", "after")
    assert again.returncode == 0, again.stderr
    assert "it was finished now" in again.stderr
    assert "as the rewind should leave it" in again.stderr
    assert f"the conversation moved to {target}" in again.stderr or point == "rewind:files-done"
    assert tree_state(agent.ws) == first  # as it should be, never between
    # the conversation went back too: "after" was asked right after "second"
    sent = [m["content"] for m in agent.script.seen[-1] if m["role"] == "user"]
    assert sent == ["first", "second", "after"] or sent[-2:] == ["second", "after"]
    lines = agent.session_lines()
    rewinds = [
        line
        for line in lines
        if line.get("customType") == "harnessc.checkpoint" and "rewind" in (line.get("data") or {})
    ]
    assert len(rewinds) == 1


def test_rewind_flags_and_the_sessions_command(agent: Agent) -> None:
    assert agent.run("first").returncode == 0
    first = tree_state(agent.ws)
    assert agent.run("--continue", "second").returncode == 0
    target = agent.users()["second"]
    usage = agent.run("--continue", "--rewind", target)
    assert usage.returncode == 2 and "--rewind-mode" in usage.stderr
    no_session = agent.run("--rewind", target, "--rewind-mode", "files")
    assert no_session.returncode == 2 and "--continue or --session" in no_session.stderr
    unknown = agent.run("--continue", "--rewind", "nope", "--rewind-mode", "files")
    assert unknown.returncode == 1 and "no entry 'nope'" in unknown.stderr

    # the sessions command, offline (the agent is not running)
    (agent.ws / "b.txt").write_text("edited by the user\n")
    session_id = agent.session_lines()[0]["id"]
    env = dict(agent.env)
    env["PWD"] = str(agent.ws)
    harnessc = [sys.executable, "-c", "from harnessc.cli import main; main()"]
    command = [*harnessc, "sessions", "rewind", session_id, target]
    shown = subprocess.run(
        [*command, "--dry-run", "--json"], cwd=agent.ws, env=env, capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert report["plan"]["conflicts"] == [
        {"path": "b.txt", "reason": "changed outside the agent since the checkpoint"}
    ]
    kept = subprocess.run(
        [*command, "--mode", "files"], cwd=agent.ws, env=env, capture_output=True, text=True
    )
    assert kept.returncode == 0, kept.stderr
    assert "kept b.txt: changed outside the agent" in kept.stderr
    assert (agent.ws / "b.txt").read_text() == "edited by the user\n"
    forced = subprocess.run(
        [*command, "--mode", "files", "--force"],
        cwd=agent.ws,
        env=env,
        capture_output=True,
        text=True,
    )
    assert forced.returncode == 0, forced.stderr
    assert tree_state(agent.ws) == first

    # the changes and the diff are printed before any file is touched: killed at its
    # first change, the command has shown them; its next run finishes the rewind
    (agent.ws / "b.txt").write_text("edited again\n")
    killed = subprocess.run(
        [*command, "--mode", "files", "--force"],
        cwd=agent.ws,
        env={**env, ENV: "rewind:op:1"},
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "files:" in killed.stdout and "-edited again" in killed.stdout
    finished = subprocess.run(
        [*command, "--mode", "files", "--force"],
        cwd=agent.ws,
        env=env,
        capture_output=True,
        text=True,
    )
    assert finished.returncode == 0, finished.stderr
    assert "[checkpoints]" in finished.stderr
    assert tree_state(agent.ws) == first

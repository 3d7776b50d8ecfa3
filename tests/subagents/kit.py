"""Sub-agent tests: real specs and a Claude Code subagent file, built into a folder and
run as ``python generated/lead.py`` against a ProtocolServer that scripts each agent by
its own system prompt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harnessc.compiler import compile as compile_specs
from harnessc.compiler.write import write_outputs
from harnessc.runtime.support.data_folder import DataFolder, resolve_folder
from harnessc.spec import load_spec
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import openai_events, openai_tool_call_events

REPO = Path(__file__).resolve().parents[2]

MODEL = """\
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
"""

# A Claude Code subagent file in the shape of the feature-dev plugin's agents.
EXPLORER_MD = """\
---
name: code-explorer
description: Traces how a feature is built through the code, from entry points to storage, and lists the files worth reading.
tools: Glob, Grep, LS, Read, NotebookRead, WebFetch, TodoWrite, WebSearch
model: sonnet
color: yellow
---

You are EXPLORER. You follow a feature through the code base: find where it starts,
which layers it crosses and which files hold its logic. Report what you found as a
short list of files, each with one line saying why it matters.
"""


def text_reply(text: str) -> ScriptedResponse:
    return ScriptedResponse.sse(openai_events([text]))


def tool_reply(*calls: tuple[str, str, dict[str, Any]]) -> ScriptedResponse:
    return ScriptedResponse.sse(
        openai_tool_call_events([(cid, name, json.dumps(args)) for cid, name, args in calls])
    )


def task(call_id: str, agent: str, prompt: str) -> tuple[str, str, dict[str, Any]]:
    return (call_id, "task", {"subagent_type": agent, "description": prompt[:20], "prompt": prompt})


Rule = Callable[[list[dict[str, Any]]], ScriptedResponse]


@dataclass
class Scripts:
    """Answers each request by the agent whose marker its system prompt holds."""

    rules: dict[str, Rule] = field(default_factory=dict)
    seen: dict[str, list[list[dict[str, Any]]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Any) -> ScriptedResponse:
        messages = request.json["messages"]
        system = " ".join(
            str(m.get("content")) for m in messages if m["role"] in ("system", "developer")
        )
        for marker, rule in self.rules.items():
            if marker in system:
                with self.lock:
                    self.seen.setdefault(marker, []).append(messages)
                return rule(messages)
        return ScriptedResponse.error(500, f"no script for system prompt {system[:80]!r}")


def tool_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content")) for m in messages if m["role"] == "tool"]


@dataclass
class Tree:
    """A folder of specs, built into ``generated/``, and how to run its lead agent."""

    root: Path
    server: ProtocolServer
    scripts: Scripts
    env: dict[str, str]

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def setup(self, specs: dict[str, str], **rules: Rule) -> None:
        """Write ``specs`` (file name -> YAML), build ``lead.yaml`` and script each agent
        by the marker of its system prompt (``rules``)."""
        for name, text in specs.items():
            self.write(name, text)
        self.build()
        self.scripts.rules.update(rules)

    def build(self, spec: str = "lead.yaml") -> None:
        loaded = load_spec(self.root / spec)
        assert loaded.ok, [d.format() for d in loaded.diagnostics]
        write_outputs(compile_specs([loaded], self.root / "generated"), self.root / "generated")

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(self.root / "generated" / "lead.py"), *args],
            input="",
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            cwd=self.root,
            timeout=timeout,
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, str(self.root / "generated" / "lead.py"), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.root,
        )

    def sessions(self) -> list[Path]:
        # the lead's sessions: in the project's per-user data folder (the test home's)
        folder = resolve_folder(DataFolder("sessions"), self.root)
        return sorted(folder.glob("*/*.jsonl"))


@pytest.fixture(scope="module")
def server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


@pytest.fixture
def tree(tmp_path: Path, server: ProtocolServer) -> Tree:
    server.reset()
    scripts = Scripts()
    server.set_handler(scripts)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        TEST_BASE_URL=f"{server.url}/v1",
        TEST_API_KEY="sk-subagents-test",
        PYTHONPATH=str(REPO),
        PYTHONDONTWRITEBYTECODE="1",
        COLUMNS="100",
    )
    return Tree(tmp_path, server, scripts, env)


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]

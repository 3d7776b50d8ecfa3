"""An agent compiled from specs (write, edit, bash, a python tool, an MCP server's tool and
a sub-agent), run in this process against a ProtocolServer that scripts each agent by
the marker in its system prompt and the prompt it is working on."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harnessc.compiler import compile as compile_specs
from harnessc.compiler.write import write_outputs
from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.session.repo import JsonlSessionRepo
from harnessc.runtime.session.session import Session
from harnessc.spec import load_spec
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import openai_events, openai_tool_call_events

MODEL = """\
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
"""

HELPER = f"""\
version: 1
name: helper
description: Tidies the workspace.
{MODEL}
system_prompt: You are HELPER.
tools: [write, bash]
"""

FILETOOLS = '''\
"""A python tool of the test agent: a file written with its permission bits."""

import os


def make_file(path: str, text: str, mode: int) -> str:
    """Write the file at path (in the workspace) with the permission bits mode."""
    target = os.path.join(os.environ["FILES_ROOT"], path)
    with open(target, "w") as fh:
        fh.write(text)
    os.chmod(target, mode)
    return f"made {path}"
'''

FILES_SERVER = '''\
"""An MCP server whose tool writes into the workspace ($FILES_ROOT)."""

import os

from mcp.server.mcpserver import MCPServer

app = MCPServer("files")


@app.tool()
def save(path: str, text: str) -> str:
    """Save text to a file of the workspace."""
    with open(os.path.join(os.environ["FILES_ROOT"], path), "w") as fh:
        fh.write(text)
    return f"saved {path}"


if __name__ == "__main__":
    app.run()
'''


def lead_spec(extra: str = "") -> str:
    return f"""\
version: 1
name: lead
description: Changes files with every kind of tool.
{MODEL}
system_prompt: You are LEAD.
tools:
  - write
  - edit
  - bash
  - python: filetools:make_file
mcp:
  files:
    command: {sys.executable}
    args: [files_server.py]
    env:
      FILES_ROOT: ${{FILES_ROOT}}
agents:
  helper:
    spec: helper.yaml
{extra}"""


def calls(*items: tuple[str, dict[str, Any]]) -> ScriptedResponse:
    return ScriptedResponse.sse(
        openai_tool_call_events(
            [(f"call_{name}_{i}", name, json.dumps(args)) for i, (name, args) in enumerate(items)]
        )
    )


def text(words: str) -> ScriptedResponse:
    return ScriptedResponse.sse(openai_events([words]))


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


@dataclass
class Script:
    """Replies by (marker in the system prompt, the last user prompt): the Nth model call
    since that prompt gets the Nth reply (so a prompt asked again on another branch is
    answered the same way)."""

    plays: dict[tuple[str, str], list[ScriptedResponse]] = field(default_factory=dict)
    seen: list[list[dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Any) -> ScriptedResponse:
        messages = request.json["messages"]
        with self.lock:
            self.seen.append(messages)
        system = " ".join(_text(m) for m in messages if m["role"] in ("system", "developer"))
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        prompt = _text(messages[users[-1]]) if users else ""
        step = sum(1 for m in messages[users[-1] + 1 :] if m["role"] == "assistant") if users else 0
        for (marker, asked), replies in self.plays.items():
            if marker in system and asked == prompt:
                if step < len(replies):
                    return replies[step]
        return ScriptedResponse.error(500, f"no script for {prompt!r} step {step}")


@dataclass
class AgentKit:
    root: Path
    ws: Path
    script: Script
    repo: JsonlSessionRepo
    module: ModuleType | None = None

    def build(self, lead: str) -> None:
        (self.root / "lead.yaml").write_text(lead)
        loaded = load_spec(self.root / "lead.yaml")
        assert loaded.ok, [d.format() for d in loaded.diagnostics]
        out = self.root / "generated"
        write_outputs(compile_specs([loaded], out), out)
        spec = importlib.util.spec_from_file_location(f"lead_{id(self)}", out / "lead.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.module = module

    def harness(self, session: Session | None = None) -> AgentHarness:
        assert self.module is not None
        if session is None:
            session = self.repo.create(cwd=str(self.ws))
        options = self.module.build_options(session=session, cwd=str(self.ws))
        return AgentHarness(options)


@pytest.fixture(scope="module")
def model() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


@pytest.fixture
def agent(tmp_path: Path, model: ProtocolServer, monkeypatch: pytest.MonkeyPatch) -> AgentKit:
    pytest.importorskip("mcp")
    model.reset()
    script = Script()
    model.set_handler(script)
    root = tmp_path / "spec"
    root.mkdir()
    (root / "helper.yaml").write_text(HELPER)
    (root / "filetools.py").write_text(FILETOOLS)
    (root / "files_server.py").write_text(FILES_SERVER)
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)  # the built-in tools' working directory
    monkeypatch.setenv("TEST_BASE_URL", f"{model.url}/v1")
    monkeypatch.setenv("TEST_API_KEY", "sk-checkpoints-test")
    monkeypatch.setenv("FILES_ROOT", str(ws))
    monkeypatch.syspath_prepend(str(root))
    return AgentKit(root, ws, script, JsonlSessionRepo(tmp_path / "sessions"))

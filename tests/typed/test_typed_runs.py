"""Typed results through generated agents run as subprocesses against the local protocol
server, on each wire API: every mode, a schema and a Python type, invalid answers sent
back with their errors, an answer that never validates, stdout purity, --json, and a
paused typed run resumed in a new process.

The agents are compiled once for the module and share one server (the tests script it
in turn).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harnessc.compiler import render
from harnessc.spec import load_spec
from harnessc.testing import (
    AnthropicBlock,
    ProtocolServer,
    ScriptedResponse,
    anthropic_events,
    google_events,
    openai_events,
    openai_tool_call_events,
)

KEY_ENV = "TYPED_TEST_KEY"
WIRES = {"openai": "/v1", "anthropic": "", "google": ""}
SCHEMA = """\
    schema:
      type: object
      properties:
        verdict: {type: string, enum: [approve, reject]}
        score: {type: integer, minimum: 0, maximum: 10}
      required: [verdict, score]
      additionalProperties: false
"""
TYPES = """\
from pydantic import BaseModel, Field, field_validator


class Verdict(BaseModel):
    verdict: str
    score: int = Field(ge=0, le=10)

    @field_validator("verdict")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in ("approve", "reject"):
            raise ValueError("say approve or reject")
        return value
"""
GOOD = {"verdict": "approve", "score": 7}


@dataclass
class Agents:
    server: ProtocolServer
    root: Path

    def run(self, name: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(self.root / "out" / f"{name}.py"), *args],
            capture_output=True,
            text=True,
            cwd=self.root,
            env={**os.environ, KEY_ENV: "sk-typed-test", "PYTHONPATH": _pythonpath()},
            timeout=60,
        )

    def script(self, *replies: list[bytes]) -> None:
        self.server.reset()
        self.server.enqueue(*(ScriptedResponse.sse(events) for events in replies))


def _pythonpath() -> str:
    repo = str(Path(__file__).resolve().parents[2])
    rest = os.environ.get("PYTHONPATH", "")
    return repo + (os.pathsep + rest if rest else "")


def _spec(name: str, wire: str, url: str, output: str, extra: str = "") -> str:
    structured = "true" if "native" in output else "false"
    return (
        f"version: 1\nname: {name}\nmodels:\n"
        f"  m: {{provider: {wire}, id: test-model, base_url: '{url}{WIRES[wire]}', "
        f"api_key_env: {KEY_ENV}, structured_output: {structured}}}\n"
        f"session: {{dir: sessions}}\n{extra}output:\n{output}"
    )


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agents]:
    root = tmp_path_factory.mktemp("typed")
    (root / "verdict_types.py").write_text(TYPES)
    (root / "out").mkdir()
    with ProtocolServer() as server:
        specs: dict[str, str] = {}
        for wire in WIRES:
            for mode in ("native", "tool", "prompted"):
                specs[f"{wire}_{mode}"] = _spec(
                    f"{wire}_{mode}", wire, server.url, SCHEMA + f"    mode: {mode}\n"
                )
        specs["retrying"] = _spec(
            "retrying", "openai", server.url, SCHEMA + "    mode: prompted\n    retries: 1\n"
        )
        specs["typed"] = _spec(
            "typed", "anthropic", server.url, "    type: verdict_types:Verdict\n"
        )
        specs["asking"] = _spec(
            "asking",
            "openai",
            server.url,
            SCHEMA,
            "tools:\n  - external: {name: ask_user, description: Ask the user}\n",
        )
        specs["asking_once"] = _spec(
            "asking_once",
            "openai",
            server.url,
            SCHEMA + "    mode: prompted\n    retries: 1\n",
            "tools:\n  - external: {name: ask_user, description: Ask the user}\n",
        )
        specs["gated"] = _spec(
            "gated", "openai", server.url, SCHEMA, "permissions: {default: ask}\n"
        )
        specs["refusing"] = _spec(
            "refusing",
            "openai",
            server.url,
            SCHEMA + "    retries: 0\n",
            "permissions: {deny: [final_result]}\n",
        )
        for name, text in specs.items():
            path = root / f"{name}.yaml"
            path.write_text(text)
            loaded = load_spec(path)
            assert loaded.ok, [d.format() for d in loaded.diagnostics]
            (root / "out" / f"{name}.py").write_text(render(loaded, root / "out"))
        yield Agents(server, root)


# -- replies on each wire ------------------------------------------------------------


def text_reply(wire: str, text: str) -> list[bytes]:
    if wire == "openai":
        return openai_events([text])
    if wire == "anthropic":
        return anthropic_events([AnthropicBlock("text", [text])])
    return google_events([text])


def call_reply(wire: str, name: str, args: dict[str, Any], call_id: str = "call_1") -> list[bytes]:
    raw = json.dumps(args)
    if wire == "openai":
        return openai_tool_call_events([(call_id, name, raw)])
    if wire == "anthropic":
        return anthropic_events(
            [AnthropicBlock("tool_use", [raw], id=call_id, name=name)], stop_reason="tool_use"
        )
    return google_events(calls=[(name, args)])


def answer(wire: str, mode: str, value: dict[str, Any]) -> list[bytes]:
    if mode == "tool":
        return call_reply(wire, "final_result", value)
    return text_reply(wire, json.dumps(value))


def _asked(wire: str, mode: str, body: dict[str, Any]) -> None:
    """The request asks for the answer the way ``mode`` does on ``wire``."""
    if mode == "native":
        if wire == "openai":
            fmt = body["response_format"]
            assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
            assert fmt["json_schema"]["schema"]["required"] == ["verdict", "score"]
        elif wire == "anthropic":
            assert body["output_config"]["format"]["type"] == "json_schema"
        else:
            config = body["generationConfig"]
            assert config["responseMimeType"] == "application/json"
            assert config["responseJsonSchema"]["required"] == ["verdict", "score"]
        assert "tools" not in body
    elif mode == "tool":
        if wire == "openai":
            assert body["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}
            assert body["tools"][0]["function"]["name"] == "final_result"
        elif wire == "anthropic":
            assert body["tool_choice"] == {"type": "tool", "name": "final_result"}
            assert body["tools"][0]["name"] == "final_result"
        else:
            calling = body["toolConfig"]["functionCallingConfig"]
            assert calling == {"mode": "ANY", "allowedFunctionNames": ["final_result"]}
    else:
        system = json.dumps(body.get("system") or body.get("systemInstruction") or body["messages"])
        assert "JSON Schema" in system and "verdict" in system
        assert "tools" not in body and "response_format" not in body


# -- the tests -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["native", "tool", "prompted"])
@pytest.mark.parametrize("wire", list(WIRES))
def test_each_mode_on_each_wire_prints_the_value_alone_on_stdout(
    agents: Agents, wire: str, mode: str
) -> None:
    agents.script(answer(wire, mode, GOOD))
    done = agents.run(f"{wire}_{mode}", "review the plan")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == GOOD  # the only thing on stdout: `| jq` works
    assert done.stdout.count("\n") == 1
    _asked(wire, mode, agents.server.requests[0].json)


def test_an_invalid_text_answer_goes_back_with_its_errors_then_a_valid_one_ends(
    agents: Agents,
) -> None:
    agents.script(
        text_reply("openai", 'Here it is: {"verdict": "maybe", "score": 11}'),
        text_reply("openai", "```json\n" + json.dumps(GOOD) + "\n```"),
    )
    done = agents.run("retrying", "review the plan")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == GOOD
    retry = agents.server.requests[1].json["messages"][-1]
    assert retry["role"] == "user"
    assert "- verdict: must be one of ['approve', 'reject']" in retry["content"]
    assert "does not validate" in retry["content"]


def test_an_invalid_tool_answer_goes_back_as_the_tool_result(agents: Agents) -> None:
    agents.script(
        call_reply("anthropic", "final_result", {"verdict": "maybe", "score": 3}),
        call_reply("anthropic", "final_result", GOOD, "call_2"),
    )
    done = agents.run("anthropic_tool", "review the plan")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == GOOD
    results = agents.server.requests[1].json["messages"][-1]["content"]
    assert results[0]["type"] == "tool_result" and results[0]["is_error"] is True
    assert "verdict" in json.dumps(results[0]["content"])


def test_an_answer_that_never_validates_ends_the_run_with_output_invalid(
    agents: Agents,
) -> None:
    bad = text_reply("openai", '{"verdict": "maybe"}')
    agents.script(bad, bad, bad)
    failed = agents.run("retrying", "review the plan")
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert "output_invalid" in failed.stderr and "verdict" in failed.stderr
    assert "score: required property is missing" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert len(agents.server.requests) == 2  # the answer, and one retry


def test_a_python_type_validates_with_pydantic_and_json_ends_with_the_output(
    agents: Agents,
) -> None:
    agents.script(
        call_reply("anthropic", "final_result", {"verdict": "maybe", "score": 4}),
        call_reply("anthropic", "final_result", GOOD, "call_2"),
    )
    done = agents.run("typed", "--json", "review the plan")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "agent_end" and events[-1]["output"] == GOOD
    assert events[-1]["reason"] == "final_result"
    first = agents.server.requests[0].json
    assert first["tools"][0]["input_schema"]["title"] == "Verdict"  # pydantic's schema
    sent_back = json.dumps(agents.server.requests[1].json["messages"][-1])
    assert "verdict: Value error, say approve or reject" in sent_back  # pydantic's own check
    assert isinstance(done.stdout, str)


def test_a_paused_typed_run_resumes_typed_in_a_new_process(agents: Agents) -> None:
    agents.script(call_reply("openai", "ask_user", {"question": "which plan?"}, "call_ask"))
    paused = agents.run("asking", "review the plan")
    assert paused.returncode == 3, paused.stderr
    assert paused.stdout == ""
    session = re.search(r"--session (\S+)", paused.stderr)
    assert session is not None, paused.stderr
    body = agents.server.requests[0].json
    assert body["tool_choice"] == "required"  # other tools left: any tool, not text
    assert [t["function"]["name"] for t in body["tools"]] == ["ask_user", "final_result"]
    agents.script(call_reply("openai", "final_result", GOOD, "call_2"))
    resumed = agents.run(
        "asking", "--session", session.group(1), "--resume-with", '{"call_ask": "plan B"}'
    )
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == GOOD
    assert agents.server.requests[0].json["tool_choice"] == "required"


def test_an_agent_without_output_does_not_import_pydantic(agents: Agents) -> None:
    probe = (
        "import sys\n"
        "from harnessc.runtime.agent import loop\n"
        "from harnessc.runtime.cli import run_cli\n"
        "print('pydantic' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": _pythonpath()},
        timeout=60,
    )
    assert result.stdout.strip() == "False", result.stderr


def test_permissions_asking_by_default_let_the_answer_through(agents: Agents) -> None:
    agents.script(call_reply("openai", "final_result", GOOD))
    done = agents.run("gated", "review the plan")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == GOOD


def test_a_refused_final_result_is_no_answer(agents: Agents) -> None:
    agents.script(call_reply("openai", "final_result", GOOD))
    refused = agents.run("refusing", "review the plan")
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert "output_invalid" in refused.stderr and "final_result call was refused" in refused.stderr


def test_the_retry_count_survives_a_pause_in_another_process(agents: Agents) -> None:
    bad = text_reply("openai", '{"verdict": "maybe", "score": 1}')
    agents.script(bad, call_reply("openai", "ask_user", {"question": "sure?"}, "call_ask"))
    paused = agents.run("asking_once", "review the plan")
    assert paused.returncode == 3, paused.stderr
    session = re.search(r"--session (\S+)", paused.stderr)
    assert session is not None, paused.stderr
    agents.script(bad, text_reply("openai", json.dumps(GOOD)))
    resumed = agents.run(
        "asking_once", "--session", session.group(1), "--resume-with", '{"call_ask": "yes"}'
    )
    assert resumed.returncode == 1, resumed.stderr  # the one retry was spent before the pause
    assert "output_invalid" in resumed.stderr
    assert len(agents.server.requests) == 1

"""Item 10 (environment): bash and command hooks never see API keys or credentials.

A generated agent whose model runs ``printenv`` through bash, against the local
protocol server: the keys are nowhere in stdout, stderr, --json, the session file,
the hook's environment or the next request body.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harnessc.compiler import compile as compile_specs
from harnessc.runtime.support.secrets import (
    is_credential_name,
    register_secret_names,
    scrubbed_environ,
)
from harnessc.spec import parse_spec
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events
from harnessc.testing.streams import openai_tool_call_events

KEY = "sk-LEAKCHECK-0a1b2c3d4e5f60718293a4b5"
OTHER = "cred-LEAKCHECK-99887766554433221100"
MARK = "LEAKCHECK"


def test_scrub_removes_patterns_registered_names_and_copies() -> None:
    register_secret_names(["ZZ_TEST_REGISTERED"])
    base = {
        "PATH": "/usr/bin",
        "HOME": "/home/x",
        "PWD": "/work",
        "OPENAI_API_KEY": "sk-1234567890",
        "GITHUB_TOKEN": "ghp_abcdefgh",
        "AWS_REGION": "eu-west-1",
        "PGPASSWORD": "hunter2hunter2",
        "MY_DB_PASSWORD_FILE": "/run/pw",
        "ZZ_TEST_REGISTERED": "value-of-registered",
        "ZZ_EXPLICIT": "explicit-value-123",
        "INNOCENT_COPY": "sk-1234567890",
        "LANG": "C.UTF-8",
    }
    out = scrubbed_environ(base, secret_names=["ZZ_EXPLICIT"])
    assert out == {"PATH": "/usr/bin", "HOME": "/home/x", "PWD": "/work", "LANG": "C.UTF-8"}
    kept = scrubbed_environ(base, passthrough=["GITHUB_TOKEN"])
    assert kept["GITHUB_TOKEN"] == "ghp_abcdefgh"
    via_env = scrubbed_environ({**base, "HARNESSC_ENV_PASSTHROUGH": "AWS_REGION, PGPASSWORD"})
    assert via_env["AWS_REGION"] == "eu-west-1" and via_env["PGPASSWORD"] == "hunter2hunter2"


@pytest.mark.parametrize(
    "name",
    [
        "ANTHROPIC_API_KEY",
        "HF_TOKEN",
        "npm_token",
        "SENTRY_DSN",
        "AZURE_CLIENT_ID",
        "X_SECRET",
        "OTEL_EXPORTER_OTLP_HEADERS",  # the exporter's credential (issue 43, item 10)
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ],
)
def test_credential_names(name: str) -> None:
    assert is_credential_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "PWD", "OLDPWD", "LANG", "TERM", "SHELL"])
def test_ordinary_names(name: str) -> None:
    assert not is_credential_name(name)


SPEC = {
    "version": 1,
    "name": "envcheck",
    "models": {
        "main": {
            "provider": "openai",
            "id": "m",
            "base_url": "${LEAK_BASE_URL}",
            "api_key_env": "OPENAI_API_KEY",
        },
        # a second model whose key variable matches no credential pattern
        "other": {
            "provider": "openai",
            "id": "m2",
            "base_url": "${LEAK_BASE_URL}",
            "api_key_env": "ZZ_LLM_ACCESS",
        },
    },
    "tools": ["bash"],
    "tool_context": {"env_passthrough": ["PASSED_TOKEN"]},
    "session": {"repo": "jsonl", "dir": "${LEAK_SESSIONS}"},
    "hooks": {"after_tool_call": [{"command": "env > hook-env.txt"}]},
}

COMMAND = (
    "printenv OPENAI_API_KEY; printenv ZZ_LLM_ACCESS; printenv KEY_COPY; "
    "printenv PASSED_TOKEN; env | grep -c . ; echo finished"
)


def _run(
    server: ProtocolServer,
    module: Path,
    env: dict[str, str],
    prompt: str,
    calls: list[tuple[str, str, dict[str, Any]]],
) -> tuple[subprocess.CompletedProcess[str], list[Any]]:
    """The generated ``module`` run once on ``prompt`` (in the ``agents`` folder beside its
    ``generated``) against ``server``, which answers with ``calls`` and then "all done";
    the finished process and the model requests it made."""
    server.enqueue(
        ScriptedResponse.sse(openai_tool_call_events(calls)),
        ScriptedResponse.sse(openai_events(["all done"])),
    )
    proc = subprocess.run(
        [sys.executable, str(module), "--json", prompt],
        capture_output=True,
        text=True,
        env=env,
        cwd=module.parents[1] / "agents",
        timeout=60,
    )
    return proc, server.requests


def test_model_printenv_leaks_nothing(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    raw = yaml.safe_dump(SPEC).encode()
    (agents / "envcheck.yaml").write_bytes(raw)
    loaded = parse_spec(raw, agents / "envcheck.yaml", "agents/envcheck.yaml")
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    ((name, source),) = compile_specs(loaded, tmp_path / "generated").items()
    module = tmp_path / "generated" / name
    module.parent.mkdir()
    module.write_text(source)
    import json

    args = json.dumps({"command": COMMAND})
    with ProtocolServer() as server:
        env = dict(os.environ)
        env.update(
            LEAK_BASE_URL=server.url + "/v1",
            LEAK_SESSIONS=str(tmp_path / "sessions"),
            OPENAI_API_KEY=KEY,
            ZZ_LLM_ACCESS=OTHER,
            KEY_COPY=KEY,
            PASSED_TOKEN="passed-through-value",
        )
        proc, requests = _run(
            server, module, env, "check the environment", [("call_1", "bash", args)]
        )
    assert proc.returncode == 0, proc.stderr
    assert len(requests) == 2
    # the bash call did run: its output (with the passed-through variable) reached the model
    second = requests[1].body.decode("utf-8")
    assert "finished" in second and "passed-through-value" in second
    # the provider got the key in its header, never in a body
    assert requests[0].headers.get("authorization") == f"Bearer {KEY}"
    outputs = {"stdout": proc.stdout, "stderr": proc.stderr, "request 2 body": second}
    outputs["request 1 body"] = requests[0].body.decode("utf-8")
    hook_env = agents / "hook-env.txt"
    assert hook_env.exists(), "the command hook did not run"
    sessions = list((tmp_path / "sessions").rglob("*.jsonl"))
    assert sessions
    for path in [hook_env, *sessions]:
        outputs[str(path)] = path.read_text("utf-8", "replace")
    leaks = {
        where: text[text.find(MARK) - 60 : text.find(MARK) + 20]
        for where, text in outputs.items()
        if MARK in text
    }
    assert not leaks, f"secrets leaked: {leaks}"


REDACT_SPEC = {
    "version": 1,
    "name": "dotenv",
    "models": {
        "main": {
            "provider": "openai",
            "id": "m",
            "base_url": "${LEAK_BASE_URL}",
            "api_key_env": "OPENAI_API_KEY",
        }
    },
    "tools": ["bash", "read", "grep"],
    "session": {"repo": "jsonl", "dir": "${LEAK_SESSIONS}"},
}


def test_the_agents_own_key_in_a_workspace_file_is_redacted_from_tool_results(
    tmp_path: Path,
) -> None:
    """Issue 41, item 4: a workspace ``.env`` holding the agent's own key, read by the
    read tool, grep and bash: the value never reaches the session, the next model request
    (what a cassette records) or the --json output; the rest of the file does."""
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / ".env").write_text(f"OPENAI_API_KEY={KEY}\nDEBUG=yes-visible\n")
    raw = yaml.safe_dump(REDACT_SPEC).encode()
    (agents / "dotenv.yaml").write_bytes(raw)
    loaded = parse_spec(raw, agents / "dotenv.yaml", "agents/dotenv.yaml")
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    ((name, source),) = compile_specs(loaded, tmp_path / "generated").items()
    module = tmp_path / "generated" / name
    module.parent.mkdir()
    module.write_text(source)
    import json

    calls = [
        ("c1", "read", json.dumps({"path": ".env"})),
        ("c2", "bash", json.dumps({"command": "cat .env; echo ${#OPENAI_API_KEY}"})),
        ("c3", "grep", json.dumps({"pattern": "OPENAI"})),
    ]
    with ProtocolServer() as server:
        env = dict(os.environ)
        env.update(
            LEAK_BASE_URL=server.url + "/v1",
            LEAK_SESSIONS=str(tmp_path / "sessions"),
            OPENAI_API_KEY=KEY,
        )
        proc, requests = _run(server, module, env, "read the settings", calls)
    assert proc.returncode == 0, proc.stderr
    second = requests[1].body.decode("utf-8")
    assert second.count("yes-visible") >= 2  # read and bash did read the file
    assert second.count("[redacted OPENAI_API_KEY]") >= 3  # read, bash and grep
    outputs = {"stdout": proc.stdout, "stderr": proc.stderr, "request 2 body": second}
    for path in (tmp_path / "sessions").rglob("*.jsonl"):
        outputs[str(path)] = path.read_text("utf-8", "replace")
    leaks = [where for where, text in outputs.items() if MARK in text]
    assert not leaks, f"the agent's key reached {leaks}"

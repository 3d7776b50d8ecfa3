"""Secrets: API keys (and secret headers) given by environment variable never appear in
generated code, session files, event logs, --json output, hook input, error messages or
exception texts, on success and on every error path (401, retries, broken streams)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harnessc.compiler import compile as compile_specs
from harnessc.runtime import (
    AgentHarness,
    AgentHarnessOptions,
    AgentHarnessStreamOptions,
    EventLog,
    RetryOptions,
)
from harnessc.runtime.extensions import command_hook
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.spec import parse_spec
from harnessc.testing import (
    ProtocolServer,
    RecordedRequest,
    ScriptedResponse,
    openai_events,
    sse_data,
)

from ._kit import KEY_ENV, SENTINEL, openai_model

GATEWAY_ENV = "HARNESSC_RELIABILITY_GATEWAY"
GATEWAY_SECRET = "gw-SENTINEL-0d9e8f7a6b5c4d3e"
MARK = "SENTINEL"  # both secrets contain it; no other text does


def echo_secrets(status: int) -> Any:
    """A server that quotes the credentials it received in its error (some gateways do)."""

    def handler(request: RecordedRequest) -> ScriptedResponse:
        quoted = (
            f"auth={request.headers.get('authorization')} gw={request.headers.get('x-gateway-key')}"
        )
        return ScriptedResponse.error(status, f"Incorrect API key provided: {quoted}")

    return handler


def stream_error_echo(request: RecordedRequest) -> ScriptedResponse:
    text = f"stream failed for {request.headers.get('authorization')}"
    events = openai_events(["partial"], done=False)[:2] + [sse_data({"error": {"message": text}})]
    return ScriptedResponse.sse(events)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SCENARIOS = [
    "ok",
    "401",
    "403",
    "429-then-ok",
    "500-exhausted",
    "stream-error",
    "refused",
    "key-with-newline",
]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_no_secret_in_any_output(
    scenario: str,
    fresh_server: ProtocolServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: Any,
) -> None:
    monkeypatch.setenv(GATEWAY_ENV, GATEWAY_SECRET)
    base_url = fresh_server.url + "/v1"
    if scenario == "ok":
        fresh_server.enqueue(ScriptedResponse.sse(openai_events(["fine"])))
    elif scenario in ("401", "403"):
        fresh_server.set_handler(echo_secrets(int(scenario)))
    elif scenario == "429-then-ok":
        handler = echo_secrets(429)
        fresh_server.enqueue(
            handler(
                RecordedRequest(
                    "POST",
                    "/",
                    {"authorization": f"Bearer {SENTINEL}", "x-gateway-key": GATEWAY_SECRET},
                    b"",
                )
            )
        )
        fresh_server.enqueue(ScriptedResponse.sse(openai_events(["fine"])))
    elif scenario == "500-exhausted":
        fresh_server.set_handler(echo_secrets(500))
    elif scenario == "stream-error":
        fresh_server.set_handler(stream_error_echo)
    elif scenario == "refused":
        base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    elif scenario == "key-with-newline":
        monkeypatch.setenv(KEY_ENV, SENTINEL + "\r\n")
        fresh_server.enqueue(ScriptedResponse.sse(openai_events(["fine"])))

    hook_dump = tmp_path / "hook-stdin.jsonl"
    session = JsonlSessionRepo(tmp_path / "sessions").create(cwd=str(tmp_path))
    model = openai_model(base_url, headers={"X-Gateway-Key": os.environ[GATEWAY_ENV]})
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models={"main": model},
            stream_options=AgentHarnessStreamOptions(
                max_retries=2, max_retry_delay_ms=5, timeout_ms=2000
            ),
            retry=RetryOptions(base_delay_ms=1, jitter=0.0),
            hooks=[
                command_hook(moment, f"cat >> {hook_dump}; echo >> {hook_dump}", timeout_s=10)
                for moment in (
                    "before_provider_request",
                    "before_provider_payload",
                    "after_provider_response",
                    "agent_end",
                )
            ],
        )
    )
    log = EventLog(tmp_path / "events.jsonl")
    harness.subscribe(log)
    texts: list[str] = []
    try:
        result = asyncio.run(harness.prompt("hello"))
        texts += [result.reason, result.text, json.dumps(result.to_dict()), repr(result)]
    except Exception as exc:  # an exception is an output too
        texts += [str(exc), repr(exc)]
    harness.session.close()
    texts += [json.dumps(e.to_dict(), default=repr) for e in log]
    texts += [repr(e) for e in log]
    texts.append((tmp_path / "events.jsonl").read_text())
    texts.append(hook_dump.read_text() if hook_dump.exists() else "")
    for path in (tmp_path / "sessions").rglob("*"):
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    captured = capfd.readouterr()
    texts += [captured.out, captured.err]
    leaks = [
        text[max(0, text.find(MARK) - 80) : text.find(MARK) + 40] for text in texts if MARK in text
    ]
    assert not leaks, f"{scenario}: secret in outputs: {leaks[:3]}"
    if scenario != "ok" and scenario != "429-then-ok" and scenario != "key-with-newline":
        assert result.status == "error" and result.reason
    if scenario in ("401", "403", "500-exhausted"):
        assert "[redacted]" in result.reason  # the message is kept, only the secret is cut


AGENT_SPEC = {
    "version": 1,
    "name": "secretive",
    "models": {
        "main": {
            "provider": "openai",
            "id": "m",
            "base_url": "${REL_BASE_URL}",
            "api_key_env": "REL_API_KEY",
            "headers": {
                "X-Gateway-Key": "${REL_GATEWAY_KEY}",
                "Authorization": "Bearer ${REL_API_KEY}",
            },
        }
    },
    "tools": ["read"],
    "session": {"repo": "jsonl", "dir": "${REL_SESSIONS}"},
    "stream": {
        "max_retries": 2,
        "max_retry_delay_ms": 10,
        "headers": {"X-Stream-Key": "${REL_GATEWAY_KEY}"},
    },
    "hooks": {
        "before_provider_request": [{"command": "cat >> hook-stdin.txt; echo >> hook-stdin.txt"}]
    },
}


def test_generated_agent_cli_never_prints_secrets(
    fresh_server: ProtocolServer, tmp_path: Path
) -> None:
    env = dict(os.environ)
    env.update(
        REL_BASE_URL=fresh_server.url + "/v1",
        REL_API_KEY=SENTINEL,
        REL_GATEWAY_KEY=GATEWAY_SECRET,
        REL_SESSIONS=str(tmp_path / "sessions"),
    )
    agents = tmp_path / "agents"
    agents.mkdir()
    raw = yaml.safe_dump(AGENT_SPEC).encode()
    (agents / "secretive.yaml").write_bytes(raw)
    # build with the secrets in the environment: they must not be baked into the code
    old = {k: os.environ.get(k) for k in ("REL_API_KEY", "REL_GATEWAY_KEY")}
    os.environ.update(REL_API_KEY=SENTINEL, REL_GATEWAY_KEY=GATEWAY_SECRET)
    try:
        loaded = parse_spec(raw, agents / "secretive.yaml", "agents/secretive.yaml")
        assert loaded.ok, [d.format() for d in loaded.diagnostics]
        ((name, source),) = compile_specs(loaded, tmp_path / "generated").items()
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert MARK not in source
    module = tmp_path / "generated" / name
    module.parent.mkdir()
    module.write_text(source)

    outputs: list[str] = [source]
    runs = {
        "ok": [ScriptedResponse.sse(openai_events(["fine"]))],
        "401": echo_secrets(401),
        "429-then-ok": [
            echo_secrets(429)(_fake_request()),
            ScriptedResponse.sse(openai_events(["ok"])),
        ],
        "500-exhausted": echo_secrets(500),
        "stream-error": stream_error_echo,
    }
    for label, script in runs.items():
        fresh_server.reset()
        if isinstance(script, list):
            fresh_server.enqueue(*script)
        else:
            fresh_server.set_handler(script)
        for flags in (["--json"], []):
            proc = subprocess.run(
                [sys.executable, str(module), *flags, "hello there"],
                capture_output=True,
                text=True,
                env=env,
                cwd=agents,
                timeout=60,
            )
            outputs += [proc.stdout, proc.stderr]
            assert "Traceback" not in proc.stderr, proc.stderr
            if label in ("ok", "429-then-ok"):
                assert proc.returncode == 0, (label, proc.stderr)
                if label == "429-then-ok":
                    fresh_server.enqueue(
                        echo_secrets(429)(_fake_request()),
                        ScriptedResponse.sse(openai_events(["ok"])),
                    )
                else:
                    fresh_server.enqueue(ScriptedResponse.sse(openai_events(["fine"])))
            else:
                assert proc.returncode != 0 and proc.stderr.strip(), (
                    label,
                    proc.stdout,
                    proc.stderr,
                )
        # the server did receive the credentials: they were sent, just never shown
        assert any(
            r.headers.get("authorization") == f"Bearer {SENTINEL}" for r in fresh_server.requests
        )
    listing = subprocess.run(
        [sys.executable, str(module), "--sessions", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=agents,
        timeout=60,
    )
    outputs += [listing.stdout, listing.stderr]
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix != ".yaml":
            outputs.append(path.read_bytes().decode("utf-8", "replace"))
    leaks = [
        text[max(0, text.find(MARK) - 80) : text.find(MARK) + 40]
        for text in outputs
        if MARK in text
    ]
    assert not leaks, f"secret in outputs: {leaks[:3]}"
    assert (agents / "hook-stdin.txt").exists()


def _fake_request() -> RecordedRequest:
    return RecordedRequest(
        "POST",
        "/v1/chat/completions",
        {"authorization": f"Bearer {SENTINEL}", "x-gateway-key": GATEWAY_SECRET},
        b"",
    )


def test_redact_helpers() -> None:
    from harnessc.runtime.providers.errors import redact, redact_headers

    headers = {"Authorization": f"Bearer {SENTINEL}", "X-Api-Key": SENTINEL, "Accept": "x"}
    assert MARK not in json.dumps(redact_headers(headers))
    assert redact(f"key {SENTINEL} echoed", [SENTINEL]) == "key [redacted] echoed"

"""A key or header value HTTP cannot carry is refused before any request, naming the
variable or header and never the value; every rendering of a secret is redacted."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from harnessc.compiler import compile as compile_specs
from harnessc.runtime.providers.errors import redact, secret_values, url_secrets
from harnessc.spec import parse_spec
from harnessc.testing import ProtocolServer

FIRST = "sk-FIRSTLINE-5e1d0c9b8a7f"
SECOND = "SECONDLINE-4a3b2c1d0e9f"
GATEWAY = "gw-GATEWAYPART-0a1b2c3d4e"

SPEC = {
    "version": 1,
    "name": "keyed",
    "models": {
        "main": {
            "provider": "openai",
            "id": "m",
            "base_url": "${NET_BASE_URL}",
            "api_key_env": "NET_API_KEY",
            "headers": {"X-Gateway-Key": "${NET_GATEWAY_KEY}"},
        }
    },
    "tools": [],
    "session": {"repo": "jsonl", "dir": "${NET_SESSIONS}"},
    "stream": {"max_retries": 0},
}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("keyed")
    raw = yaml.safe_dump(SPEC).encode()
    (root / "keyed.yaml").write_bytes(raw)
    loaded = parse_spec(raw, root / "keyed.yaml", "keyed.yaml")
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    ((name, source),) = compile_specs(loaded, root / "generated").items()
    module = root / "generated" / name
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(source)
    return module


def _run(agent: Path, tmp_path: Path, server: ProtocolServer, key: str, gateway: str) -> str:
    env = dict(os.environ)
    env.update(
        NET_BASE_URL=server.url + "/v1",
        NET_API_KEY=key,
        NET_GATEWAY_KEY=gateway,
        NET_SESSIONS=str(tmp_path / "sessions"),
    )
    texts: list[str] = []
    for flags in (["--json"], []):
        proc = subprocess.run(
            [sys.executable, str(agent), *flags, "hello"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
        texts += [proc.stdout, proc.stderr]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            texts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


def _leaks(text: str, *parts: str) -> list[str]:
    shown = [part[:6] for part in parts] + [part[-6:] for part in parts]
    return [piece for piece in shown if piece in text]


@pytest.mark.parametrize("between", ["\n", "\r\n", "\x1b", "\x7f"])
def test_a_key_with_a_control_character_is_refused_naming_its_variable_only(
    between: str, agent: Path, tmp_path: Path, server: ProtocolServer
) -> None:
    output = _run(agent, tmp_path, server, FIRST + between + SECOND, "gw-fine-value")
    assert not _leaks(output, FIRST, SECOND), output
    assert "NET_API_KEY" in output and "no request was sent" in output
    assert server.requests == []


def test_a_header_value_with_a_line_break_is_refused_naming_the_header_only(
    agent: Path, tmp_path: Path, server: ProtocolServer
) -> None:
    output = _run(agent, tmp_path, server, FIRST, GATEWAY + "\n" + SECOND)
    assert not _leaks(output, FIRST, GATEWAY, SECOND), output
    assert "'x-gateway-key' holds a line break" in output
    assert server.requests == []


def test_a_key_outside_ascii_is_refused_too(
    agent: Path, tmp_path: Path, server: ProtocolServer
) -> None:
    output = _run(agent, tmp_path, server, FIRST + "é" + SECOND, "gw-fine-value")
    assert not _leaks(output, FIRST, SECOND), output
    assert "NET_API_KEY" in output and "outside ASCII" in output
    assert server.requests == []


def test_every_rendering_of_a_secret_is_redacted() -> None:
    key = FIRST + "\n" + SECOND
    secrets = secret_values(key, {"authorization": f"Bearer {key}"})
    for shown in (
        repr(f"Bearer {key}"),
        repr(f"Bearer {key}".encode()),
        json.dumps({"value": key}),
        quote(key, safe=""),
        base64.b64encode(key.encode()).decode(),
        f"first line only: {FIRST}",
    ):
        assert not _leaks(redact(shown, secrets), FIRST, SECOND), shown
    basic = base64.b64encode(b"alice:" + GATEWAY.encode()).decode()
    secrets = secret_values(None, {"proxy-authorization": f"Basic {basic}"})
    for shown in (basic, f"alice:{GATEWAY}", quote(GATEWAY, safe="")):
        assert GATEWAY[3:15] not in redact(shown, secrets) and basic not in redact(shown, secrets)
    password = "p@ss word/" + GATEWAY
    secrets = url_secrets(f"http://alice:{quote(password, safe='')}@proxy.test:3128")
    encoded = base64.b64encode(f"alice:{password}".encode()).decode()
    for shown in (encoded, repr(password), password):
        assert GATEWAY not in redact(shown, secrets) and encoded not in redact(shown, secrets)

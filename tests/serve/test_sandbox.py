"""A served agent's bash runs in the spec's sandbox, through the OpenAI-compatible door
with the real ``openai`` client: ``.env`` stays unopenable and nothing leaves but to
the allowed host; the operator's ``--sandbox off`` on the served command line is the
one way to lift it."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harnessc.testing import ProtocolServer
from tests.sandboxing import require_sandbox

from .servekit import compile_agent

openai = pytest.importorskip("openai")

SECRET = "dotenv-SERVED-SECRET-4242"

SPEC = """\
version: 1
name: helper
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
tools: [bash]
permissions:
  allow: ["Bash(*)"]
  deny: ["Read(./.env)"]
sandbox: on
"""


@pytest.fixture
def outside() -> Iterator[list[str]]:
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"OUTSIDE-LEAK")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    hits.append(f"port {httpd.server_address[1]}")
    try:
        yield hits
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_served_agents_bash_runs_in_the_sandbox(
    tmp_path: Path, model_server: ProtocolServer, outside: list[str]
) -> None:
    require_sandbox()
    port = int(outside.pop(0).split()[1])
    kit = compile_agent(tmp_path, model_server.url, SPEC)
    (kit.workdir / ".env").write_text(f"TOKEN={SECRET}\n")
    command = f"cat .env; curl -s --max-time 5 --noproxy '*' http://127.0.0.1:{port}/; echo end"
    prompt = "call bash " + json.dumps({"command": command})
    try:
        for args, leaks in (((), False), (("--sandbox", "off"), True)):
            served = kit.serve(*args)
            client = openai.OpenAI(base_url=f"{served.url}/v1", api_key=served.token)
            reply = client.chat.completions.create(
                model="helper", messages=[{"role": "user", "content": prompt}]
            )
            text = reply.choices[0].message.content or ""
            assert "end" in text, text
            if leaks:  # the operator's explicit choice
                assert SECRET in text and "OUTSIDE-LEAK" in text and outside
            else:
                assert "Permission denied" in text and SECRET not in text, text
                assert "OUTSIDE-LEAK" not in text and outside == []
            served.stop()
    finally:
        kit.stop()

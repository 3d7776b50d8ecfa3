"""What a web page can make a served agent do: raw HTTP requests shaped as a browser
sends them. A page on another origin may POST ``text/plain`` without asking (no CORS
preflight), and with DNS rebinding its requests carry its own name in ``Host``. Without
a token the server refuses both; with or without one, bodies must be JSON."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from harnessc.testing import ProtocolServer

from .servekit import AgentKit, Served

RUN_BASH = json.dumps({"prompt": 'call bash {"command": "echo forged"}'})


def raw(
    served: Served,
    method: str,
    path: str,
    headers: dict[str, str],
    body: str = "",
    version: str = "1.1",
) -> tuple[int, dict[str, Any]]:
    """Send exactly these headers (no Host unless given); the status and the JSON body."""
    address = urlsplit(served.url)
    data = body.encode()
    lines = [f"{method} {path} HTTP/{version}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if data or method == "POST":
        lines.append(f"Content-Length: {len(data)}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode() + data
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        payload = _unchunk(payload)
    return status, json.loads(payload) if payload.strip() else {}


def _unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size, _, rest = data.partition(b"\r\n")
        length = int(size, 16)
        if length == 0:
            break
        out += rest[:length]
        data = rest[length + 2 :]
    return out


def _host(served: Served, name: str = "127.0.0.1") -> str:
    return f"{name}:{urlsplit(served.url).port}"


@pytest.fixture(scope="module")
def open_server(kit: AgentKit) -> Iterator[Served]:
    served = kit.serve(token=None)
    yield served
    served.stop()


def _model_calls(model_server: ProtocolServer) -> int:
    return len(model_server.requests)


def test_a_cross_origin_text_plain_post_starts_nothing(
    open_server: Served, model_server: ProtocolServer
) -> None:
    before = _model_calls(model_server)
    # what fetch("http://127.0.0.1:PORT/v1/runs", {method: "POST", mode: "no-cors",
    # body}) sends from a page on another site: no preflight, text/plain
    status, body = raw(
        open_server,
        "POST",
        "/v1/runs",
        {
            "Host": _host(open_server),
            "Origin": "http://attacker.example",
            "Content-Type": "text/plain;charset=UTF-8",
        },
        RUN_BASH,
    )
    assert status == 403, body
    assert "http://attacker.example" in body["error"]["message"]
    # the same as a form post, and from a sandboxed frame ("null")
    for origin, kind in (
        ("https://attacker.example", "application/x-www-form-urlencoded"),
        ("null", "text/plain"),
        (f"http://127.0.0.1:{urlsplit(open_server.url).port + 1}", "text/plain"),
    ):
        status, body = raw(
            open_server,
            "POST",
            "/v1/runs",
            {"Host": _host(open_server), "Origin": origin, "Content-Type": kind},
            RUN_BASH,
        )
        assert status == 403, (origin, body)
    # an A2A and an OpenAI request from that page: refused the same way
    for path in ("/a2a", "/v1/chat/completions", "/agui"):
        status, _ = raw(
            open_server,
            "POST",
            path,
            {
                "Host": _host(open_server),
                "Origin": "http://attacker.example",
                "Content-Type": "text/plain",
            },
            "{}",
        )
        assert status == 403, path
    assert _model_calls(model_server) == before  # no run started


def test_a_text_plain_body_without_an_origin_gets_415(open_server: Served) -> None:
    status, body = raw(
        open_server,
        "POST",
        "/v1/runs",
        {"Host": _host(open_server), "Content-Type": "text/plain"},
        RUN_BASH,
    )
    assert status == 415
    assert body["error"]["type"] == "unsupported_media_type"
    assert (
        "application/json" in body["error"]["message"] and "text/plain" in body["error"]["message"]
    )
    status, body = raw(open_server, "POST", "/v1/runs", {"Host": _host(open_server)}, RUN_BASH)
    assert status == 415, body  # a body without a Content-Type


def test_a_rebound_host_is_refused(open_server: Served) -> None:
    # DNS rebinding: the page's own name now resolves to 127.0.0.1; its requests are
    # same-origin for the browser, so it could read every answer
    rebound = {"Host": f"attacker.example:{urlsplit(open_server.url).port}"}
    for method, path in (
        ("GET", "/v1/sessions"),
        ("GET", "/openapi.json"),
        ("GET", "/.well-known/agent-card.json"),
        ("GET", "/"),
    ):
        status, body = raw(open_server, method, path, rebound)
        assert status == 421, (path, body)
        assert "attacker.example" in body["error"]["message"]
    same_origin = {
        **rebound,
        "Origin": f"http://attacker.example:{urlsplit(open_server.url).port}",
        "Content-Type": "application/json",
    }
    status, _ = raw(open_server, "POST", "/v1/runs/r-1/resume", same_origin, '{"approvals": {}}')
    assert status == 421
    status, _ = raw(open_server, "POST", "/v1/runs", same_origin, RUN_BASH)
    assert status == 421
    status, body = raw(open_server, "GET", "/healthz", {}, version="1.0")
    assert status == 400 and "no Host" in body["error"]["message"]  # HTTP/1.0 needs none


def test_the_server_s_own_names_and_origin_are_served(open_server: Served) -> None:
    port = urlsplit(open_server.url).port
    for name in ("127.0.0.1", "localhost"):
        status, body = raw(
            open_server,
            "POST",
            "/v1/runs",
            {
                "Host": _host(open_server, name),
                "Origin": f"http://{name}:{port}",
                "Content-Type": "application/json; charset=utf-8",
            },
            json.dumps({"prompt": f"hello from {name}"}),
        )
        assert status == 201, body
    status, _ = raw(open_server, "GET", "/v1/sessions", {"Host": _host(open_server, "LOCALHOST")})
    assert status == 200
    # clients that are not browsers send no Origin: served as before
    with httpx.Client(base_url=open_server.url, timeout=30) as client:
        started = client.post("/v1/runs", json={"prompt": "plain client"})
        assert started.status_code == 201
        assert client.post(f"/v1/runs/{started.json()['run_id']}/abort").status_code in (200, 409)


def test_with_a_token_bodies_must_be_json_too(server: Served) -> None:
    headers = {"Host": _host(server), "Authorization": f"Bearer {server.token}"}
    status, body = raw(
        server, "POST", "/v1/runs", {**headers, "Content-Type": "text/plain"}, RUN_BASH
    )
    assert status == 415, body
    assert "application/json" in body["error"]["message"]
    # without the token: 401 first, whatever the body
    status, _ = raw(
        server, "POST", "/v1/runs", {"Host": _host(server), "Content-Type": "text/plain"}
    )
    assert status == 401
    # the token is the guard: any Host and Origin (a proxy's name, a web front end)
    status, body = raw(
        server,
        "POST",
        "/v1/runs",
        {
            **headers,
            "Host": "agent.example.com",
            "Origin": "https://app.example.com",
            "Content-Type": "application/json",
        },
        json.dumps({"prompt": "through a proxy"}),
    )
    assert status == 201, body

"""Shared helpers of the reliability suite: agents wired to a local protocol server,
session checks, and a sentinel API key that must never leak."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harnessc.runtime import (
    AgentHarness,
    AgentHarnessOptions,
    AgentHarnessStreamOptions,
    EventLog,
    Model,
    RetryOptions,
)
from harnessc.runtime.tools.base import Tool, ToolResult, text_result

SENTINEL = "sk-SENTINEL-7f3a9c1e5b2d4086a1c3e5f7"
KEY_ENV = "HARNESSC_RELIABILITY_KEY"

ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


async def _add(
    call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any
) -> ToolResult:
    return text_result(str(params["a"] + params["b"]))


def add_tool() -> Tool:
    return Tool("add", "Add two integers.", ADD_SCHEMA, _add)


def openai_model(base_url: str, **fields: Any) -> Model:
    values: dict[str, Any] = {
        "id": "rel-model",
        "api": "openai-completions",
        "provider": "local",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
    }
    values.update(fields)
    return Model(**values)


def make_agent(
    base_url: str,
    sessions: Path,
    *,
    tools: Iterable[Any] = (),
    timeout_ms: int | None = 2000,
    max_retries: int = 2,
    max_retry_delay_ms: int | None = 200,
    event_log: Path | None = None,
    **options: Any,
) -> tuple[AgentHarness, EventLog]:
    """An agent on the OpenAI wire API of ``base_url`` with a JSONL session under ``sessions``."""
    from harnessc.runtime.session import JsonlSessionRepo

    session = JsonlSessionRepo(sessions).create(cwd=str(sessions), metadata={"agent": "rel"})
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models={"main": openai_model(base_url)},
            tools=list(tools),
            stream_options=AgentHarnessStreamOptions(
                timeout_ms=timeout_ms,
                max_retries=max_retries,
                max_retry_delay_ms=max_retry_delay_ms,
            ),
            retry=RetryOptions(base_delay_ms=1, jitter=0.0),
            **options,
        )
    )
    log = EventLog(event_log)
    harness.subscribe(log)
    return harness, log


def session_lines(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every line of a session file as JSON; fails on a torn or corrupt line."""
    data = Path(path).read_bytes()
    assert data.endswith(b"\n"), f"{path}: last line is not terminated"
    out = []
    for number, line in enumerate(data.split(b"\n")[:-1], start=1):
        obj = json.loads(line)
        assert isinstance(obj, dict), f"{path}:{number}: not an object"
        out.append(obj)
    assert out and out[0]["type"] == "session", f"{path}: no header"
    return out


def assert_session_valid(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The file parses line by line, opens without diagnostics, and its tree is whole."""
    from harnessc.runtime.session import JsonlSessionRepo

    lines = session_lines(path)
    repo = JsonlSessionRepo(Path(path).parent.parent)
    session = repo.open(str(path), read_only=True)
    try:
        assert session.diagnostics == [], session.diagnostics
        ids = {e.id for e in session.entries()}
        for entry in session.entries():
            assert entry.parent_id is None or entry.parent_id in ids
        session.context()  # builds without raising
    finally:
        session.close()
    return lines


def message_roles(lines: list[dict[str, Any]]) -> list[str]:
    return [line["message"]["role"] for line in lines if line.get("type") == "message"]


class StallingServer:
    """Answers every request with a 200 event-stream head and ``first`` bytes, then
    stalls (keeps the connection open, sends nothing) until stopped."""

    def __init__(self, first: bytes) -> None:
        import socket
        import threading

        self.first = first
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections: list[Any] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections.append(conn)
            conn.settimeout(2.0)
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                while len(body) < length:
                    body += conn.recv(65536)
                chunk = self.first
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n" + b"%x\r\n%s\r\n" % (len(chunk), chunk)
                )
            except OSError:
                continue

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        for conn in self.connections:
            try:
                conn.close()
            except OSError:
                pass


def processes_with(tag: str) -> list[int]:
    """PIDs whose command line contains ``tag`` (read from /proc, no pgrep needed)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                command = fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if tag in command:
            found.append(int(entry))
    return found

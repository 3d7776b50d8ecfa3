"""MCP servers that misbehave: hostile tool names and schemas, silence after
``tools/list_changed``, children left behind, floods on stderr and stdout, huge
images. The hostile server is ``harnessc.testing.mcp_hostile`` (raw JSON-RPC, for
what the SDK's own server refuses to send); the well-behaved one is the SDK's."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import stat
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.core.messages import ToolResultMessage
from harnessc.runtime.core.options import Model
from harnessc.runtime.mcp import McpServerConfig, McpToolset, load_mcp_json
from harnessc.runtime.mcp.images import check_image, image_size
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.session import Session
from harnessc.runtime.support.data_folder import DataFolder, resolve_folder
from harnessc.runtime.tools import builtin_tools
from harnessc.testing import mcp_hostile

from .mcpkit import SERVER, alive, free_port, recorded_pids, wait_gone

HOSTILE = Path(mcp_hostile.__file__).resolve()
VALID = r"^[a-zA-Z0-9_-]{1,64}$"


def hostile(name: str, **env: str) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=[str(HOSTILE)], env=env)


def notes(name: str = "notes", **fields: Any) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=[str(SERVER)], **fields)


@dataclass
class Run:
    harness: AgentHarness
    provider: ScriptedProvider
    toolset: McpToolset
    notices: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def tool_names(self, request: int = 0) -> list[str]:
        return [t.name for t in self.provider.requests[request].context.tools or []]

    def results(self) -> dict[str, str]:
        out = {}
        for message in self.harness.messages:
            if isinstance(message, ToolResultMessage):
                out[message.tool_name] = "".join(getattr(c, "text", "") for c in message.content)
        return out


@pytest.fixture
def run_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``run_with(servers, replies, builtins=False)``: a harness with a scripted model."""
    monkeypatch.chdir(tmp_path)
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    monkeypatch.setenv("MCP_PID_DIR", str(pid_dir))
    monkeypatch.setenv("HOSTILE_PID_DIR", str(pid_dir))
    made: list[Run] = []

    def make(servers: list[McpServerConfig], replies: list[Any], builtins: bool = False) -> Run:
        toolset = McpToolset(servers)
        provider = ScriptedProvider(replies)
        options = AgentHarnessOptions(
            session=Session(),
            models={"m": Model(id="m", api="openai-completions", base_url="http://127.0.0.1:9")},
            model="m",
            extensions=[toolset],
            tools=builtin_tools() if builtins else (),
        )
        options.provider = provider
        harness = AgentHarness(options)
        run = Run(harness, provider, toolset)
        harness.subscribe(lambda e: run.notices.append(e.message) if e.type == "notice" else None)
        made.append(run)
        return run

    yield make
    for run in made:
        run.toolset.close()
    assert wait_gone(recorded_pids(pid_dir)) == []


# -- names ---------------------------------------------------------------------------


def test_an_mcp_tool_never_replaces_a_built_in_and_colliding_prefixes_fail_at_start(
    run_with: Any,
) -> None:
    bash = json.dumps([{"name": "bash", "inputSchema": {"type": "object"}}])
    run = run_with([hostile("h", HOSTILE_TOOLS=bash)], [reply_text("never")], builtins=True)
    run.toolset.servers[0].prefix = ""
    result = run.harness.prompt_sync("go")
    assert result.status == "error", result
    assert "mcp server 'h': tool 'bash' would be named 'bash'" in (result.reason or "")
    assert run.provider.requests == []  # fails closed: no model call
    assert run.harness.tools["bash"].label != "h: bash"  # the built-in is still bash

    first = notes("a", prefix="n_", tools=["search"])
    second = notes("b", prefix="n_", tools=["search"])
    run = run_with([first, second], [reply_text("never")])
    result = run.harness.prompt_sync("go")
    assert result.status == "error"
    reason = result.reason or ""
    assert "mcp server 'b': tool 'search' and mcp server 'a': tool 'search'" in reason
    assert "'n_search'" in reason
    assert run.provider.requests == []


def test_tool_names_providers_refuse_are_mapped_to_valid_stable_unique_names(
    run_with: Any,
) -> None:
    schema = {"type": "object"}
    odd = ["héllo", "with space", "semi;colon", "", "x" * 208, "evil\u202eexe", "ok-name"]
    tools = [{"name": n, "inputSchema": schema} for n in odd]
    tools.append({"name": "ok-name", "inputSchema": schema})  # listed twice
    env = {"HOSTILE_TOOLS": json.dumps(tools)}

    run = run_with([hostile("h", **env)], [reply_text("done")])
    run.harness.prompt_sync("go")
    names = [n for n in run.tool_names() if n.startswith("mcp__h__")]
    assert all(re.fullmatch(VALID, n) for n in names), names
    assert len(names) == len(set(names)) == 3 + len(odd)  # echo, image, change + each once
    assert "mcp__h__ok-name" in names and "mcp__h__echo" in names
    hello = next(n for n in names if n.startswith("mcp__h__hello_"))
    assert any("'héllo' is named" in n and hello in n for n in run.notices)
    assert any("second tool named 'mcp__h__ok-name'" in n for n in run.notices)

    # the same names on the next start, and a call by the mapped name reaches the tool
    again = run_with(
        [hostile("h", **env)],
        [reply_tool_calls([(hello, {})]), reply_text("done")],
    )
    again.harness.prompt_sync("go")
    assert sorted(n for n in again.tool_names() if n.startswith("mcp__h__")) == sorted(names)
    assert again.results()[hello] == "called héllo"


# -- schemas -------------------------------------------------------------------------


def test_one_invalid_tool_is_skipped_by_name_and_the_server_still_starts(run_with: Any) -> None:
    tools = [
        {"name": "listed_as_array", "inputSchema": {"type": "array"}},  # the SDK rejects
        {"name": 42, "inputSchema": {"type": "object"}},
        {"name": "bad_regex", "inputSchema": _with({"type": "string", "pattern": "(open"})},
        {"name": "bad_ref", "inputSchema": _with({"$ref": "#/$defs/missing"})},
        {"name": "far_ref", "inputSchema": _with({"$ref": "https://example.com/s.json"})},
        {"name": "bad_length", "inputSchema": _with({"type": "string", "minLength": "x"})},
        {
            "name": "good_ref",
            "inputSchema": {
                "type": "object",
                "$defs": {"q": {"type": "string", "pattern": "^[a-z]+$"}},
                "properties": {"q": {"$ref": "#/$defs/q"}},
            },
        },
    ]
    run = run_with(
        [hostile("h", HOSTILE_TOOLS=json.dumps(tools))],
        [reply_tool_calls([("mcp__h__good_ref", {"q": "abc"})]), reply_text("done")],
    )
    result = run.harness.prompt_sync("go")
    assert result.status == "done", result  # the required server started
    names = run.tool_names()
    assert "mcp__h__echo" in names and "mcp__h__good_ref" in names
    assert run.results()["mcp__h__good_ref"] == "called good_ref"
    for bad, why in (
        ("listed_as_array", "inputSchema.type"),
        ("42", "name"),
        ("bad_regex", "is not a 'regex'"),
        ("bad_ref", "'#/$defs/missing' does not resolve"),
        ("far_ref", "does not resolve"),
        ("bad_length", "is not of type 'integer'"),
    ):
        assert f"mcp__h__{bad}" not in names
        said = [
            n for n in run.notices if f"tool '{bad}' skipped" in n or f"tool {bad} skipped" in n
        ]
        assert said and why in said[0], (bad, run.notices)


def test_tool_list_pages_that_never_end_fail_the_start_at_once(run_with: Any) -> None:
    server = hostile("h", HOSTILE_ENDLESS_PAGES="1")
    server.timeout_s = 60
    run = run_with([server], [reply_text("never")])
    result = asyncio.run(asyncio.wait_for(run.harness.prompt("go"), 30))
    assert result.status == "error" and "tools/list pages do not end" in (result.reason or "")


def _with(prop: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": prop}}


# -- deadlines -----------------------------------------------------------------------


def test_silence_after_tools_list_changed_keeps_the_last_list_and_goes_on(run_with: Any) -> None:
    server = hostile("h")
    server.timeout_s = 1.0
    run = run_with(
        [server],
        [
            reply_tool_calls([("mcp__h__change", {})]),
            reply_tool_calls([("mcp__h__echo", {"text": "still here"})]),
            reply_text("done"),
        ],
    )
    result = asyncio.run(asyncio.wait_for(run.harness.prompt("go"), 60))
    assert result.status == "done", result
    assert run.results()["mcp__h__echo"] == "still here"
    assert "mcp__h__echo" in run.tool_names(1)  # the last list, kept
    assert any("listing its tools again failed" in n for n in run.notices), run.notices


# -- processes and logs --------------------------------------------------------------


def test_the_children_a_server_started_die_with_it_on_every_path(
    run_with: Any, tmp_path: Path
) -> None:
    child = tmp_path / "child-1"
    run = run_with([hostile("h", HOSTILE_CHILD=str(child))], [reply_text("done")])
    run.harness.prompt_sync("go")
    grandchild = int(child.read_text())
    assert alive(grandchild)
    run.toolset.close()  # stdin closed: the server exits by itself, its child is killed
    assert wait_gone([grandchild]) == []

    # the server dies while the agent runs: what it left in its group goes at once
    child = tmp_path / "child-2"
    run = run_with(
        [hostile("k", HOSTILE_CHILD=str(child))],
        [reply_tool_calls([("mcp__k__echo", {"text": "x"})]), reply_text("done")],
    )
    run.harness.prompt_sync("go")
    grandchild = int(child.read_text())
    [server] = [p for p in recorded_pids(tmp_path / "pids") if alive(p)]
    os.kill(server, signal.SIGKILL)
    assert wait_gone([server, grandchild]) == []


def test_a_server_log_is_private_capped_and_takes_stdout_noise_as_one_line(
    run_with: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HARNESSC_MCP_LOG_MAX_MB", "1")
    env = {"HOSTILE_STDERR_MB": "3", "HOSTILE_BANNER": "Noisy server v1 ready!"}
    run = run_with([hostile("noisy", **env)], [reply_text("done")])
    assert run.harness.prompt_sync("go").status == "done"
    run.toolset.close()
    logs = resolve_folder(DataFolder("logs"), tmp_path)
    log, rotated = logs / "mcp-noisy.log", logs / "mcp-noisy.log.1"
    assert stat.S_IMODE(os.stat(logs).st_mode) == 0o700
    for file in (log, rotated):
        assert stat.S_IMODE(os.stat(file).st_mode) == 0o600
        assert os.path.getsize(file) <= 1024 * 1024
    banner = [line for line in log.read_text().splitlines() if "Noisy server" in line]
    assert len(banner) == 1 and "not JSON-RPC" in banner[0]
    out, err = capfd.readouterr()
    assert "Traceback" not in err and "Noisy server" not in err + out


# -- required servers, every run -----------------------------------------------------


def test_a_required_server_fails_every_run_closed_until_it_is_up(
    run_with: Any, tmp_path: Path
) -> None:
    script = tmp_path / "later_server.py"  # not there yet: the server cannot start
    server = McpServerConfig(name="later", command=sys.executable, args=[str(script)], timeout_s=20)
    run = run_with([server], [reply_text("one"), reply_text("two"), reply_text("three")])
    for _ in range(2):  # the same harness, run after run (a REPL, a service)
        result = run.harness.prompt_sync("go")
        assert result.status == "error" and "'later' failed to start" in (result.reason or "")
        assert run.provider.requests == []
    script.write_text(SERVER.read_text())
    result = run.harness.prompt_sync("go")
    assert result.status == "done", result
    assert "mcp__later__search" in run.tool_names(0)


def test_servers_of_an_mcp_json_file_are_optional(
    run_with: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # getsentry/sentry-mcp's .mcp.json, its servers on loopback ports nothing listens on
    closed = [free_port() for _ in range(3)]
    file = tmp_path / ".mcp.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "sentry": {"type": "http", "url": f"http://127.0.0.1:{closed[0]}/mcp/sentry"},
                    "sentry-dev": {"type": "http", "url": f"http://localhost:{closed[1]}/mcp/s"},
                    "spotlight": {"type": "http", "url": f"http://localhost:{closed[2]}/mcp"},
                }
            }
        )
    )
    servers = load_mcp_json(file)
    assert [s.required for s in servers] == [False, False, False]
    for server in servers:
        server.timeout_s = 5
    run = run_with(servers, [reply_text("reached")])
    result = run.harness.prompt_sync("go")
    assert result.status == "done" and len(run.provider.requests) == 1, result
    assert sum("going on without it" in n for n in run.notices) == 3, run.notices
    assert "Traceback" not in capfd.readouterr().err


# -- images --------------------------------------------------------------------------


def _png(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", width, height) + b"\x08\x06"


def test_image_headers_are_read_with_the_standard_library() -> None:
    assert image_size(_png(3, 4)) == ("image/png", 3, 4)
    assert image_size(b"GIF89a" + struct.pack("<HH", 5, 6) + b"\x00") == ("image/gif", 5, 6)
    jpeg = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 4) + b"JF"
    jpeg += b"\xff\xc0" + struct.pack(">HBHH", 11, 8, 7, 9) + b"\x03"
    assert image_size(jpeg) == ("image/jpeg", 9, 7)
    webp = b"RIFF\x00\x00\x00\x00WEBPVP8X" + b"\x0a\x00\x00\x00" + b"\x00" * 4
    webp += (99).to_bytes(3, "little") + (49).to_bytes(3, "little")
    assert image_size(webp) == ("image/webp", 100, 50)
    assert image_size(b"plain text") is None

    def encoded(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    fine = check_image(encoded(_png(3, 4)), "image/jpeg")
    assert (fine.problem, fine.mime_type) == (None, "image/png")  # the type found wins
    assert "not valid base64" in (check_image("not base64!!", "image/png").problem or "")
    assert "not a PNG, JPEG" in (check_image(encoded(b"hello"), "image/png").problem or "")
    assert "9000x10 pixels" in (check_image(encoded(_png(9000, 10)), "image/png").problem or "")
    assert "over the 5 MiB" in (check_image("A" * (8 << 20), "image/png").problem or "")


def test_a_huge_invalid_image_never_reaches_the_session(run_with: Any) -> None:
    image = {"data": {"repeat": "!", "times": 12 * 1024 * 1024}, "mimeType": "image/png"}
    run = run_with(
        [hostile("h", HOSTILE_IMAGE=json.dumps(image))],
        [reply_tool_calls([("mcp__h__image", {})]), reply_text("done")],
    )
    assert run.harness.prompt_sync("go").status == "done"
    [result] = [m for m in run.harness.messages if isinstance(m, ToolResultMessage)]
    assert [c.type for c in result.content] == ["text"]
    assert "image of the result is not shown" in result.content[0].text
    assert "over the 5 MiB image limit" in result.content[0].text
    stored = sum(len(json.dumps(m.to_dict())) for m in run.harness.messages)
    assert stored < 100_000


def test_a_server_command_that_is_not_found_fails_its_start_with_a_clear_reason(
    run_with: Any,
) -> None:
    missing = McpServerConfig(name="gone", command="harnessc-no-such-mcp-server")
    run = run_with([missing], [reply_text("never")])
    result = run.harness.prompt_sync("go")
    assert result.status == "error"
    assert "'gone' failed to start" in (result.reason or "")
    assert "no such program (not on PATH): 'harnessc-no-such-mcp-server'" in (result.reason or "")


def test_a_relative_command_beside_the_spec_runs_whatever_the_servers_cwd(
    run_with: Any, tmp_path: Path
) -> None:
    """``harnessc check`` finds ``./x`` beside the spec; the run must find the same file."""
    spec_dir = tmp_path / "spec"
    (spec_dir / "data").mkdir(parents=True)
    script = spec_dir / "notes_server.py"
    script.write_text(f"#!{sys.executable}\n" + SERVER.read_text())
    script.chmod(0o755)
    server = McpServerConfig(
        name="beside", command="./notes_server.py", cwd="data", base_dir=spec_dir
    )
    run = run_with([server], [reply_text("done")])
    result = run.harness.prompt_sync("go")
    assert result.status == "done", result
    assert "mcp__beside__search" in run.tool_names(0)

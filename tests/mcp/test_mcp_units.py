"""MCP pieces in one process: lazy imports, the missing extra, .mcp.json files, the
child environment, result mapping, schema checks, and a harness with a real server
(list_changed between turns, prompts as commands, ``from:``)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.cli.output import TextPrinter
from harnessc.runtime.core import catalog
from harnessc.runtime.core.messages import ToolResultMessage
from harnessc.runtime.core.options import Model
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.mcp import McpConfigError, McpServerConfig, McpToolset, load_mcp_json
from harnessc.runtime.mcp import toolset as toolset_module
from harnessc.runtime.mcp.env import child_environ
from harnessc.runtime.mcp.results import schema_problem, to_tool_result
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.session import Session
from harnessc.spec import parse_spec

from .mcpkit import SERVER, recorded_pids, wait_gone

REPO = Path(__file__).resolve().parents[2]
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


LOAD = (
    "import importlib.util\n"
    "from harnessc.runtime.agent import AgentHarness\n"
    "from harnessc.runtime.session import Session\n"
    "spec = importlib.util.spec_from_file_location('agent', 'generated/{name}.py')\n"
    "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
    "harness = AgentHarness(module.build_options(session=Session()))\n"
)


def test_an_agent_without_mcp_never_imports_it() -> None:
    loaded = _modules_after(LOAD.format(name="hello"))
    assert not any(m == "mcp" or m.startswith(("mcp.", "harnessc.runtime.mcp")) for m in loaded)


def test_an_agent_with_mcp_imports_the_sdk_only_when_a_server_starts() -> None:
    loaded = _modules_after(LOAD.format(name="notes"))
    assert "harnessc.runtime.mcp" in loaded  # the wiring
    assert "mcp" not in loaded and "harnessc.runtime.mcp.client" not in loaded
    assert not any(m.startswith(("mcp.", "mcp_types", "anyio", "pydantic")) for m in loaded)


def test_a_missing_extra_is_a_clear_error_at_build_and_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(catalog.ToolSourceEntry, "available", lambda self: False)
    loaded = parse_spec(
        (REPO / "agents" / "notes.yaml").read_bytes(), REPO / "agents" / "notes.yaml"
    )
    messages = [d.message for d in loaded.diagnostics if d.severity == "error"]
    assert any("pip install 'harnessc[mcp]'" in m for m in messages), messages
    monkeypatch.setattr(toolset_module, "sdk_available", lambda: False)
    with pytest.raises(toolset_module.McpUnavailableError, match=r"pip install 'harnessc\[mcp\]'"):
        McpToolset([McpServerConfig(name="notes", command="true")])


def test_mcp_json_files_are_read_as_claude_code_writes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOTES_PORT", "9000")
    file = tmp_path / ".mcp.json"
    file.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "npx", "args": ["-y", "server"], "env": {"A": "1"}},
                    "remote": {
                        "type": "http",
                        "url": "http://127.0.0.1:${NOTES_PORT}/mcp",
                        "headers": {"X-Key": "${MISSING:-none}"},
                    },
                }
            }
        )
    )
    files, remote = load_mcp_json(file)
    assert (files.command, files.args, files.env, files.base_dir) == (
        "npx",
        ["-y", "server"],
        {"A": "1"},
        str(tmp_path),
    )
    assert remote.url == "http://127.0.0.1:9000/mcp" and remote.headers == {"X-Key": "none"}
    assert "X-Key" not in repr(remote) and "none" not in repr(remote)  # no header values in logs
    for text, message in (
        ("{", "not valid JSON"),
        ("[]", "no 'mcpServers'"),
        ('{"mcpServers": {"a": {"command": "x", "comand": 1}}}', "unknown key"),
        ('{"mcpServers": {"a": {"type": "sse", "url": "http://x"}}}', "not supported"),
        ('{"mcpServers": {"a": {"url": "ftp://x"}}}', "not an http"),
        ('{"mcpServers": {"a": {}}}', "exactly one of"),
    ):
        file.write_text(text)
        with pytest.raises(McpConfigError, match=message):
            load_mcp_json(file)


def test_the_child_environment_has_no_credentials() -> None:
    env = child_environ(
        {
            "PATH": "/bin",
            "HOME": "/root",
            "OPENAI_API_KEY": "sk",
            "GITHUB_TOKEN": "t",
            "AWS_SECRET_ACCESS_KEY": "s",
            "DB_PASSWORD": "p",
            "BASH_FUNC_x%%": "() { :; }",
        }
    )
    assert env == {"PATH": "/bin", "HOME": "/root"}


def test_results_map_text_images_structured_content_and_errors() -> None:
    def block(**fields: Any) -> SimpleNamespace:
        return SimpleNamespace(**fields)

    result = to_tool_result(
        SimpleNamespace(
            content=[
                block(type="text", text="hello"),
                block(type="image", data=PNG_1PX, mime_type="image/png"),
                block(type="audio", data="", mime_type="audio/wav"),
                block(type="resource", resource=block(uri="file:///a", text="inside")),
            ],
            structured_content={"n": 1},
            is_error=False,
        ),
        server="s",
        tool="t",
    )
    assert [c.type for c in result.content] == ["text", "image"]
    assert result.content[0].text == "hello\n[audio result (audio/wav) not shown]\ninside"
    assert result.details == {"server": "s", "tool": "t", "structured_content": {"n": 1}}
    only = to_tool_result(
        SimpleNamespace(content=[], structured_content={"n": 2}, is_error=False),
        server="s",
        tool="t",
    )
    assert only.content[0].text == '{"n": 2}'
    failed = to_tool_result(SimpleNamespace(content=[], is_error=True), server="s", tool="t")
    assert failed.is_error and "error" in failed.content[0].text
    huge = to_tool_result(
        SimpleNamespace(content=[block(type="text", text="x\n" * 10_000)], is_error=False),
        server="s",
        tool="t",
    )
    assert "[Output truncated" in huge.content[0].text


def test_schemas_a_model_api_would_refuse_are_found() -> None:
    assert schema_problem({"type": "object", "properties": {"q": {"type": "string"}}}) is None
    assert (
        schema_problem(
            {"type": "object", "properties": {"q": {"anyOf": [{"type": "integer"}, True]}}}
        )
        is None
    )
    assert "not 'object'" in (schema_problem({"type": "array"}) or "")
    assert "not a JSON Schema type" in (
        schema_problem({"type": "object", "properties": {"q": {"type": "text"}}}) or ""
    )
    assert "required" in (schema_problem({"type": "object", "required": "q"}) or "")
    assert "items" in (
        schema_problem({"type": "object", "properties": {"l": {"type": "array", "items": 3}}}) or ""
    )


def test_a_harness_refreshes_changed_tool_lists_between_turns_and_offers_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    monkeypatch.setenv("MCP_PID_DIR", str(pid_dir))
    monkeypatch.setenv("SOME_SECRET_TOKEN", "do-not-leak")
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"notes": {"command": sys.executable, "args": [str(SERVER)]}}})
    )
    toolset = McpToolset(
        [McpServerConfig(name="absent", command=str(tmp_path / "nope"), required=False)],
        from_file=tmp_path / ".mcp.json",
    )
    provider = ScriptedProvider(
        [
            reply_tool_calls(
                [("mcp__notes__grow", {}), ("mcp__notes__env", {"variable": "SOME_SECRET_TOKEN"})]
            ),
            reply_tool_calls([("mcp__notes__extra", {})]),
            reply_tool_calls([("mcp__notes__shrink", {})]),
            reply_text("done"),
        ]
    )
    options = AgentHarnessOptions(
        session=Session(),
        models={"m": Model(id="m", api="openai-completions", base_url="http://127.0.0.1:9")},
        model="m",
        extensions=[toolset],
    )
    options.provider = provider
    harness = AgentHarness(options)
    notices: list[str] = []
    harness.subscribe(lambda e: notices.append(e.message) if e.type == "notice" else None)
    try:
        harness.prompt_sync("go")
        results = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
        texts = {m.tool_name: "".join(c.text for c in m.content) for m in results}
        assert texts["mcp__notes__grow"] == "grown"
        assert texts["mcp__notes__env"] == "<unset>"
        assert texts["mcp__notes__extra"] == "extra!"  # listed again before the second call
        names = [t.name for t in provider.requests[1].context.tools or []]
        assert "mcp__notes__extra" in names and "mcp__notes__extra" not in [
            t.name for t in provider.requests[0].context.tools or []
        ]
        # the server drops it again: removed from the harness before the next model call
        assert texts["mcp__notes__shrink"] == "shrunk"
        last = [t.name for t in provider.requests[3].context.tools or []]
        assert "mcp__notes__extra" not in last and "mcp__notes__search" in last
        assert "mcp__notes__extra" not in harness.tools
        # the loop leaves a call the server's own deadline (30 s by default) first
        assert harness.tools["mcp__notes__search"].timeout_s == 35.0
        assert any("'absent' failed to start" in n and "required: false" in n for n in notices)
        outcome = asyncio.run(harness.commands.dispatch("mcp__notes__summarize", "cats"))
        assert (outcome.kind, outcome.text) == (
            "prompt",
            "Summarize what the notes say about cats.",
        )

        # a server dying in the middle of a call: an error result, not repeated;
        # the next call restarts it
        async def call(name: str) -> Any:
            tool = harness.tools[name]
            return await tool.execute("x", {}, AbortSignal(), lambda _: None, None)

        first = recorded_pids(pid_dir)
        died = asyncio.run(call("mcp__notes__die"))
        assert died.is_error and "exited during the call" in died.content[0].text
        after = asyncio.run(call("mcp__notes__pid"))
        assert not after.is_error and int(after.content[0].text) not in first
    finally:
        toolset.close()
    assert wait_gone(recorded_pids(pid_dir)) == []


def test_the_generated_module_declares_the_servers_and_no_secret(tmp_path: Path) -> None:
    from harnessc.compiler.render import render

    spec = (
        "version: 1\nname: wired\nmodels: {m: {provider: openai, id: x, api_key_env: K}}\n"
        "mcp:\n"
        "  tracker:\n"
        "    url: ${TRACKER_URL:-http://127.0.0.1:8765/mcp}\n"
        '    headers: {Authorization: "Bearer ${TRACKER_TOKEN}"}\n'
        "    required: false\n"
        "  from: .mcp.json\n"
    )
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')
    path = tmp_path / "wired.yaml"
    loaded = parse_spec(spec.encode(), path)
    assert loaded.spec is not None, [str(d) for d in loaded.diagnostics]
    text = render(loaded, tmp_path)
    assert 'url=env("TRACKER_URL", "http://127.0.0.1:8765/mcp")' in text
    assert '"".join(["Bearer ", env("TRACKER_TOKEN")])' in text
    assert 'from_file=SPEC_DIR / ".mcp.json"' in text
    assert "required=False" in text
    assert "activate=" not in text  # every MCP tool is active
    compile(text, "wired.py", "exec")
    limited = spec.replace("mcp:\n", "active_tools: [tracker_x]\nmcp:\n").replace(
        "    required: false\n", "    required: false\n    prefix: tracker_\n"
    )
    loaded = parse_spec(limited.encode(), path)
    assert loaded.spec is not None, [str(d) for d in loaded.diagnostics]
    assert "activate=False" in render(loaded, tmp_path)


def test_json_nested_too_deeply_is_a_located_error_naming_the_file(tmp_path: Path) -> None:
    from harnessc.runtime.extensions.claude_settings import (
        ClaudeSettingsError,
        read_claude_settings,
    )

    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.mcp.json").write_text('{"mcpServers": ' + deep + "}")
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"hooks": ' + deep + "}")
    spec = (
        "version: 1\nname: deep\nmodels: {m: {provider: openai, id: x, api_key_env: K}}\n"
        "hooks:\n  claude_settings: .claude/settings.json\n"
        "mcp:\n  from: deep.mcp.json\n"
    )
    path = tmp_path / "deep.yaml"
    loaded = parse_spec(spec.encode(), path)
    errors = [d for d in loaded.diagnostics if d.severity == "error"]
    by_file = {
        name: [d for d in errors if name in d.message]
        for name in ("deep.mcp.json", "settings.json")
    }
    for name, found in by_file.items():
        assert len(found) == 1 and "nested too deeply" in found[0].message, (name, errors)
        assert found[0].line is not None and found[0].line > 1  # at the key in the spec
    with pytest.raises(McpConfigError, match="deep.mcp.json is not usable JSON"):
        load_mcp_json(tmp_path / "deep.mcp.json")
    with pytest.raises(ClaudeSettingsError, match="settings.json: not usable JSON"):
        read_claude_settings(tmp_path / ".claude" / "settings.json")


SPAWN_FIRST = """
import asyncio, importlib.abc, json, sys, time
from pathlib import Path
from harnessc.runtime.mcp import McpServerConfig, McpToolset
pid_dir, server, logs = (Path(a) for a in sys.argv[1:4])
seen = {}
class Probe(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "harnessc.runtime.mcp.client" and not seen:
            seen["sdk imported"] = "mcp" in sys.modules
            deadline = time.monotonic() + 30  # the child writes its pid first thing
            while not any(pid_dir.iterdir()) and time.monotonic() < deadline:
                time.sleep(0.02)
            seen["server running"] = any(pid_dir.iterdir())
        return None
sys.meta_path.insert(0, Probe())
toolset = McpToolset(
    [McpServerConfig(name="notes", command=sys.executable, args=[str(server)])], log_dir=logs
)
try:
    asyncio.run(toolset.start())
    seen["tools"] = len(toolset._connections["notes"].tools)
finally:
    toolset.close()
print(json.dumps(seen))
"""


def test_stdio_servers_start_before_the_sdk_is_imported(tmp_path: Path) -> None:
    """The SDK's import takes seconds; a server started first boots meanwhile."""
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", SPAWN_FIRST, str(pid_dir), str(SERVER), str(tmp_path / "logs")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "MCP_PID_DIR": str(pid_dir)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["sdk imported"] is False
    assert seen["server running"] is True  # spawned before the client's import began
    assert seen["tools"] > 5
    assert wait_gone(recorded_pids(pid_dir)) == []


def test_a_terminal_shows_which_servers_are_starting_on_its_status_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    pid_dir = tmp_path / "pids"
    pid_dir.mkdir()
    monkeypatch.setenv("MCP_PID_DIR", str(pid_dir))
    screens = []
    for terminal in (True, False):
        toolset = McpToolset(
            [McpServerConfig(name="notes", command=sys.executable, args=[str(SERVER)])]
        )
        options = AgentHarnessOptions(
            session=Session(),
            models={"m": Model(id="m", api="openai-completions", base_url="http://127.0.0.1:9")},
            model="m",
            extensions=[toolset],
        )
        options.provider = ScriptedProvider([reply_text("done")])
        harness = AgentHarness(options)
        out, err = io.StringIO(), io.StringIO()
        printer = TextPrinter(out, err, spinner=terminal)
        harness.subscribe(printer)
        try:
            assert harness.prompt_sync("go").status == "done"
        finally:
            printer.close()
            toolset.close()
        screens.append(err.getvalue())
    on_terminal, piped = screens
    assert "\r\033[K" in on_terminal and "starting MCP servers: notes…" in on_terminal
    assert "[notice] starting" not in on_terminal
    assert "starting MCP servers" not in piped  # no status line, and no line, off a terminal
    assert wait_gone(recorded_pids(pid_dir)) == []

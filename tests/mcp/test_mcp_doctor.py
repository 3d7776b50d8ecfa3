"""``harnessc doctor``'s MCP checks: real servers started, initialized and listed (the
SDK's notes server, the hostile one), each reported on one line, and its skipped tools."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harnessc.doctor_mcp import check_mcp_servers, doctor_mcp
from harnessc.runtime.mcp import McpServerConfig, McpToolset
from harnessc.testing import mcp_hostile
from harnessc.testing.demo import serve

from .mcpkit import SERVER, recorded_pids, wait_gone

HOSTILE = Path(mcp_hostile.__file__).resolve()


@pytest.fixture
def pid_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "pids"
    folder.mkdir()
    monkeypatch.setenv("MCP_PID_DIR", str(folder))
    monkeypatch.setenv("HOSTILE_PID_DIR", str(folder))
    yield folder
    assert wait_gone(recorded_pids(folder)) == []  # every server was stopped again


def lines(checks: list[Any]) -> list[str]:
    return [f"{c.status} {c.text}" for c in checks]


def test_doctor_starts_each_server_and_reports_tools_skips_and_failures(pid_dir: Path) -> None:
    invalid = [{"name": "listed_as_array", "inputSchema": {"type": "array"}}]
    toolset = McpToolset(
        [
            McpServerConfig(
                name="notes", command=sys.executable, args=[str(SERVER)], exclude=["secret"]
            ),
            McpServerConfig(
                name="odd",
                command=sys.executable,
                args=[str(HOSTILE)],
                env={"HOSTILE_TOOLS": json.dumps(invalid)},
            ),
            McpServerConfig(
                name="asleep",
                command=sys.executable,
                args=[str(SERVER)],
                env={"NOTES_HANG": "1", "NOTES_NAME": "asleep"},
                timeout_s=1.5,
                required=False,
            ),
        ]
    )
    said = lines(check_mcp_servers([object(), toolset]))
    notes, broken, odd, odd_skip, asleep = said
    assert re.fullmatch(
        r"ok mcp server 'notes': started, answered initialize and listed its tools in "
        r"[0-9.]+ s \(timeout 30 s\): \d+ tools, 1 skipped, 1 left out by the spec",
        notes,
    ), notes
    assert broken.startswith("warning mcp server 'notes': tool 'broken' skipped: ")
    assert "'text' is not a JSON Schema type" in broken
    assert odd.startswith("ok mcp server 'odd': started") and "1 skipped" in odd
    assert odd_skip.startswith("warning mcp server 'odd': tool 'listed_as_array' skipped: ")
    assert asleep.startswith(
        "warning mcp server 'asleep' did not answer start-up within 1.5 s"
    ) and asleep.endswith("(required: false: the agent runs without it)")
    assert len(recorded_pids(pid_dir)) == 3
    echoed: list[str] = []
    assert doctor_mcp([toolset], echoed.append) == 0  # warnings do not fail the doctor
    assert echoed[0].startswith("ok       mcp server 'notes'")


def test_a_required_server_that_fails_fails_the_doctor(pid_dir: Path) -> None:
    toolset = McpToolset(
        [
            McpServerConfig(
                name="pages",
                command=sys.executable,
                args=[str(HOSTILE)],
                env={"HOSTILE_ENDLESS_PAGES": "1"},
            ),
            McpServerConfig(name="gone", command="harnessc-no-such-mcp-server"),
        ]
    )
    echoed: list[str] = []
    assert doctor_mcp([toolset], echoed.append) == 1
    pages, gone = echoed
    assert pages.startswith("error    mcp server 'pages'") and "pages do not end" in pages
    assert gone.startswith("error    mcp server 'gone' failed to start")
    assert "no such program (not on PATH): 'harnessc-no-such-mcp-server'" in gone
    assert doctor_mcp([], echoed.append) == 0  # an agent without MCP: nothing to check


def test_harnessc_doctor_checks_the_mcp_servers_of_a_spec(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", MCP_PID_DIR=str(tmp_path))

    def harnessc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from harnessc.cli import main; main()", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    assert harnessc("new", "demo").returncode == 0
    spec = tmp_path / "agents" / "demo.yaml"
    plain = spec.read_text()
    demo = serve(port=0)
    try:
        env["HARNESSC_BASE_URL"] = f"{demo.url}/v1"
        spec.write_text(
            plain + f"mcp:\n  notes:\n    command: {sys.executable}\n    args: [{SERVER}]\n"
        )
        done = harnessc("doctor", "demo")
        assert done.returncode == 0, done.stdout + done.stderr
        assert re.search(r"ok +model 'main'", done.stdout)
        assert re.search(r"ok +mcp server 'notes': started, .* \d+ tools, 1 skipped", done.stdout)
        spec.write_text(
            plain + f"mcp:\n  pages:\n    command: {sys.executable}\n    args: [{HOSTILE}]\n"
            "    env: {HOSTILE_ENDLESS_PAGES: '1'}\n"
        )
        failed = harnessc("doctor", "demo")
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert re.search(r"ok +model 'main'", failed.stdout)
        assert re.search(r"error +mcp server 'pages'.*pages do not end", failed.stdout)
        assert "Traceback" not in failed.stderr
    finally:
        demo.stop()
    assert wait_gone(recorded_pids(tmp_path)) == []

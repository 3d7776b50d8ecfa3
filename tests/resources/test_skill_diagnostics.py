"""What is wrong with a skill is said where the user looks: ``harnessc check`` and the
agent's start (not only ``/reload``); fields pi ignores get no word."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harnessc.compiler.render import compile as compile_specs
from harnessc.spec.load import load_spec
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

SPEC = """\
version: 1
name: skilled
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
tools: [read]
resources:
  skills: [skills]
"""

MISMATCH = "name 'other-name' does not match its folder 'wrong-folder'"
TOO_LONG = "description is 1100 characters, over the 1024 limit"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    skills = tmp_path / "skills"
    for folder, front in (
        ("wrong-folder", "name: other-name\ndescription: Misnamed.\n"),
        ("long", "description: " + "d" * 1100 + "\n"),
        ("extra-fields", "description: Has fields of its own.\nauthor: me\nversion: 1.0\n"),
    ):
        (skills / folder).mkdir(parents=True)
        (skills / folder / "SKILL.md").write_text(f"---\n{front}---\nBody.\n")
    (tmp_path / "skilled.yaml").write_text(SPEC)
    return tmp_path


@pytest.fixture(scope="module")
def server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


def _harnessc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = "import sys; from harnessc.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )


def test_check_shows_the_skill_diagnostics(project: Path) -> None:
    done = _harnessc("check", "skilled.yaml", cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert f"warning: skill skills/wrong-folder/SKILL.md: {MISMATCH}" in said
    assert f"warning: skill skills/long/SKILL.md: {TOO_LONG}" in said
    assert "extra-fields" not in said and "author" not in said  # unknown fields: no word


def test_the_agent_start_shows_the_skill_diagnostics(project: Path, server: ProtocolServer) -> None:
    loaded = load_spec(project / "skilled.yaml")
    out = project / "generated"
    for name, text in compile_specs(loaded, out).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    server.reset()
    server.enqueue(ScriptedResponse.sse(openai_events(["hi"])))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        TEST_BASE_URL=f"{server.url}/v1", TEST_API_KEY="sk-test-0000", PYTHONDONTWRITEBYTECODE="1"
    )
    done = subprocess.run(
        [sys.executable, str(out / "skilled.py"), "--no-session", "hello"],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"
    skills = project / "skills"
    assert f"[resources] {skills / 'wrong-folder' / 'SKILL.md'}: {MISMATCH}" in done.stderr
    assert f"[resources] {skills / 'long' / 'SKILL.md'}: {TOO_LONG}" in done.stderr
    assert "author" not in done.stderr
    assert done.stderr.count("[resources]") == 2

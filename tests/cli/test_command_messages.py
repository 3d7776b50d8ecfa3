"""What a generated agent says about /commands: /help without stray lines, one message
for a REPL command given one-shot, a did-you-mean for a mistyped template."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harnessc.compiler.render import compile as compile_specs
from harnessc.spec.load import load_spec

SPEC = """\
version: 1
name: demo
models:
  main:
    provider: openai
    id: test-model
    base_url: http://127.0.0.1:9/v1
    api_key_env: DEMO_TEST_KEY
tools: [read]
extensions:
  compaction: {}
resources:
  prompt_templates: [prompts]
"""


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    (root / "prompts").mkdir()
    (root / "prompts" / "review.md").write_text("Review the code: $@\n")
    (root / "demo.yaml").write_text(SPEC)
    out = root / "generated"
    for name, text in compile_specs(load_spec(root / "demo.yaml"), out).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    return out / "demo.py"


def _run(agent: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_KEY")}
    env.update(DEMO_TEST_KEY="sk-demo-0000", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, str(agent), "--no-session", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=agent.parent,
        timeout=60,
    )


def test_help_lists_each_command_once(agent: Path) -> None:
    done = _run(agent, "-i", stdin="/help\n/quit\n")
    assert done.returncode == 0, done.stderr
    assert "also shows" not in done.stdout
    assert done.stdout.count("/compact") == 1  # the extension's /compact is the built-in's
    assert "/review" in done.stdout


def test_a_repl_command_one_shot_says_only_that_it_needs_interactive_mode(agent: Path) -> None:
    done = _run(agent, "/status")
    assert done.returncode == 2
    assert "unknown command" not in done.stdout + done.stderr
    assert "/status is a command of the interactive mode" in done.stderr


@pytest.mark.parametrize("mode", ["one-shot", "interactive"])
def test_a_mistyped_command_gets_a_did_you_mean(agent: Path, mode: str) -> None:
    if mode == "one-shot":
        done = _run(agent, "/reviw", "src/")
        assert done.returncode == 2
    else:
        done = _run(agent, "-i", stdin="/reviw src/\n/quit\n")
        assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "unknown command /reviw" in said and "did you mean /review?" in said

"""``context_files:`` in the spec: on by default (also without skills), settings, false."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessc.compiler.live import LiveAgent
from harnessc.runtime.session import Session
from harnessc.spec import format_diagnostics, parse_spec

SPEC = """\
version: 1
name: ctx
models:
  main: {provider: openai, id: m, base_url: "http://127.0.0.1:9/v1"}
"""


def _options(tmp_path: Path, extra: str, cwd: Path):
    spec = tmp_path / "ctx.yaml"
    spec.write_text(SPEC + extra)
    live = LiveAgent(str(spec), str(tmp_path / "out"))
    assert live.load()
    return live.build_options(session=Session(), cwd=str(cwd))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    work = tmp_path / "work" / "here"
    work.mkdir(parents=True)
    (tmp_path / "work" / "AGENTS.md").write_text("Work rules.\n")
    (work / "CLAUDE.md").write_text("Here rules.\n")
    return work


def _ours(tmp_path: Path, options) -> list[str]:
    return [
        f.path for f in options.resources.context_files if f.path.startswith(str(tmp_path) + "/")
    ]


def test_default_on_without_skills_reads_from_the_given_cwd(tmp_path, project):
    options = _options(tmp_path, "", project)
    assert _ours(tmp_path, options) == [
        str(tmp_path / "work" / "AGENTS.md"),
        str(project / "CLAUDE.md"),
    ]


def test_settings_names_user_and_limit(tmp_path, project):
    (tmp_path / "mine.md").write_text("Mine.\n")
    extra = "context_files: {names: [CLAUDE.md], user: mine.md, max_bytes: 4}\n"
    options = _options(tmp_path, extra, project)
    files = options.resources.context_files
    assert [f.path for f in files][0] == str(tmp_path / "mine.md")  # relative to the spec
    assert _ours(tmp_path, options) == [str(tmp_path / "mine.md"), str(project / "CLAUDE.md")]
    assert all(f.truncated for f in files if f.path.startswith(str(tmp_path)))


def test_false_reads_none(tmp_path, project):
    options = _options(tmp_path, "context_files: false\n", project)
    assert options.resources is None


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("{names: [docs/AGENTS.md]}", "must be a file name"),
        ("{names: []}", "must not be empty"),
        ("{max_bytes: 0}", "must be > 0"),
        ("{unknown: 1}", "unknown"),
    ],
)
def test_bad_settings_are_spec_errors(tmp_path, value, needle):
    loaded = parse_spec((SPEC + f"context_files: {value}\n").encode(), tmp_path / "ctx.yaml")
    assert not loaded.ok
    assert needle in format_diagnostics(loaded.diagnostics).lower()


def test_a_built_agent_sends_them_and_says_which_it_read(tmp_path, project):
    import subprocess
    import sys

    from harnessc.testing import ProtocolServer, ScriptedResponse
    from harnessc.testing.streams import openai_events

    repo = Path(__file__).resolve().parents[2]
    spec = tmp_path / "ctx.yaml"
    with ProtocolServer() as server:
        spec.write_text(
            SPEC.replace("http://127.0.0.1:9/v1", server.url + "/v1")
            + "system_prompt: You are the spec's agent.\n"
        )
        built = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from harnessc.cli import main; main(sys.argv[1:])",
                "build",
                str(spec),
                "-o",
                str(tmp_path / "out"),
            ],
            capture_output=True,
            text=True,
            cwd=repo,
            timeout=60,
        )
        assert built.returncode == 0, built.stderr
        server.enqueue(ScriptedResponse.sse(openai_events(["ok"])))
        home = tmp_path / "home"
        (home / ".config" / "harnessc").mkdir(parents=True)
        (home / ".config" / "harnessc" / "AGENTS.md").write_text("User rules.\n")
        done = subprocess.run(
            [
                sys.executable,
                str(tmp_path / "out" / "ctx.py"),
                "--watch",
                "--cwd",
                str(project),
                "--no-session",
                "hi",
            ],
            capture_output=True,
            text=True,
            env={**__import__("os").environ, "HOME": str(home), "PYTHONPATH": str(repo)},
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        [request] = server.requests
    system = request.json["messages"][0]["content"]
    assert system.startswith("You are the spec's agent.\n\n# Project context")
    assert system.index("User rules.") < system.index("Work rules.") < system.index("Here rules.")
    user_file = home / ".config" / "harnessc" / "AGENTS.md"
    assert f"[context] {user_file}" in done.stderr
    assert f"[context] {project / 'CLAUDE.md'}" in done.stderr

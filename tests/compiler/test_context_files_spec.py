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

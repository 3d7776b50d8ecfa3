"""Where an agent writes: the project's folder in the per-user data folder, not the project.

Agents run from a temporary git project with HOME and XDG_DATA_HOME in a temporary
folder, against the key-free demo model; `git status` of the project must stay clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harnessc.runtime.durable.config import resolve_database_url
from harnessc.runtime.support.data_folder import (
    DataFolder,
    make_folder,
    project_data_dir,
    project_key,
    project_root,
    resolve_folder,
)
from harnessc.testing import ProtocolServer
from harnessc.testing.demo import serve

REPO = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"]


@pytest.fixture(scope="module")
def demo() -> Iterator[ProtocolServer]:
    server = serve(port=0)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary home; XDG_DATA_HOME below it (this process and the agents it starts)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    return home


@pytest.fixture
def project(tmp_path: Path, home: Path) -> Path:
    """A git project holding the scaffolded demo agent, committed: a clean status."""
    root = tmp_path / "shop"
    root.mkdir()
    _git(root, "init", "-q", ".")
    (root / "notes.txt").write_text("kiwi\n")
    assert _harnessc(["new", "demo"], root).returncode == 0
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "start")
    return root


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        [*GIT, *args], cwd=root, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout


def _harnessc(
    args: list[str], cwd: Path, demo: ProtocolServer | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(REPO))
    if demo is not None:
        env["HARNESSC_BASE_URL"] = f"{demo.url}/v1"
    return subprocess.run(
        [sys.executable, "-c", "from harnessc.cli import main; main()", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def _session_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*/*.jsonl"))


def _prompts(file: Path) -> list[str]:
    prompts = []
    for line in file.read_text().splitlines():
        entry = json.loads(line)
        message = entry.get("message") or {}
        if entry.get("type") == "message" and message.get("role") == "user":
            content = message["content"]
            prompts.append(content if isinstance(content, str) else content[0]["text"])
    return prompts


def test_a_project_is_its_git_root_and_its_key_is_readable_and_distinct(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    (repo / ".git").mkdir()
    assert project_root(repo / "src" / "deep") == repo.resolve()
    loose = tmp_path / "loose"
    loose.mkdir()
    assert project_root(loose) == loose.resolve()
    # a worktree or submodule has a .git file
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text("gitdir: elsewhere\n")
    assert project_root(tmp_path / "wt") == (tmp_path / "wt").resolve()

    assert project_key("/home/ann/src/shop").startswith("home-ann-src-shop-")
    keys = {project_key(p) for p in ("/a/b-c", "/a/b/c", "/a/b_c", "/a b/c", "/a/b/c/")}
    assert len(keys) == 5  # alike when made readable, distinct by their hash
    long = project_key("/x" * 300)
    assert len(long) < 100 and all(c.isalnum() or c in "-._" for c in long)


def test_data_home_follows_xdg_data_home_else_the_home_folder(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert project_data_dir(tmp_path).parent == home / "data" / "harnessc" / "projects"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    local = home / ".local" / "share" / "harnessc" / "projects"
    assert project_data_dir(tmp_path).parent == local
    monkeypatch.delenv("XDG_DATA_HOME")
    assert project_data_dir(tmp_path).parent == local


def test_a_folder_harnessc_makes_carries_a_gitignore_and_a_users_is_kept(
    home: Path, tmp_path: Path
) -> None:
    made = make_folder(tmp_path / "proj" / ".harnessc" / "sessions")
    assert made.is_dir() and oct(made.stat().st_mode & 0o777) == "0o700"
    assert (tmp_path / "proj" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not (made / ".gitignore").exists()  # one, in the topmost folder made

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / ".gitignore").write_text("keep me\n")
    make_folder(mine / "sub")
    assert (mine / ".gitignore").read_text() == "keep me\n"
    assert (mine / "sub" / ".gitignore").exists()

    existing = tmp_path / "existing"
    existing.mkdir()
    make_folder(existing)
    assert not (existing / ".gitignore").exists()  # a folder already there is not marked

    make_folder(project_data_dir(tmp_path) / "sessions")
    assert (home / "data" / "harnessc" / ".gitignore").exists()
    assert not (home / "data" / ".gitignore").exists()  # not harnessc's to mark


def test_an_agent_run_leaves_git_status_clean_and_finds_its_sessions_again(
    demo: ProtocolServer, project: Path
) -> None:
    first = _harnessc(["run", "demo", "list the files here"], project, demo)
    assert first.returncode == 0, first.stderr
    assert _git(project, "status", "--porcelain", "--ignored") == ""
    assert not (project / ".harnessc").exists()
    folder = project_data_dir(project) / "sessions"
    [file] = _session_files(folder)

    again = _harnessc(["run", "demo", "--", "--continue", "read notes.txt"], project, demo)
    assert again.returncode == 0, again.stderr
    assert "kiwi" in again.stdout
    assert _session_files(folder) == [file]
    assert _prompts(file) == ["list the files here", "read notes.txt"]

    session_id = file.stem.split("_", 1)[1]
    by_id = _harnessc(["run", "demo", "--", "--session", session_id[:8], "hello"], project, demo)
    assert by_id.returncode == 0, by_id.stderr
    assert _prompts(file)[-1] == "hello"
    listed = _harnessc(["run", "demo", "--", "--sessions"], project)
    assert session_id[:8] in listed.stdout and "list the files here" in listed.stdout

    doctor = _harnessc(["doctor", "demo"], project, demo)
    assert f"sessions: {folder}" in doctor.stdout
    assert _git(project, "status", "--porcelain", "--ignored") == ""


def test_session_dir_keeps_the_sessions_in_the_project_with_a_gitignore(
    demo: ProtocolServer, project: Path, home: Path
) -> None:
    spec = project / "agents" / "demo.yaml"
    spec.write_text(spec.read_text() + "session:\n  dir: .sessions\n")
    _git(project, "commit", "-q", "-am", "sessions in the project")
    done = _harnessc(["run", "demo", "list the files here"], project, demo)
    assert done.returncode == 0, done.stderr
    assert len(_session_files(project / ".sessions")) == 1
    assert (project / ".sessions" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert _git(project, "status", "--porcelain") == ""
    assert not (home / "data" / "harnessc" / "projects").exists()


def test_an_older_harnessc_folder_in_the_project_is_used_and_how_to_move_it_said_once(
    demo: ProtocolServer, project: Path
) -> None:
    old = project / ".harnessc" / "sessions"
    old.mkdir(parents=True)
    first = _harnessc(["run", "demo", "list the files here"], project, demo)
    assert first.returncode == 0, first.stderr
    [file] = _session_files(old)
    assert f"harnessc keeps using {project / '.harnessc'} (sessions)" in first.stderr
    assert f"mv .harnessc/sessions {project_data_dir(project)}/" in first.stderr

    again = _harnessc(["run", "demo", "--", "--continue", "read notes.txt"], project, demo)
    assert again.returncode == 0, again.stderr
    assert "keeps using" not in again.stderr  # said once
    assert _prompts(file) == ["list the files here", "read notes.txt"]
    assert not (project_data_dir(project) / "sessions").exists()
    doctor = _harnessc(["doctor", "demo"], project, demo)
    assert "an older harnessc's folder, still used" in doctor.stdout


def test_the_durable_database_follows_the_same_rule(home: Path, tmp_path: Path) -> None:
    from harnessc.compiler import compile as compile_specs
    from harnessc.compiler.live import load_module
    from harnessc.spec import load_spec

    project = tmp_path / "proj"
    project.mkdir()
    (project / "agent.yaml").write_text(
        "version: 1\nname: lasting\nmodels:\n  main: {provider: openai, id: gpt-4.1-mini}\n"
        "durable: {}\n"
    )
    loaded = load_spec(project / "agent.yaml")
    assert loaded.ok, [d.format() for d in loaded.diagnostics]
    text = compile_specs(loaded, project / "generated")["lasting.py"]
    module = load_module(text, "lasting_data_folder", project / "generated" / "lasting.py")

    url = module.durable_config().database_url
    expected = project_data_dir(project) / "durable.sqlite"
    assert resolve_database_url(url, str(project), create=False) == f"sqlite:///{expected}"
    assert not expected.parent.exists()  # a reader creates nothing
    assert resolve_database_url(url, str(project)) == f"sqlite:///{expected}"
    assert expected.parent.is_dir()

    # a relative path keeps it in the project, its new folder out of git
    inside = resolve_database_url("sqlite:///.state/d.sqlite", str(project))
    assert inside == f"sqlite:///{project / '.state' / 'd.sqlite'}"
    assert (project / ".state" / ".gitignore").exists()
    # an older harnessc's database in the project stays in use
    (project / ".harnessc").mkdir()
    (project / ".harnessc" / "durable.sqlite").write_bytes(b"")
    legacy = resolve_database_url(url, str(project))
    assert legacy == f"sqlite:///{project / '.harnessc' / 'durable.sqlite'}"
    assert resolve_folder(DataFolder("sessions"), project) == project_data_dir(project) / "sessions"

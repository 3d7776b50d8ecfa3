"""Path rules hold for what the tools really open: the gate resolves a call's path as the
tool does (workspace, ``..``, symlinks), grep / find / ls over a folder leave out what the
rules keep from them, and a walk honours ignore files and skips session transcripts.

Each run is a real harness run (scripted model, the built-in tools, the permission gate
of ``permission_hook``) over real files and symlinks."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, ToolResultMessage
from harnessc.runtime.core.options import ToolContextSource
from harnessc.runtime.permissions.gate import permission_hook
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools import builtin_tools

MODELS = {"main": Model(id="scripted-1", api="scripted", provider="test")}
SECRET = "SECRET_TOKEN=hunter2-do-not-leak"


def run(
    cwd: Path,
    calls: list[tuple[str, dict[str, Any]]],
    permissions: dict[str, Any],
    *,
    tool_context: dict[str, Any] | None = None,
    sessions: Path | None = None,
    prompt: str = "go",
    asker: Any = None,
    batches: int = 1,
) -> tuple[str, dict[str, ToolResultMessage]]:
    """One run: the model makes ``calls`` in ``batches`` replies, then stops. Returns the
    run's status and the results by call id (c0, c1, ...)."""
    numbered = [(n, a, f"c{i}") for i, (n, a) in enumerate(calls)]
    size = -(-len(numbered) // batches)
    replies = [reply_tool_calls(numbered[i : i + size]) for i in range(0, len(numbered), size)]
    provider = ScriptedProvider([*replies, reply_text("done")])
    hook = permission_hook(permissions)
    hook.handler.asker = asker
    session = JsonlSessionRepo(sessions or cwd.parent / "sessions").create(cwd=str(cwd))
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models=MODELS,
            tools=builtin_tools(),
            provider=provider,
            tool_context=ToolContextSource(tool_context or {"cwd": str(cwd)}),
            hooks=[hook],
        )
    )
    try:
        result = asyncio.run(harness.prompt(prompt))
    finally:
        harness.session.close()
    results = {m.tool_call_id: m for m in harness.messages if isinstance(m, ToolResultMessage)}
    return result.status, results


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / ".env").write_text(SECRET + "\n")
    (root / "app.py").write_text("TOKEN = load('SECRET_TOKEN')\n")
    return root


# -- the gate resolves a path as the tool will --------------------------------------------


def test_a_symlink_to_a_denied_file_is_not_read(project: Path) -> None:
    (project / "config").symlink_to(project / ".env")
    (project / "sub").mkdir()
    (project / "sub" / "deep").symlink_to("../.env")
    status, results = run(
        project,
        [
            ("read", {"path": "config"}),
            ("read", {"path": "sub/deep"}),
            ("read", {"path": "app.py"}),
        ],
        {"deny": ["Read(./.env)"]},
    )
    assert status == "done"
    for denied in (results["c0"], results["c1"]):
        assert denied.is_error and "denied by the rule Read(./.env)" in denied.text
        assert "hunter2" not in denied.text
    assert "load('SECRET_TOKEN')" in results["c2"].text  # a file the rule does not name


def test_a_hard_link_to_a_denied_file_is_the_denied_file(project: Path) -> None:
    """Issue 41, item 3: a file is matched by its identity (device and inode) as well as
    its path, so read and grep do not return a hard link's contents."""
    os.link(project / ".env", project / "settings.txt")
    (project / "sub").mkdir()
    os.link(project / ".env", project / "sub" / "copy")
    status, results = run(
        project,
        [
            ("read", {"path": "settings.txt"}),
            ("read", {"path": "sub/copy"}),
            ("grep", {"pattern": "do-not"}),
            ("grep", {"pattern": "do-not", "path": "settings.txt"}),
            ("read", {"path": "app.py"}),
        ],
        {"deny": ["Read(./.env)"]},
    )
    assert status == "done"
    for key in ("c0", "c1", "c2", "c3"):
        assert "hunter2" not in results[key].text, (key, results[key].text)
    assert "denied by the rule Read(./.env)" in results["c0"].text
    assert "load('SECRET_TOKEN')" in results["c4"].text


def test_a_symlink_named_like_a_denied_path_is_refused_too(project: Path) -> None:
    # the literal path matches the rule although the target is a harmless file
    (project / "keys").mkdir()
    (project / "keys" / "id_rsa").symlink_to(project / "app.py")
    status, results = run(project, [("read", {"path": "keys/id_rsa"})], {"deny": ["Read(keys/**)"]})
    assert results["c0"].is_error and "denied by the rule Read(keys/**)" in results["c0"].text


def test_the_gate_resolves_paths_in_the_tool_workspace(project: Path) -> None:
    work = project / "w"
    work.mkdir()
    (work / "secret.txt").write_text("w secret: hunter2\n")
    context = {"workspace": "w", "cwd": str(project)}
    for rule in ("Read(./w/secret.txt)", f"Read(/{work}/secret.txt)", "Read(w/secret.txt)"):
        _, results = run(
            project,
            [("read", {"path": "secret.txt"}), ("read", {"path": "x/../secret.txt"})],
            {"deny": [rule]},
            tool_context=context,
        )
        for denied in results.values():
            assert denied.is_error and f"denied by the rule {rule}" in denied.text, rule
            assert "hunter2" not in denied.text


def test_a_rule_for_the_cwd_does_not_deny_the_workspace_file_of_that_name(project: Path) -> None:
    work = project / "w"
    work.mkdir()
    (work / ".env").write_text("harmless=1\n")
    _, results = run(
        project,
        [("read", {"path": ".env"})],
        {"deny": ["Read(./.env)"]},
        tool_context={"workspace": "w", "cwd": str(project)},
    )
    assert not results["c0"].is_error and "harmless=1" in results["c0"].text


def test_always_for_a_symlink_holds_for_its_target_however_it_is_spelled(project: Path) -> None:
    (project / "data").mkdir()
    (project / "data" / "a b[1].txt").write_text("payload\n")
    (project / "link").symlink_to(project / "data" / "a b[1].txt")
    asked: list[str] = []

    async def always(tool: str, args: Any, decision: Any) -> str:
        asked.append(str(args.get("path")))
        return "always"

    status, results = run(
        project,
        [("read", {"path": "link"}), ("read", {"path": "data/a b[1].txt"})],
        {"ask": ["Read(./data/**)"]},
        asker=always,
        batches=2,
    )
    assert status == "done" and asked == ["link"]
    assert all("payload" in r.text for r in results.values())


# -- a folder walk leaves out what the rules keep from the tool ----------------------------


def test_grep_without_a_path_skips_a_denied_file(project: Path) -> None:
    status, results = run(
        project,
        [("grep", {"pattern": "SECRET_TOKEN"}), ("grep", {"pattern": "SECRET", "path": "."})],
        {"deny": ["Read(./.env)"]},
    )
    assert status == "done"
    for result in results.values():
        assert "hunter2" not in result.text and ".env" not in result.text.split("[")[0]
        assert "app.py:1:" in result.text
        assert "1 file or folder skipped by permission rules" in result.text


def test_find_and_ls_do_not_show_a_denied_file(project: Path) -> None:
    (project / "secrets").mkdir()
    (project / "secrets" / "prod.key").write_text("k\n")
    _, results = run(
        project,
        [("find", {"pattern": "*"}), ("ls", {}), ("grep", {"pattern": "k", "literal": True})],
        {"deny": ["Read(./.env)", "Read(./secrets)"]},
    )
    found, listed, grepped = results["c0"].text, results["c1"].text, results["c2"].text
    assert "app.py" in found and ".env" not in found and "secrets" not in found
    assert "2 files or folders skipped by permission rules" in found
    assert "app.py" in listed and ".env" not in listed and "secrets" not in listed
    assert "2 entries not listed" in listed
    assert "prod.key" not in grepped


def test_an_ask_rule_inside_a_walk_skips_the_file_and_says_so(project: Path) -> None:
    (project / "notes").mkdir()
    (project / "notes" / "plan.md").write_text("SECRET_TOKEN plan\n")
    status, results = run(
        project, [("grep", {"pattern": "SECRET_TOKEN"})], {"ask": ["Read(./notes/**)"]}
    )
    assert status == "done"  # the walk was not asked about: no pause
    text = results["c0"].text
    assert "plan.md" not in text and "1 file or folder skipped by permission rules" in text


def test_an_ask_rule_naming_the_walked_folder_asks_once_for_it(project: Path) -> None:
    (project / "notes").mkdir()
    (project / "notes" / "plan.md").write_text("SECRET_TOKEN plan\n")
    status, _ = run(
        project,
        [("grep", {"pattern": "SECRET_TOKEN", "path": "notes"})],
        {"ask": ["Read(./notes)"]},
    )
    assert status == "paused"


def test_a_symlink_inside_a_walk_to_a_denied_file_is_skipped(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "env.txt").symlink_to(project / ".env")
    _, results = run(
        project, [("grep", {"pattern": "hunter2", "path": "docs"})], {"deny": ["Read(.env)"]}
    )
    assert "hunter2" not in results["c0"].text.replace("'hunter2'", "")
    assert "skipped by permission rules" in results["c0"].text


# -- ignore files and transcripts ------------------------------------------------------------


def _venv(root: Path, folders: int = 40) -> None:
    for i in range(folders):
        pkg = root / ".venv" / "lib" / f"pkg{i}"
        pkg.mkdir(parents=True)
        (pkg / "mod.py").write_text("needle = 'in the venv'\n")


def test_a_gitignored_venv_is_not_walked(tmp_path: Path) -> None:
    from harnessc.runtime.tools.walk import Ignores, WalkStats, walk

    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".gitignore").write_text(".venv/\n*.log\n!keep.log\n")
    (root / ".git" / "info" / "exclude").write_text("scratch/\n")
    (root / "src" / "gen").mkdir(parents=True)
    (root / "src" / ".gitignore").write_text("gen/\n")
    (root / "src" / "main.py").write_text("needle = 1\n")
    (root / "src" / "gen" / "out.py").write_text("needle = 2\n")
    (root / "scratch").mkdir()
    (root / "scratch" / "tmp.py").write_text("needle = 3\n")
    (root / "debug.log").write_text("needle\n")
    (root / "keep.log").write_text("needle\n")
    (root / ".git" / "HEAD").write_text("needle\n")
    _venv(root)

    stats = WalkStats()
    seen = [e.rel for e in walk(root, ignores=Ignores.above(root, root), stats=stats)]
    assert seen == [".gitignore", "keep.log", "src/.gitignore", "src/main.py"]
    assert stats.folders == 2  # the root and src: never .venv, .git, scratch or src/gen

    sub = root / "src"  # a walk below the top reads the ignore files above it
    assert [e.rel for e in walk(sub, ignores=Ignores.above(sub, root))] == [
        ".gitignore",
        "main.py",
    ]

    _, results = run(
        root,
        [
            ("grep", {"pattern": "needle"}),
            ("find", {"pattern": "*.py"}),
            ("grep", {"pattern": "needle", "no_ignore": True}),
        ],
        {},
    )
    assert results["c0"].text.splitlines() == ["keep.log:1: needle", "src/main.py:1: needle = 1"]
    assert results["c1"].text.splitlines() == ["src/main.py"]
    everything = results["c2"].text
    assert ".venv/lib/pkg0/mod.py:1:" in everything and "src/gen/out.py:1:" in everything
    assert ".git/HEAD" not in everything  # .git is skipped even then


def test_grep_does_not_bring_back_the_agents_own_transcript(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "notes.md").write_text("nothing here\n")
    for sessions in (root / ".harnessc" / "sessions", root / "my-sessions"):
        run(root, [("ls", {})], {}, sessions=sessions, prompt="remember PELICAN-7781")
        assert any("PELICAN-7781" in p.read_text() for p in sessions.rglob("*.jsonl"))
        _, results = run(root, [("grep", {"pattern": "PELICAN-7781"})], {}, sessions=sessions)
        assert results["c0"].text.startswith("No matches found"), results["c0"].text
        _, results = run(root, [("find", {"pattern": "*.jsonl"})], {}, sessions=sessions)
        assert results["c0"].text.startswith("No files found"), results["c0"].text


def test_glob_alternatives_and_folder_globs() -> None:
    from harnessc.runtime.tools.walk import glob_matches

    assert glob_matches("*.{py,{md,txt}}", "a/b.txt")
    assert not glob_matches("*.{py,md}", "a/b.txt")
    assert glob_matches("src/", "src", is_dir=True) and not glob_matches("src/", "src")
    assert not glob_matches("src", "src/a.py")  # a folder's name is not its files'
    assert glob_matches("!x", "!x") and glob_matches("#y", "#y")


def test_a_glob_with_too_many_alternatives_is_refused(tmp_path: Path, run_tool, txt) -> None:
    from harnessc.runtime.tools.search import create_find_tool

    pattern = "{a,b}" * 10
    result = run_tool(create_find_tool(), {"pattern": pattern}, {"cwd": str(tmp_path)})
    assert result.is_error and "expands to over 256 patterns" in txt(result)


def test_rules_apply_to_the_real_path_of_a_symlinked_cwd(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / ".env").write_text(SECRET + "\n")
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    _, results = run(
        alias,
        [("read", {"path": ".env"})],
        {"deny": ["Read(./.env)"]},
        tool_context={"cwd": os.fspath(alias)},
    )
    assert results["c0"].is_error and "hunter2" not in results["c0"].text


def test_home_rules_hold_for_every_spelling_of_the_path(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY hunter2\n")
    (project / "key").symlink_to(home / ".ssh" / "id_ed25519")
    monkeypatch.setenv("HOME", str(home))
    spellings = ["~/.ssh/id_ed25519", str(home / ".ssh/id_ed25519"), "../home/.ssh/id_ed25519"]
    _, results = run(
        project,
        [("read", {"path": p}) for p in [*spellings, "key"]],
        {"deny": ["Read(~/.ssh/**)"]},
        tool_context={"cwd": str(project), "allow_outside_workspace": True},
    )
    for result in results.values():
        assert result.is_error and "denied by the rule Read(~/.ssh/**)" in result.text


def test_a_walk_started_inside_an_ignored_folder_searches_it(tmp_path: Path) -> None:
    from harnessc.runtime.tools.walk import Ignores, walk

    root = tmp_path / "repo"
    (root / "build" / "sub").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n")
    (root / "build" / "sub" / "out.txt").write_text("x\n")
    inside = root / "build"
    assert [e.rel for e in walk(inside, ignores=Ignores.above(inside, root))] == ["sub/out.txt"]
    assert [e.rel for e in walk(root, ignores=Ignores.above(root, root))] == [".gitignore"]


def test_a_tool_context_that_cannot_carry_the_rules_asks_before_a_walk(project: Path) -> None:
    from types import SimpleNamespace

    hook = permission_hook({"deny": ["Read(./.env)"]})
    provider = ScriptedProvider([reply_tool_calls([("grep", {"pattern": "x"}, "c0")])])
    session = JsonlSessionRepo(project.parent / "sessions").create(cwd=str(project))
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models=MODELS,
            tools=builtin_tools(),
            provider=provider,
            tool_context=ToolContextSource(SimpleNamespace(cwd=str(project))),
            hooks=[hook],
        )
    )
    try:
        result = asyncio.run(harness.prompt("go"))
    finally:
        harness.session.close()
    assert result.status == "paused" and "tool context is not a mapping" in str(result.reason)


def test_a_workspace_inside_a_repository_reads_the_ignore_files_up_to_its_top(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("*.log\n")
    work = repo / "packages" / "app"
    work.mkdir(parents=True)
    (work / "run.log").write_text("needle\n")
    (work / "main.py").write_text("needle\n")
    _, results = run(work, [("grep", {"pattern": "needle"})], {})
    assert results["c0"].text.splitlines() == ["main.py:1: needle"]


def test_a_path_rule_that_cannot_be_read_blocks_the_call(project: Path) -> None:
    _, results = run(project, [("read", {"path": "app.py"})], {"deny": ["Read(foo\\)"]})
    assert results["c0"].is_error and "the path rule pattern" in results["c0"].text
    assert "load(" not in results["c0"].text

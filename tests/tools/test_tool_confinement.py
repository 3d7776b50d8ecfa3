"""Item 8: file tools are confined to the agent's working directory by default."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessc.compiler.scaffold import scaffold_files
from harnessc.runtime.resources.skills import load_skill_file
from harnessc.runtime.tools import (
    create_edit_tool,
    create_find_tool,
    create_grep_tool,
    create_ls_tool,
    create_read_tool,
    create_write_tool,
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "inside.txt").write_text("hello\n")
    (tmp_path / "outside.txt").write_text("TOP SECRET\n")
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize("context", [None, {}, {"cwd": "."}])
def test_no_workspace_means_the_working_directory(project, run_tool, txt, context):
    outside = str(project.parent / "outside.txt")
    calls = [
        (create_read_tool(), {"path": outside}),
        (create_read_tool(), {"path": "/etc/hostname"}),
        (create_read_tool(), {"path": "../outside.txt"}),
        (create_write_tool(), {"path": str(project.parent / "new.txt"), "content": "x"}),
        (create_write_tool(), {"path": "../new.txt", "content": "x"}),
        (create_edit_tool(), {"path": outside, "edits": [{"old_text": "TOP", "new_text": "X"}]}),
        (create_ls_tool(), {"path": ".."}),
        (create_grep_tool(), {"pattern": "SECRET", "path": ".."}),
        (create_find_tool(), {"pattern": "*.txt", "path": "/"}),
    ]
    for tool, params in calls:
        result = run_tool(tool, params, context)
        assert result.is_error and "outside the workspace" in txt(result), (tool.name, params)
    assert not (project.parent / "new.txt").exists()
    assert (project.parent / "outside.txt").read_text() == "TOP SECRET\n"
    # inside the working directory everything works
    assert "hello" in txt(run_tool(create_read_tool(), {"path": "inside.txt"}, context))
    ok = run_tool(create_write_tool(), {"path": "sub/new.txt", "content": "x"}, context)
    assert not ok.is_error and (project / "sub" / "new.txt").read_text() == "x"


@pytest.mark.parametrize("flag", [True, "true"])
def test_explicit_setting_widens(project, run_tool, txt, flag):
    context = {"allow_outside_workspace": flag}
    result = run_tool(create_read_tool(), {"path": "../outside.txt"}, context)
    assert "TOP SECRET" in txt(result)


def test_skill_files_stay_readable(project, tmp_path, run_tool, txt):
    folder = tmp_path / "agents" / "skills" / "demo"
    folder.mkdir(parents=True)
    skill = folder / "SKILL.md"
    skill.write_text("---\nname: demo\ndescription: A demo skill.\n---\nBody\n")
    (folder / "notes.md").write_text("skill notes\n")
    assert load_skill_file(str(skill), "demo", check_folder=True).item is not None
    assert "Body" in txt(run_tool(create_read_tool(), {"path": str(skill)}))
    assert "skill notes" in txt(run_tool(create_read_tool(), {"path": str(folder / "notes.md")}))
    # but only for reading
    result = run_tool(create_write_tool(), {"path": str(folder / "notes.md"), "content": "x"})
    assert result.is_error


def test_new_scaffolds_a_workspace():
    spec = scaffold_files("helper")["helper.yaml"]
    assert "tool_context:" in spec and "workspace: ." in spec
    assert "allow_outside_workspace" in spec  # documented how to widen it

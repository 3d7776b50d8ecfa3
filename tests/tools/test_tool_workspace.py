from __future__ import annotations

import os

import pytest

from harnessc.runtime.tools import (
    create_bash_tool,
    create_edit_tool,
    create_find_tool,
    create_grep_tool,
    create_ls_tool,
    create_read_tool,
    create_write_tool,
)
from harnessc.runtime.tools.paths import PathError, resolve_path


@pytest.fixture
def outside(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    return secret


ESCAPES = [
    "../secret.txt",
    "sub/../../secret.txt",
    "%2e%2e/secret.txt",
    "%252e%252e/secret.txt",
    "\uff0e\uff0e/secret.txt",  # full-width dots
    "\u2025/secret.txt",  # two-dot leader, NFKC ".."
    "..\\secret.txt",
    "..%2fsecret.txt",
    "file://../secret.txt",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_escapes_are_refused(ws, outside, run_tool, txt, path):
    root, ctx = ws
    (root / "sub").mkdir()
    result = run_tool(create_read_tool(), {"path": path}, ctx)
    assert result.is_error, path
    assert "outside the workspace" in txt(result)
    assert "TOP SECRET" not in txt(result)


def test_absolute_outside_is_refused(ws, outside, run_tool, txt):
    _, ctx = ws
    result = run_tool(create_read_tool(), {"path": str(outside)}, ctx)
    assert result.is_error and "outside the workspace" in txt(result)
    assert run_tool(
        create_write_tool(), {"path": "/tmp/x-harnessc-should-not-exist", "content": "x"}, ctx
    ).is_error
    assert not os.path.exists("/tmp/x-harnessc-should-not-exist")


def test_absolute_inside_is_fine(ws, run_tool, txt):
    root, ctx = ws
    (root / "in.txt").write_text("ok\n")
    assert txt(run_tool(create_read_tool(), {"path": str(root / "in.txt")}, ctx)) == "     1\tok"


def test_symlink_out_is_refused(ws, outside, run_tool, txt):
    root, ctx = ws
    (root / "link.txt").symlink_to(outside)
    (root / "linkdir").symlink_to(outside.parent)
    for tool, params in [
        (create_read_tool(), {"path": "link.txt"}),
        (create_read_tool(), {"path": "linkdir/secret.txt"}),
        (create_edit_tool(), {"path": "link.txt", "edits": [{"old_text": "TOP", "new_text": "x"}]}),
        (create_write_tool(), {"path": "linkdir/new.txt", "content": "x"}),
        (create_ls_tool(), {"path": "linkdir"}),
    ]:
        result = run_tool(tool, params, ctx)
        assert result.is_error and "outside the workspace" in txt(result), params
    assert outside.read_text() == "TOP SECRET\n"
    # search tools skip links pointing out
    grep = run_tool(create_grep_tool(), {"pattern": "SECRET"}, ctx)
    assert "TOP SECRET" not in txt(grep)
    found = run_tool(create_find_tool(), {"pattern": "*.txt"}, ctx)
    assert "link.txt" not in txt(found)


def test_invisible_characters_are_refused(ws, run_tool, txt):
    _, ctx = ws
    result = run_tool(create_read_tool(), {"path": "a\u200b.txt"}, ctx)
    assert result.is_error and "invisible" in txt(result)


def test_allow_outside_workspace(ws, outside, run_tool, txt):
    root, ctx = ws
    ctx = {**ctx, "allow_outside_workspace": True}
    assert "TOP SECRET" in txt(run_tool(create_read_tool(), {"path": "../secret.txt"}, ctx))


def test_no_workspace_uses_cwd(tmp_path, monkeypatch, outside):
    monkeypatch.chdir(tmp_path)
    assert resolve_path("secret.txt", None) == outside
    assert resolve_path("secret.txt", {}) == outside
    assert resolve_path("x", {"cwd": str(tmp_path / "sub")}) == tmp_path / "sub" / "x"


def test_relative_workspace_and_object_context(tmp_path, monkeypatch):
    (tmp_path / "w").mkdir()
    monkeypatch.chdir(tmp_path)

    class Ctx:
        workspace = "w"

    assert resolve_path("a.txt", Ctx()) == tmp_path / "w" / "a.txt"
    with pytest.raises(PathError):
        resolve_path("../a.txt", Ctx())
    assert (
        resolve_path("a.txt", {"workspace": "w", "cwd": str(tmp_path)}) == tmp_path / "w" / "a.txt"
    )


def test_bash_runs_in_workspace(ws, run_tool, txt):
    root, ctx = ws
    assert txt(run_tool(create_bash_tool(), {"command": "pwd"}, ctx)) == os.path.realpath(root)

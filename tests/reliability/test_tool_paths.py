"""Tool paths: with a workspace set, every file tool refuses every path that leaves it
(``..``, absolute paths, symlinks, percent-encoding, look-alike dots, NUL bytes, ``~``,
``file://``), never reads or changes anything outside, and still works inside."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import (
    create_edit_tool,
    create_find_tool,
    create_grep_tool,
    create_ls_tool,
    create_read_tool,
    create_write_tool,
)

SECRET = "OUTSIDE-SECRET-7c1d"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    (workspace / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n")
    (workspace / "inside.txt").write_text("inside text\n")
    (workspace / "link_dir").symlink_to(outside)
    (workspace / "link_file").symlink_to(outside / "secret.txt")
    (workspace / "dangling").symlink_to(outside / "new.txt")
    (workspace / "chain1").symlink_to(workspace / "chain2")
    (workspace / "chain2").symlink_to(outside)
    (workspace / "sub" / "up").symlink_to("../../outside")
    (workspace / "loop1").symlink_to(workspace / "loop2")
    (workspace / "loop2").symlink_to(workspace / "loop1")
    return workspace, outside


def hostile_paths(outside: Path) -> list[str]:
    secret = str(outside / "secret.txt")
    return [
        "../outside/secret.txt",
        "../../../../../../etc/passwd",
        "sub/../../outside/secret.txt",
        secret,
        "/etc/passwd",
        "//etc/passwd",
        "link_dir/secret.txt",
        "link_dir",
        "link_file",
        "dangling",
        "chain1/secret.txt",
        "sub/up/secret.txt",
        "%2e%2e/outside/secret.txt",
        "..%2foutside%2fsecret.txt",
        "%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "%252e%252e%252foutside%252fsecret.txt",
        "%25252e%25252e/outside/secret.txt",
        "\uff0e\uff0e/outside/secret.txt",  # full-width full stops
        "\uff0e\uff0e\uff0foutside\uff0fsecret.txt",  # and full-width solidus
        "\u2024\u2024/outside/secret.txt",  # one dot leader
        "..\\outside\\secret.txt",
        "..\u2215outside\u2215secret.txt",  # division slash
        "file://" + secret,
        "file:///etc/passwd",
        "file://%2e%2e/outside/secret.txt",
        "~",
        "~/.bashrc",
        "~root/.bashrc",
        "inside.txt\x00../../outside/secret.txt",
        "%00",
        "inside.txt%00",
        "sub/\u202e../../outside/secret.txt",  # right-to-left override
        "sub/\u200b../../outside",  # zero-width space
        "../outside/" + "x" * 5000,
        "\n../outside/secret.txt",
    ]


def run(tool: Any, params: dict[str, Any], workspace: Path) -> Any:
    return asyncio.run(
        tool.execute("c1", params, AbortSignal(), lambda _: None, {"workspace": str(workspace)})
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    out = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(root) / name
            out[str(path.relative_to(folder))] = path.read_bytes()
    return out


TOOLS = {
    "read": (create_read_tool, lambda p: {"path": p}),
    "write": (create_write_tool, lambda p: {"path": p, "content": "PWNED"}),
    "edit": (
        create_edit_tool,
        lambda p: {"path": p, "edits": [{"old_text": "OUTSIDE", "new_text": "PWNED"}]},
    ),
    "ls": (create_ls_tool, lambda p: {"path": p}),
    "grep": (create_grep_tool, lambda p: {"pattern": "SECRET|root", "path": p}),
    "find": (create_find_tool, lambda p: {"pattern": "*", "path": p}),
}


@pytest.mark.parametrize("tool_name", list(TOOLS))
def test_every_file_tool_refuses_every_escape(tool_name: str, layout: tuple[Path, Path]) -> None:
    workspace, outside = layout
    factory, params = TOOLS[tool_name]
    tool = factory()
    before = snapshot(outside)
    leaks = []
    for path in hostile_paths(outside):
        result = run(tool, params(path), workspace)
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        if SECRET in text or "root:x:0:0" in text:
            leaks.append((path, text[:200]))
        elif not result.is_error:
            # only a spelling that stays inside may succeed (e.g. a file literally named
            # "..\u2215outside" is a strange name, not a way out)
            where = Path((result.details or {}).get("path", "/"))
            if not where.resolve().is_relative_to(workspace.resolve()):
                leaks.append((path, text[:200]))
    assert not leaks, f"{tool_name} let these through: {leaks}"
    assert snapshot(outside) == before, f"{tool_name} changed files outside the workspace"
    assert not (outside / "new.txt").exists()
    assert sorted(os.listdir(outside)) == ["secret.txt"]


@pytest.mark.parametrize("tool_name", ["grep", "find", "ls"])
def test_walking_the_workspace_never_leaves_it(tool_name: str, layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    factory, _ = TOOLS[tool_name]
    params = {"grep": {"pattern": "SECRET|inside"}, "find": {"pattern": "**"}, "ls": {}}[tool_name]
    result = run(factory(), params, workspace)
    text = result.content[0].text
    assert SECRET not in text
    assert "secret.txt" not in text
    if tool_name == "grep":
        assert "inside text" in text


def test_paths_inside_still_work(layout: tuple[Path, Path]) -> None:
    workspace, _ = layout
    assert run(create_read_tool(), {"path": "inside.txt"}, workspace).is_error is False
    assert run(create_read_tool(), {"path": "sub/../inside.txt"}, workspace).is_error is False
    assert (
        run(create_read_tool(), {"path": str(workspace / "inside.txt")}, workspace).is_error
        is False
    )
    written = run(create_write_tool(), {"path": "sub/new.txt", "content": "x"}, workspace)
    assert not written.is_error and (workspace / "sub" / "new.txt").read_text() == "x"
    edited = run(
        create_edit_tool(),
        {"path": "inside.txt", "edits": [{"old_text": "inside", "new_text": "changed"}]},
        workspace,
    )
    assert not edited.is_error and (workspace / "inside.txt").read_text() == "changed text\n"


def test_symlink_swapped_after_the_check_is_not_followed_out(layout: tuple[Path, Path]) -> None:
    """A file the model may write, replaced by a symlink to the outside just before."""
    workspace, outside = layout
    target = workspace / "swap.txt"
    target.write_text("mine\n")
    target.unlink()
    target.symlink_to(outside / "secret.txt")
    result = run(create_write_tool(), {"path": "swap.txt", "content": "PWNED"}, workspace)
    assert result.is_error
    assert (outside / "secret.txt").read_text() == f"{SECRET}\n"

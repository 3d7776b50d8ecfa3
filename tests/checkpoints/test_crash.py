"""A SIGKILL during a checkpoint or a rewind: the workspace is as it was or as it should
be, never in between, and the next holder of the workspace says which."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harnessc.runtime.checkpoints import Checkpoint, CheckpointStore, Workspace
from harnessc.runtime.checkpoints.crash import ENV

from .conftest import tree_state

CHILD = Path(__file__).with_name("_crash_child.py")


def _child(*args: str, crash: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop(ENV, None)
    if crash is not None:
        env[ENV] = crash
    return subprocess.run(
        [sys.executable, str(CHILD), *args], env=env, capture_output=True, text=True, timeout=120
    )


def _fill(ws: Path) -> None:
    for i in range(8):
        (ws / f"f{i}.txt").write_text(f"version one of {i}\n")
    (ws / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(ws / "tool.sh", 0o755)
    os.symlink("f1.txt", ws / "link")
    (ws / "dir").mkdir()
    (ws / "dir" / "inner.txt").write_text("inner\n")


def _change(ws: Path) -> None:
    for i in range(0, 8, 2):
        (ws / f"f{i}.txt").write_text(f"version two of {i}\n")
    os.remove(ws / "f1.txt")
    os.remove(ws / "link")
    os.symlink("f3.txt", ws / "link")
    os.chmod(ws / "tool.sh", 0o644)
    (ws / "dir" / "inner.txt").unlink()
    (ws / "dir").rmdir()
    (ws / "fresh.txt").write_text("fresh\n")


@pytest.mark.parametrize("point", ["take:objects:3", "take:scanned"])
def test_a_checkpoint_killed_midway_leaves_the_workspace_as_it_was(
    tmp_path: Path, point: str
) -> None:
    ws, store_root = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    _fill(ws)
    before = tree_state(ws)
    done = _child("take", str(store_root), str(ws), crash=point)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert tree_state(ws) == before

    workspace = Workspace(CheckpointStore(store_root), ws)
    notes = workspace.recover()
    assert [n.what for n in notes] == ["checkpoint"]
    assert "was interrupted and discarded" in notes[0].message
    assert "which is as it was" in notes[0].message
    assert workspace.recover() == []  # said once
    # the killed checkpoint is not the session's, and a new one works
    assert CheckpointStore(store_root).refs("s").checkpoints == []
    checkpoint = workspace.take(session_id="s")
    assert checkpoint.files == 11
    # the half-written objects go with the next collection
    CheckpointStore(store_root).collect()
    assert not list((store_root / "objects").rglob(".tmp-*"))


@pytest.mark.parametrize(
    "point", ["rewind:journal", "rewind:op:1", "rewind:op:4", "rewind:op:9", "rewind:files-done"]
)
def test_a_rewind_killed_midway_is_finished_by_the_next_start(tmp_path: Path, point: str) -> None:
    ws, store_root = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    _fill(ws)
    wanted = tree_state(ws)
    workspace = Workspace(CheckpointStore(store_root), ws)
    target = workspace.take(session_id="s")
    _change(ws)
    changed = tree_state(ws)
    workspace.take(session_id="s")
    workspace.close()

    done = _child("rewind", str(store_root), str(ws), json.dumps(target.to_dict()), crash=point)
    assert done.returncode == -signal.SIGKILL, done.stderr
    # before the next start the workspace may be between (some paths changed)
    assert tree_state(ws) != wanted or point == "rewind:files-done"

    again = Workspace(CheckpointStore(store_root), ws)
    notes = again.recover()
    assert [n.what for n in notes] == ["rewind"]
    message = notes[0].message
    assert f"to checkpoint {target.id}" in message
    assert "it was finished now" in message and "as the rewind should leave it" in message
    assert tree_state(ws) == wanted  # never in between
    assert notes[0].journal["session"] == "s"
    assert notes[0].outcome is not None and not notes[0].outcome.kept
    assert changed != wanted
    assert again.recover() == []


def test_a_rewind_killed_before_its_journal_leaves_the_workspace_as_it_was(
    tmp_path: Path,
) -> None:
    """Killed while planning (the scan of the workspace as it is): nothing was touched."""
    ws, store_root = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    _fill(ws)
    workspace = Workspace(CheckpointStore(store_root), ws)
    target = workspace.take(session_id="s")
    _change(ws)
    changed = tree_state(ws)
    done = _child(
        "rewind", str(store_root), str(ws), json.dumps(target.to_dict()), crash="take:objects:1"
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert tree_state(ws) == changed
    assert Workspace(CheckpointStore(store_root), ws).recover() == []


def test_a_path_changed_after_the_kill_is_kept_by_the_recovery(tmp_path: Path) -> None:
    ws, store_root = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    _fill(ws)
    workspace = Workspace(CheckpointStore(store_root), ws)
    target = workspace.take(session_id="s")
    _change(ws)
    workspace.close()
    done = _child(
        "rewind", str(store_root), str(ws), json.dumps(target.to_dict()), crash="rewind:journal"
    )
    assert done.returncode == -signal.SIGKILL
    (ws / "fresh.txt").write_text("the user typed here after the crash\n")
    notes = Workspace(CheckpointStore(store_root), ws).recover()
    assert "except 1 path(s) left as they are: fresh.txt" in notes[0].message
    assert (ws / "fresh.txt").read_text() == "the user typed here after the crash\n"
    assert (ws / "f1.txt").read_text() == "version one of 1\n"


def test_checkpoint_from_a_journal_round_trips(tmp_path: Path) -> None:
    checkpoint = Checkpoint("x", "a" * 64, "/w", "before", "t", skipped_list="b" * 64)
    assert Checkpoint.from_dict(checkpoint.to_dict()) == checkpoint
    assert Checkpoint.from_dict({"id": "x", "tree": "nothex", "workspace": "/w"}) is None

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.checkpoints import CheckpointStore, Workspace, statcache


def tree_state(root: str | Path) -> dict[str, Any]:
    """Everything a checkpoint promises to restore, byte for byte: each path (folders
    too) with its kind, permission bits and content or link target. ``.git`` is left
    out (never recorded)."""
    root = os.fspath(root)
    out: dict[str, Any] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted([*dirs, *files]):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            elif stat.S_ISREG(st.st_mode):
                out[rel] = ("file", stat.S_IMODE(st.st_mode), Path(path).read_bytes())
            else:
                out[rel] = ("other",)
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def store(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(tmp_path / "store")


@pytest.fixture
def workspace(store: CheckpointStore, ws: Path) -> Workspace:
    return Workspace(store, ws)


@pytest.fixture
def trusted_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by the test itself are trusted by the stat cache at once (no
    racy-clean window): what a workspace that was not just written looks like."""
    monkeypatch.setattr(statcache, "RACY_NS", 0)

"""The agents of one process checkpointing one folder alike share its workspace (one
stat cache and folder memo, not one per session), and their takes from many threads
at once stay whole."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from pathlib import Path

import pytest

from harnessc.runtime.checkpoints.batch import BatchCheckpoints
from harnessc.runtime.checkpoints.records import Checkpoint
from harnessc.runtime.checkpoints.scan import ScanResult
from harnessc.runtime.checkpoints.store import locked
from harnessc.runtime.checkpoints.workspace import Workspace
from harnessc.runtime.core.checkpoint_settings import CheckpointSettings
from harnessc.runtime.session.entries import SessionHeader
from harnessc.runtime.session.session import Session


def _session(cwd: str) -> Session:
    return Session(SessionHeader.new(cwd=cwd))


def _settings(store: Path, **given: object) -> CheckpointSettings:
    return CheckpointSettings(folder=str(store), **given)  # type: ignore[arg-type]


def test_sessions_in_one_folder_share_its_workspace(tmp_path: Path) -> None:
    """Before: each agent opened a workspace of its own, with its own stat cache of the
    folder (1,000 sessions in a project folder held 1,000 copies, about 1 MB each)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    store = tmp_path / "store"
    first, second = BatchCheckpoints(_settings(store)), BatchCheckpoints(_settings(store))
    one, two = _session(str(ws)), _session(str(ws))
    assert first.workspace(one) is second.workspace(two)
    assert first.workspace(one) is first.workspace(one)
    other = BatchCheckpoints(_settings(store, exclude=["*.log"]))
    assert other.workspace(one) is not first.workspace(one)  # other settings: its own
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert first.workspace(_session(str(elsewhere))).root == str(elsewhere.resolve())


def test_takes_from_many_sessions_at_once_stay_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(20):
        (ws / f"f{i}.txt").write_text(f"{i}\n")
    store = tmp_path / "store"
    agents = [BatchCheckpoints(_settings(store)) for _ in range(16)]
    sessions = [_session(str(ws)) for _ in agents]

    async def main() -> list:  # type: ignore[type-arg]
        return await asyncio.gather(
            *(
                a.take(s, phase)
                for a, s in zip(agents, sessions, strict=True)
                for phase in ("before", "after")
            )
        )

    taken = asyncio.run(main())
    trees = {c.tree for c in taken}
    assert len(taken) == 32 and len(trees) == 1 and all(c.files == 20 for c in taken)
    for agent in agents:
        agent.close()


def test_a_workspace_no_agent_holds_is_let_go(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = tmp_path / "store"
    agent = BatchCheckpoints(_settings(store))
    agent.workspace(_session(str(ws)))
    from harnessc.runtime.checkpoints import batch

    assert any(w.root == str(ws.resolve()) for w in batch._open.values())
    del agent
    gc.collect()
    assert all(w.root != str(ws.resolve()) for w in batch._open.values())


def test_takes_asked_for_together_share_one_scan_and_a_later_one_scans_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: every take scanned the workspace, so N sessions in one folder asking at
    once made N scans of it (a thousand sessions in a project folder: a thousand stat
    walks a step)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    store = tmp_path / "store"
    agent = BatchCheckpoints(_settings(store))
    workspace = agent.workspace(_session(str(ws)))
    workspace.take("before")  # the store and the workspace's folder exist
    scans: list[int] = []
    real_scan = Workspace._scan

    def counted(self: Workspace) -> ScanResult:
        scans.append(1)
        return real_scan(self)

    monkeypatch.setattr(Workspace, "_scan", counted)
    taken: list[Checkpoint] = []
    with locked(workspace.folder / "lock", exclusive=True):  # every take waits for it
        threads = [
            threading.Thread(target=lambda: taken.append(workspace.take("before")))
            for _ in range(8)
        ]
        for thread in threads:
            thread.start()
        time.sleep(0.3)  # all eight asked, all wait for the lock
    for thread in threads:
        thread.join(30)
    assert len(taken) == 8 and len({c.id for c in taken}) == 8
    assert len({c.tree for c in taken}) == 1
    assert len(scans) <= 2  # the first take's scan (a late starter may make one more)
    (ws / "a.txt").write_text("changed\n")
    later = workspace.take("after")
    assert later.tree != taken[0].tree and len(scans) <= 3


def test_an_agents_start_sees_a_cut_short_checkpoint_after_earlier_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each agent's start asks whether a checkpoint or a rewind of its folder was cut
    short: the answer's place is found once per folder and data folder, the question is
    asked again each time (a busy note made after earlier starts is seen), and another
    data folder is another store."""
    from harnessc.runtime.checkpoints.layout import BUSY, cut_short, store_root, workspace_dir

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    folder = tmp_path / "ws"
    folder.mkdir()
    settings = CheckpointSettings()
    assert not cut_short(settings, str(folder))
    assert not cut_short(settings, str(folder))
    place = workspace_dir(store_root(settings, str(folder)), str(folder.resolve()))
    place.mkdir(parents=True)
    (place / BUSY).write_text("")
    assert cut_short(settings, str(folder))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "other"))
    assert not cut_short(settings, str(folder))

"""The agents of one process checkpointing one folder alike share its workspace (one
stat cache and folder memo, not one per session), and their takes from many threads
at once stay whole."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from harnessc.runtime.checkpoints.batch import BatchCheckpoints
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

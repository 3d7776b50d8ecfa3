"""Checkpoints in a session: which checkpoint holds an entry's files, what changed
outside the agent, and a rewind in each mode (the session alone, no agent)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harnessc.runtime.checkpoints import Workspace
from harnessc.runtime.checkpoints.history import (
    CHECKPOINT_TYPE,
    entry_data,
    files_at,
    points,
)
from harnessc.runtime.checkpoints.rewind import RewindError, recent_points, rewind
from harnessc.runtime.core.messages import AssistantMessage, TextContent, UserMessage
from harnessc.runtime.session.session import Session


def _turn(session: Session, workspace: Workspace, prompt: str, edit: dict[str, str]) -> str:
    """A user prompt, a reply whose tool batch writes ``edit`` (checkpoints around
    it); the reply's entry id."""
    session.append_message(UserMessage(content=prompt))
    reply = session.append_message(AssistantMessage(content=[TextContent(f"doing {prompt}")]))
    before = workspace.take("before", session_id=session.id, in_memory=True)
    session.append_custom(CHECKPOINT_TYPE, entry_data(before, guards=reply.id, tools=["write"]))
    for name, text in edit.items():
        (Path(workspace.root) / name).write_text(text)
    after = workspace.take("after", session_id=session.id, in_memory=True)
    session.append_custom(CHECKPOINT_TYPE, entry_data(after, guards=reply.id))
    return reply.id


def test_the_files_of_an_entry_follow_it(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "a.txt").write_text("start\n")
    session = Session()
    first = _turn(session, workspace, "one", {"a.txt": "one\n"})
    second = _turn(session, workspace, "two", {"a.txt": "two\n"})
    first_prompt = session.get_entry(first).parent_id  # type: ignore[union-attr]
    at_prompt = files_at(session, first_prompt)  # type: ignore[arg-type]
    at_reply = files_at(session, first)
    assert at_prompt is not None and at_reply is not None
    assert at_prompt.checkpoint.phase == "before" and at_prompt == at_reply
    # the last entry: followed by no checkpoint, it has the files of the last one before
    session.append_message(AssistantMessage(content=[TextContent("done")]))
    last = files_at(session, session.leaf_id)  # type: ignore[arg-type]
    assert last is not None and last.checkpoint.phase == "after"
    assert [p.checkpoint.phase for p in points(session)] == ["before", "after"] * 2
    assert files_at(session, second) is not None


def test_rewind_in_each_mode(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "a.txt").write_text("start\n")
    session = Session()
    first = _turn(session, workspace, "one", {"a.txt": "one\n"})
    _turn(session, workspace, "two", {"a.txt": "two\n", "b.txt": "new\n"})
    tip = session.leaf_id
    target = session.get_entry(first).parent_id  # type: ignore[union-attr]
    assert target is not None

    # dry run: the plan, nothing changed
    report = asyncio.run(rewind(session, workspace, target, mode="both", dry_run=True))
    assert report.plan is not None and not report.done
    assert report.plan.lines() == ["M a.txt", "D b.txt"]
    assert session.leaf_id == tip and (ws / "a.txt").read_text() == "two\n"

    # files only: the conversation stays where it is
    report = asyncio.run(rewind(session, workspace, target, mode="files"))
    assert report.done and (ws / "a.txt").read_text() == "start\n"
    assert not (ws / "b.txt").exists()
    assert session.context().messages[-1].text == "doing two"  # type: ignore[union-attr]
    assert [p.checkpoint.phase for p in points(session)][-2:] == ["leave", "rewind"]

    # conversation only: the files stay
    report = asyncio.run(rewind(session, workspace, target, mode="conversation"))
    assert report.moved and session.leaf_id == target
    assert (ws / "a.txt").read_text() == "start\n"

    # back to the tip, both: the files the tip had come back
    report = asyncio.run(rewind(session, workspace, tip, mode="both"))  # type: ignore[arg-type]
    assert report.done and report.moved
    assert (ws / "a.txt").read_text() == "two\n" and (ws / "b.txt").read_text() == "new\n"


def test_an_edit_between_turns_is_a_conflict(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "agent.txt").write_text("start\n")
    (ws / "user.txt").write_text("user start\n")
    session = Session()
    first = _turn(session, workspace, "one", {"agent.txt": "one\n"})
    (ws / "user.txt").write_text("typed by the user between turns\n")
    _turn(session, workspace, "two", {"agent.txt": "two\n"})
    (ws / "agent.txt").write_text("and the user edited the agent's file just now\n")
    target = session.get_entry(first).parent_id  # type: ignore[union-attr]
    assert target is not None
    report = asyncio.run(rewind(session, workspace, target, mode="both"))
    assert report.plan is not None
    assert sorted(c.path for c in report.plan.conflicts) == ["agent.txt", "user.txt"]
    assert report.outcome is not None
    assert sorted(k.path for k in report.outcome.kept) == ["agent.txt", "user.txt"]
    assert (ws / "user.txt").read_text() == "typed by the user between turns\n"
    assert (ws / "agent.txt").read_text() == "and the user edited the agent's file just now\n"

    # forced, both go back
    tip_entry = session.leaf_id
    assert tip_entry is not None
    asyncio.run(rewind(session, workspace, target, mode="files", force=True))
    assert (ws / "user.txt").read_text() == "user start\n"
    assert (ws / "agent.txt").read_text() == "start\n"


def test_recent_points_list_what_each_would_change(workspace: Workspace) -> None:
    ws = Path(workspace.root)
    (ws / "a.txt").write_text("start\n")
    session = Session()
    _turn(session, workspace, "one", {"a.txt": "one\n"})
    _turn(session, workspace, "two", {"b.txt": "b\n"})
    listed = recent_points(session, workspace)
    assert [p.changes for p in listed] == [["b.txt"], ["a.txt", "b.txt"]]
    assert all(p.label == "write" for p in listed)


def test_no_checkpoint_no_file_rewind(workspace: Workspace) -> None:
    session = Session()
    entry = session.append_message(UserMessage(content="hi"))
    with pytest.raises(RewindError, match="no checkpoint holds the files"):
        asyncio.run(rewind(session, workspace, entry.id, mode="files"))
    with pytest.raises(RewindError, match="mode must be one of"):
        asyncio.run(rewind(session, workspace, entry.id, mode="everything"))


def test_a_fork_keeps_its_checkpoints_when_its_parent_goes(tmp_path: Path) -> None:
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
    from harnessc.runtime.checkpoints import CheckpointStore
    from harnessc.runtime.core.checkpoint_settings import CheckpointSettings
    from harnessc.runtime.session.repo import JsonlSessionRepo

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("start\n")
    settings = CheckpointSettings(folder=str(tmp_path / "store"))
    store = CheckpointStore(tmp_path / "store")
    workspace = Workspace(store, ws, settings)
    repo = JsonlSessionRepo(tmp_path / "sessions")
    session = repo.create(cwd=str(ws))
    first = _turn(session, workspace, "one", {"a.txt": "one\n"})
    target = session.get_entry(first).parent_id  # type: ignore[union-attr]
    assert target is not None
    forked = repo.fork(session)
    original = session.path
    session.close()
    repo.delete(original)  # type: ignore[arg-type]
    harness = AgentHarness(
        AgentHarnessOptions(
            session=forked,
            models={"m": Model(id="m", api="openai-completions")},
            checkpoints=settings,
        )
    )
    assert {c.id for c in store.refs(forked.id).checkpoints} == {
        p.checkpoint.id for p in points(forked)
    }
    store.collect()  # the parent's file is gone: its own list goes, the fork's stays
    report = asyncio.run(harness.rewind(target, mode="files"))
    assert report.done and (ws / "a.txt").read_text() == "start\n"
    asyncio.run(harness.close())

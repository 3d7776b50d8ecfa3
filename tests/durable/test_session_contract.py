"""The SessionRepo contract, run against both stores: JSONL files and PostgreSQL.

Store-agnostic tests of the session suite (tests/session) are imported and run here
again with ``repo`` parametrised over both stores; the rest are written against the
protocol only (ids, metas and sessions, never file paths).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.session import (
    SessionEntry,
    SessionLockedError,
    SessionNotFoundError,
    SessionReadOnlyError,
    SessionRepo,
)
from tests.session._helpers import call, reply, result, user
from tests.session.test_replay import test_replay_equals_the_live_harness  # noqa: F401
from tests.session.test_tree import (  # noqa: F401
    random_tree,
    test_read_only_session_refuses_appends,
)

from .conftest import make_repo


@pytest.fixture(params=["jsonl", "postgres"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return make_repo(request.param, tmp_path, request)


def test_is_a_session_repo(repo: Any) -> None:
    assert isinstance(repo, SessionRepo)
    s = repo.create(cwd="/home/dev/app", metadata={"agent": "coder"})
    assert s.header.cwd == "/home/dev/app" and s.header.version == 3
    s.close()
    (meta,) = repo.list()
    assert (meta.id, meta.cwd, meta.metadata, meta.version) == (
        s.id,
        "/home/dev/app",
        {"agent": "coder"},
        3,
    )


def test_open_by_meta_id_and_prefix(repo: Any) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("hello"))
    s.close()
    (meta,) = repo.list()
    for target in (meta, s.id, s.id[:8], meta.path):
        with repo.open(target) as opened:
            assert opened.id == s.id and len(opened.entries()) == 1
    for bad in ("0000dead", "bad id!"):
        with pytest.raises(SessionNotFoundError):
            repo.open(bad)


def test_ambiguous_prefix_is_refused(repo: Any) -> None:
    sessions = [repo.create(cwd="/w") for _ in range(40)]
    for s in sessions:
        s.close()
    counts: dict[str, int] = {}
    for s in sessions:
        counts[s.id[0]] = counts.get(s.id[0], 0) + 1
    shared = next(p for p, n in counts.items() if n > 1)
    with pytest.raises(SessionNotFoundError, match="ambiguous"):
        repo.open(shared)


def test_list_newest_first_with_first_prompt_and_name(repo: Any) -> None:
    a = repo.create(cwd="/proj/a")
    a.append_message(user("first question in a"))
    a.append_message(reply("answer"))
    a.set_name("Session A")
    a.close()
    time.sleep(0.01)
    b = repo.create(cwd="/proj/b")
    b.append_message(user("question in b"))
    b.close()
    listed = repo.list(full=True)
    assert [m.id for m in listed] == [b.id, a.id]
    assert listed[1].first_prompt == "first question in a" and listed[1].name == "Session A"
    assert listed[0].first_prompt == "question in b" and listed[0].name is None
    assert listed[0].cwd == "/proj/b" and listed[0].size > 0 and listed[0].modified > 0
    assert [m.id for m in repo.list(cwd="/proj/a")] == [a.id]
    assert repo.latest("/proj/a").id == a.id
    assert repo.list(cwd="/nowhere") == []


def test_one_writer_and_delete(repo: Any) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("x"))
    with pytest.raises(SessionLockedError):
        repo.open(s.id)  # a second writer
    with pytest.raises(SessionLockedError):
        repo.delete(s.id)  # still open for appending
    with repo.open(s.id, read_only=True) as ro:  # readers are welcome
        assert len(ro.entries()) == 1
        with pytest.raises(SessionReadOnlyError):
            ro.append_message(user("y"))
    s.close()
    repo.open(s.id).close()  # released on close
    (meta,) = repo.list()
    repo.delete(meta)
    assert repo.list() == []
    with pytest.raises(SessionNotFoundError):
        repo.open(s.id)


def build_source(repo: Any) -> tuple[Any, ...]:
    s = repo.create(cwd="/w", metadata={"agent": "coder"})
    u1 = s.append_message(user("one"))
    a1 = s.append_message(reply("two"))
    s.set_label(a1.id, "good")
    u2 = s.append_message(user("three"))
    a2 = s.append_message(reply("four"))
    return s, u1, a1, u2, a2


def test_fork_at_before_and_whole(repo: Any) -> None:
    s, u1, a1, u2, a2 = build_source(repo)
    at = repo.fork(s, u2.id, position="at")
    assert [e.id for e in at.branch() if e.type == "message"] == [u1.id, a1.id, u2.id]
    assert at.header.parent_session and at.header.metadata == {"agent": "coder"}
    assert at.id != s.id and at.labels() == {a1.id: "good"}
    before = repo.fork(s, u2.id, position="before")
    assert [e.id for e in before.branch() if e.type == "message"] == [u1.id, a1.id]
    whole = repo.fork(s)
    assert whole.context().messages == s.context().messages
    empty = repo.fork(s, u1.id, position="before")
    assert empty.context().messages == []
    for f in (at, before, whole, empty):
        f.close()
    s.close()
    with repo.open(at.id) as reopened:  # a fork is a session like any other
        reopened.append_message(reply("new answer"))
        assert reopened.branch()[-1].parent_id == u2.id
    with repo.open(at.id, read_only=True) as again:
        assert again.context().messages[-1].content[0].text == "new answer"
        assert again.labels() == {a1.id: "good"}
    by_id = repo.fork(s.id, a2.id, position="at")
    assert len(by_id.context().messages) == 4
    by_id.close()
    with pytest.raises(ValueError):
        repo.fork(s.id, u1.id, position="after")
    with pytest.raises(KeyError):
        repo.fork(s.id, "00000000")


def test_tree_labels_compaction_and_settings_survive_reopening(repo: Any) -> None:
    s = repo.create(cwd="/w")
    u1 = s.append_message(user("one"))
    s.append_message(call("c1", "read", path="a.txt"))
    s.append_message(result("c1", "contents"))
    a1 = s.append_message(reply("two"))
    s.append_model_change("openai", "gpt-x")
    s.append_thinking_level_change("high")
    s.append_active_tools_change(["read"])
    s.set_label(u1.id, "start")
    s.move_to(u1.id, summary="tried reading a file")  # a branch with its summary
    s.append_message(reply("another way"))
    s.append_compaction("summary so far", first_kept_entry_id=u1.id, tokens_before=1234)
    s.append_message(user("after compaction"))
    s.set_label(a1.id, None)
    s.set_name("tree")
    live = [e.to_dict() for e in s.entries()]
    context, leaf = s.context(), s.leaf_id
    s.sync()
    s.close()
    with repo.open(s.id, read_only=True) as again:
        assert again.diagnostics == []
        assert [e.to_dict() for e in again.entries()] == live
        assert again.leaf_id == leaf and again.context() == context
        assert again.labels() == {u1.id: "start"} and again.name == "tree"
        assert again.context(a1.id).model is None  # a1's branch comes before the change
    assert repo.list(full=True)[0].name == "tree"


@pytest.mark.parametrize("seed", range(2))
def test_generated_trees_round_trip(repo: Any, seed: int) -> None:
    built, parents = random_tree(seed, 150)
    s = repo.create(cwd="/gen")
    for entry in built.entries():
        s.append_entry(
            SessionEntry(entry.type, entry.id, entry.parent_id, entry.timestamp, entry.data)
        )
    s.close()
    with repo.open(s.id, read_only=True) as again:
        assert [e.to_dict() for e in again.entries()] == [e.to_dict() for e in built.entries()]
        assert again.leaf_id == built.leaf_id
        for entry_id in list(parents)[::13]:
            assert again.context(entry_id) == built.context(entry_id)

"""JsonlSessionRepo: layout, create/open/list/delete/fork, root confinement."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from harnessc.runtime.session import (
    JsonlSessionRepo,
    SessionError,
    SessionLockedError,
    SessionNotFoundError,
    SessionRepo,
    cwd_slug,
)

from ._helpers import reply, user


def test_slug_matches_pi() -> None:
    assert cwd_slug("/home/dev/projects/tinycli") == "--home-dev-projects-tinycli--"
    assert cwd_slug("C:\\work\\x") == "--C--work-x--"
    assert cwd_slug("/") == "----"


def test_create_writes_the_header_in_pi_layout(repo: JsonlSessionRepo, tmp_path: Path) -> None:
    assert isinstance(repo, SessionRepo)
    s = repo.create(cwd="/home/dev/app", metadata={"agent": "coder"})
    assert s.path is not None
    path = Path(s.path)
    assert path.parent == repo.root / "--home-dev-app--"
    stamp = s.header.timestamp.replace(":", "-").replace(".", "-")
    assert path.name == f"{stamp}_{s.id}.jsonl"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f-]{36}\.jsonl", path.name)
    line = path.read_text().splitlines()[0]
    assert json.loads(line) == s.header.to_dict()
    assert line.startswith('{"type":"session","version":3,"id":')
    s.close()


def test_open_by_meta_id_prefix_and_path(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("hello"))
    s.close()
    (meta,) = repo.list()
    for target in (meta, s.id, s.id[:8], s.path, Path(s.path or "")):
        opened = repo.open(target)
        assert opened.id == s.id and len(opened.entries()) == 1
        opened.close()
    with pytest.raises(SessionNotFoundError):
        repo.open("0000dead")
    with pytest.raises(SessionNotFoundError):
        repo.open("../../etc/passwd-ish")  # a path that does not exist
    with pytest.raises(SessionNotFoundError):
        repo.open("bad id!")


def test_ambiguous_prefix_is_refused(repo: JsonlSessionRepo) -> None:
    sessions = [repo.create(cwd="/w") for _ in range(40)]
    for s in sessions:
        s.close()
    prefixes: dict[str, int] = {}
    for s in sessions:
        prefixes[s.id[0]] = prefixes.get(s.id[0], 0) + 1
    shared = next(p for p, n in prefixes.items() if n > 1)
    with pytest.raises(SessionNotFoundError, match="ambiguous"):
        repo.open(shared)


def test_ids_never_leave_the_root(repo: JsonlSessionRepo, tmp_path: Path) -> None:
    outside = JsonlSessionRepo(tmp_path / "elsewhere").create(cwd="/w")
    outside.close()
    assert outside.path is not None
    # a symlink inside the root pointing at a file outside it
    link_dir = repo.root / "--w--"
    link_dir.mkdir(parents=True)
    (link_dir / Path(outside.path).name).symlink_to(outside.path)
    with pytest.raises(SessionError, match="outside the session root"):
        repo.open(outside.id)
    with pytest.raises(SessionError, match="outside the session root"):
        repo.delete(outside.path)
    assert Path(outside.path).exists()
    # an explicit path is the caller's choice
    repo.open(outside.path, read_only=True)


def test_parent_session_is_data_only(repo: JsonlSessionRepo, tmp_path: Path) -> None:
    s = repo.create(cwd="/w", parent_session="/etc/shadow")
    s.close()
    opened = repo.open(s.id)
    assert opened.header.parent_session == "/etc/shadow"
    assert opened.entries() == []
    opened.close()


def test_list_newest_first_with_first_prompt_and_name(repo: JsonlSessionRepo) -> None:
    a = repo.create(cwd="/proj/a")
    a.append_message(user("first question in a"))
    a.append_message(reply("answer"))
    a.set_name("Session A")
    a.close()
    time.sleep(0.01)
    b = repo.create(cwd="/proj/b")
    b.append_message(user("question in b"))
    b.close()
    listed = repo.list()
    assert [m.id for m in listed] == [b.id, a.id]
    assert listed[1].first_prompt == "first question in a" and listed[1].name == "Session A"
    assert listed[0].first_prompt == "question in b" and listed[0].name is None
    assert listed[0].cwd == "/proj/b" and listed[0].size > 0 and listed[0].modified > 0
    assert [m.id for m in repo.list(cwd="/proj/a")] == [a.id]
    assert repo.latest("/proj/a").id == a.id  # type: ignore[union-attr]
    assert repo.list(cwd="/nowhere") == []


def test_list_full_finds_a_late_rename(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    for i in range(100):
        s.append_message(user(f"message {i} " + "x" * 1000))
    s.set_name("late name")
    s.close()
    assert repo.list()[0].name is None  # past the head list() reads
    assert repo.list(full=True)[0].name == "late name"


def test_list_skips_unreadable_files(repo: JsonlSessionRepo) -> None:
    good = repo.create(cwd="/w")
    good.close()
    directory = repo.root / "--w--"
    (directory / "2024-01-01T00-00-00-000Z_garbage.jsonl").write_text("not json\n")
    (directory / "2024-01-01T00-00-00-000Z_empty.jsonl").write_text("")
    (directory / "notes.txt").write_text("ignored")
    listed = repo.list()
    assert [m.id for m in listed] == [good.id]
    assert len(repo.skipped) == 2


def test_delete(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("x"))
    with pytest.raises(SessionLockedError):
        repo.delete(s.id)  # still open for appending
    s.close()
    (meta,) = repo.list()
    repo.delete(meta)
    assert repo.list() == []
    with pytest.raises(SessionNotFoundError):
        repo.open(s.id)


def build_source(repo: JsonlSessionRepo):  # type: ignore[no-untyped-def]
    s = repo.create(cwd="/w", metadata={"agent": "coder"})
    u1 = s.append_message(user("one"))
    a1 = s.append_message(reply("two"))
    s.set_label(a1.id, "good")
    u2 = s.append_message(user("three"))
    a2 = s.append_message(reply("four"))
    return s, u1, a1, u2, a2


def test_fork_at_and_before(repo: JsonlSessionRepo) -> None:
    s, u1, a1, u2, a2 = build_source(repo)
    at = repo.fork(s, u2.id, position="at")
    assert [e.id for e in at.branch() if e.type == "message"] == [u1.id, a1.id, u2.id]
    assert at.header.parent_session == os.path.abspath(s.path or "")
    assert at.header.metadata == {"agent": "coder"} and at.id != s.id
    assert at.labels() == {a1.id: "good"}
    before = repo.fork(s, u2.id, position="before")
    assert [e.id for e in before.branch() if e.type == "message"] == [u1.id, a1.id]
    whole = repo.fork(s)  # the whole current branch
    assert [m for m in whole.context().messages] == s.context().messages
    empty = repo.fork(s, u1.id, position="before")
    assert empty.context().messages == []
    for f in (at, before, whole, empty):
        f.close()
    s.close()
    # forks are ordinary sessions that open and continue
    reopened = repo.open(at.id)
    answer = reopened.append_message(reply("new answer"))
    assert answer.parent_id == u2.id and reopened.branch()[-1].id == answer.id
    assert [e.id for e in reopened.branch() if e.type == "message"] == [
        u1.id,
        a1.id,
        u2.id,
        answer.id,
    ]
    assert reopened.context().messages[-1].content[0].text == "new answer"  # type: ignore[union-attr]
    reopened.close()
    with pytest.raises(ValueError):
        repo.fork(s.id, u1.id, position="after")  # type: ignore[arg-type]
    with pytest.raises(KeyError):
        repo.fork(s.id, "00000000")


def test_fork_by_id_of_a_closed_session(repo: JsonlSessionRepo) -> None:
    s, u1, a1, u2, a2 = build_source(repo)
    s.close()
    f = repo.fork(s.id, a2.id, position="at")
    assert len(f.context().messages) == 4
    f.close()
    assert len(repo.list()) == 2


def test_context_manager_closes_and_releases(repo: JsonlSessionRepo) -> None:
    with repo.create(cwd="/w") as s:
        s.append_message(user("x"))
    with repo.open(s.id) as again:
        assert len(again.entries()) == 1

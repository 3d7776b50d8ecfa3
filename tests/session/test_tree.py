"""The entry tree: append, leaf, branch, move_to, labels, name, context."""

from __future__ import annotations

import json
import random
import re

import pytest

from harnessc.runtime.core.messages import CustomMessage, TextContent, UserMessage
from harnessc.runtime.session import (
    JsonlSessionRepo,
    Session,
    SessionEntry,
    SessionHeader,
    SessionReadOnlyError,
)
from harnessc.runtime.session.session import BRANCH_SUMMARY_PREFIX, COMPACTION_SUMMARY_PREFIX

from ._helpers import reply, user


def texts(session: Session, entry_id: str | None = None) -> list[str]:
    out = []
    for m in session.context(entry_id).messages:
        content = m.content
        if isinstance(content, str):
            out.append(content)
        else:
            out.append("".join(c.text for c in content if isinstance(c, TextContent)))
    return out


def test_header_and_entry_ids_follow_pi() -> None:
    s = Session(SessionHeader.new(cwd="/w", metadata={"agent": "coder"}))
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", s.id)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", s.header.timestamp)
    first = s.append_message(user("hi"))
    second = s.append_message(reply("hello"))
    assert re.fullmatch(r"[0-9a-f]{8}", first.id)
    assert first.parent_id is None and second.parent_id == first.id
    assert s.header.to_dict() == {
        "type": "session",
        "version": 3,
        "id": s.id,
        "timestamp": s.header.timestamp,
        "cwd": "/w",
        "metadata": {"agent": "coder"},
    }
    assert list(second.to_dict())[:4] == ["type", "id", "parentId", "timestamp"]


def test_append_leaf_branch_and_entries() -> None:
    s = Session()
    assert s.leaf is None and s.branch() == [] and s.context().messages == []
    a = s.append_message(user("a"))
    b = s.append_message(reply("b"))
    c = s.append_message(user("c"))
    assert s.leaf is c and s.leaf_id == c.id
    assert [e.id for e in s.branch()] == [a.id, b.id, c.id]
    assert [e.id for e in s.branch(b.id)] == [a.id, b.id]
    assert s.entries() == [a, b, c]
    assert s.children(a.id) == [b]
    with pytest.raises(ValueError):
        s.append("nonsense")


def test_move_to_without_summary_branches_in_place() -> None:
    s = Session()
    a = s.append_message(user("a"))
    b = s.append_message(reply("b"))
    s.append_message(user("c"))
    assert s.move_to(a.id) is None
    assert s.leaf_id == a.id
    d = s.append_message(user("d"))
    assert d.parent_id == a.id
    assert texts(s) == ["a", "d"]
    assert {e.id for e in s.children(a.id)} == {b.id, d.id}
    # the move is a pi ``custom`` entry under the target, so pi (last entry = leaf)
    # continues on the same branch; it is no child in the tree
    marker = s.entries()[-2]
    assert marker.type == "custom" and marker.parent_id == a.id
    assert marker.data == {"customType": "harnessc.leaf", "data": {"targetId": a.id}}
    s.move_to(None)  # back before the first entry: a new root
    root2 = s.append_message(user("fresh"))
    assert root2.parent_id is None and texts(s) == ["fresh"]
    with pytest.raises(KeyError):
        s.move_to("ffffffff")


def test_move_to_with_summary_appends_branch_summary() -> None:
    s = Session()
    a = s.append_message(user("a"))
    s.append_message(reply("b"))
    old = s.append_message(user("c"))
    summary = s.move_to(a.id, summary="tried c", details={"readFiles": []})
    assert summary is not None and summary.type == "branch_summary"
    assert summary.parent_id == a.id and summary.data["fromId"] == old.id
    assert s.leaf_id == summary.id
    ctx = s.context()
    assert isinstance(ctx.messages[-1], CustomMessage)
    assert ctx.messages[-1].content.startswith(BRANCH_SUMMARY_PREFIX)
    assert "tried c" in ctx.messages[-1].content
    assert ctx.entry_ids == [a.id, summary.id]


def test_labels_and_name() -> None:
    s = Session()
    a = s.append_message(user("a"))
    assert s.name is None
    s.set_label(a.id, "start")
    s.set_name("first")
    s.set_name("second")
    assert s.labels() == {a.id: "start"} and s.label(a.id) == "start" and s.name == "second"
    s.set_label(a.id, None)
    assert s.labels() == {}
    with pytest.raises(KeyError):
        s.set_label("00000000", "x")
    assert texts(s) == ["a"]  # labels and names add nothing to the context


def test_context_custom_entries_settings_and_compaction() -> None:
    s = Session()
    s.append_model_change("openai", "gpt-4o")
    s.append_thinking_level_change("high")
    a = s.append_message(user("one"))
    s.append_message(reply("two"))
    s.append_custom("ext-state", {"n": 1})
    s.append_custom_message("note", "injected", display=False, details={"k": 1})
    s.append_active_tools_change(["read", "bash"])
    kept = s.append_message(user("three"))
    s.append_message(reply("four"))
    ctx = s.context()
    assert ctx.model == ("openai", "gpt-4o") and ctx.thinking_level == "high"
    # pi: an assistant message overwrites the model of a model_change before it
    assert ctx.pi_model == ("test", "m") and ctx.pi_thinking_level == "high"
    assert s.context(a.id).pi_model == ("openai", "gpt-4o")
    assert Session().context().pi_thinking_level == "off"
    assert Session().context().thinking_level is None
    assert ctx.active_tool_names == ["read", "bash"]
    assert texts(s) == ["one", "two", "injected", "three", "four"]
    note = ctx.messages[2]
    assert (
        isinstance(note, CustomMessage) and note.custom_type == "note" and note.details == {"k": 1}
    )
    s.append_compaction("SUMMARY", kept.id, 1234)
    s.append_message(user("five"))
    ctx = s.context()
    assert ctx.messages[0].content.startswith(COMPACTION_SUMMARY_PREFIX)  # type: ignore[union-attr]
    assert texts(s)[1:] == ["three", "four", "five"]
    assert "SUMMARY" in texts(s)[0]
    assert ctx.model == ("openai", "gpt-4o")  # settings come from the whole path
    # the context of an earlier entry ignores the later compaction
    assert texts(s, a.id) == ["one"]


def test_custom_message_with_content_blocks() -> None:
    s = Session()
    s.append_custom_message("img", [TextContent("look")])
    (message,) = s.context().messages
    assert isinstance(message, CustomMessage)
    assert message.content == [TextContent("look")]


def test_read_only_session_refuses_appends(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("x"))
    s.close()
    ro = repo.open(s.id, read_only=True)
    with pytest.raises(SessionReadOnlyError):
        ro.append_message(user("y"))


def random_tree(seed: int, n: int) -> tuple[Session, dict[str, str | None]]:
    """A session built by random appends and moves, and the parent map it should have."""
    rng = random.Random(seed)
    s = Session()
    parents: dict[str, str | None] = {}
    for i in range(n):
        if parents and rng.random() < 0.2:
            target = rng.choice(list(parents))
            if rng.random() < 0.5:
                entry = s.move_to(target, summary=f"left {i}")
                if entry is not None:
                    parents[entry.id] = target
            else:
                s.move_to(target)
            continue
        kind = rng.choice(["u", "a", "c", "m"])
        if kind == "u":
            e = s.append_message(UserMessage(f"u{i}"))
        elif kind == "a":
            e = s.append_message(reply(f"a{i}"))
        elif kind == "c":
            e = s.append_custom("x", {"i": i})
        else:
            e = s.append_custom_message("m", f"m{i}")
        parents[e.id] = e.parent_id
    return s, parents


@pytest.mark.parametrize("seed", range(5))
def test_generated_trees_round_trip_through_a_file(repo: JsonlSessionRepo, seed: int) -> None:
    built, parents = random_tree(seed, 200)
    s = repo.create(cwd="/gen")
    for entry in built.entries():
        s.append_entry(
            SessionEntry(entry.type, entry.id, entry.parent_id, entry.timestamp, entry.data)
        )
    s.close()
    reopened = repo.open(s.id, read_only=True)
    assert reopened.diagnostics == []
    assert [e.to_dict() for e in reopened.entries()] == [e.to_dict() for e in built.entries()]
    assert reopened.leaf_id == built.leaf_id
    for entry_id, parent in parents.items():
        got = reopened.get_entry(entry_id)
        assert got is not None and got.parent_id == parent
    # every path ends at a root and the contexts agree
    for entry_id in list(parents)[::17]:
        path = reopened.branch(entry_id)
        assert path[0].parent_id is None and path[-1].id == entry_id
        assert reopened.context(entry_id) == built.context(entry_id)
    # each line is compact JSON with the entry keys first
    assert s.path is not None
    for line in open(s.path, encoding="utf-8").read().splitlines()[1:]:
        obj = json.loads(line)
        assert line == json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        assert list(obj)[:4] == ["type", "id", "parentId", "timestamp"]

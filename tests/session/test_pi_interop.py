"""pi session files, both ways, on pi's real files and pi's own results.

Data: ``../shared/interop/pi-sessions/`` beside the repository (see its SOURCE.txt):
three real pi files (v1, as pi wrote them) and ``build-context-cases.json``, pi's
buildSessionContext tests with pi's results. ``pi_rules`` restates pi's reading rules;
it is first checked against pi's results, then used to read what harnessc writes and to
write what pi would append.
"""

from __future__ import annotations

import json
import lzma
import os
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.core.messages import (
    AssistantMessage,
    CustomMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harnessc.runtime.session import JsonlSessionRepo, Session, cwd_slug

from . import pi_rules


def _shared() -> Path | None:
    beside = Path(__file__).resolve().parents[2] / ".." / "shared"
    for candidate in (beside, Path(os.environ.get("HARNESSC_SHARED_DIR", "") or beside)):
        if (candidate / "interop" / "pi-sessions").is_dir():
            return candidate / "interop" / "pi-sessions"
    return None


PI_DATA = _shared()
pytestmark = pytest.mark.skipif(
    PI_DATA is None,
    reason="../shared/interop/pi-sessions/ (the shared data beside the repository) is absent; "
    "set HARNESSC_SHARED_DIR to the shared folder to run these tests",
)
CASES: list[dict[str, Any]] = (
    json.loads((PI_DATA / "build-context-cases.json").read_text()) if PI_DATA else []
)
REAL_FILES = ["before-compaction.head380", "before-compaction.tail", "large-session.head200"]


# -- harnessc's context in pi's LLM form --------------------------------------------


def llm(messages: list[Message]) -> list[dict[str, Any]]:
    """harnessc's context as pi's convertToLlm gives it (custom messages become user)."""
    out = []
    for m in messages:
        if isinstance(m, CustomMessage):
            content = m.content if isinstance(m.content, str) else [c.to_dict() for c in m.content]
            out.append({"role": "user", "content": content})
        else:
            out.append(m.to_dict())
    return out


def text(m: Message) -> str:
    return pi_rules._text(m.to_dict().get("content"))


def pi_context(path: Path, leaf: Any = None) -> dict[str, Any]:
    entries, last = pi_rules.open_session(path)
    return pi_rules.build_context(entries, leaf if leaf is not None else last)


def assert_same_context(session: Session, path: Path, leaf: str | None = None) -> int:
    """harnessc's context of ``session`` equals pi's reading of ``path``; returns its size."""
    mine = session.context()
    theirs = pi_context(path, leaf)
    expected = pi_rules.detailed(pi_rules.convert_to_llm(theirs["messages"]))
    assert pi_rules.detailed(llm(mine.messages)) == expected
    model = theirs["model"]
    assert mine.pi_model == ((model["provider"], model["modelId"]) if model else None)
    assert mine.pi_thinking_level == theirs["thinkingLevel"]
    return len(expected)


def write_file(root: Path, lines: list[dict[str, Any]], cwd: str = "/w") -> Path:
    header = lines[0]
    folder = root / cwd_slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = str(header["timestamp"]).replace(":", "-").replace(".", "-")
    path = folder / f"{stamp}_{header['id']}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def real_file(root: Path, name: str) -> Path:
    assert PI_DATA is not None
    data = lzma.decompress((PI_DATA / f"{name}.jsonl.xz").read_bytes())
    header = json.loads(data.split(b"\n", 1)[0])
    folder = root / cwd_slug(header["cwd"])
    folder.mkdir(parents=True, exist_ok=True)
    stamp = header["timestamp"].replace(":", "-").replace(".", "-")
    path = folder / f"{stamp}_{header['id']}.jsonl"
    path.write_bytes(data)
    return path


def assistant(text: str, *calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text), *calls],
        api="anthropic-messages",
        provider="anthropic",
        model="claude-test",
        usage=Usage(input=1, output=1, total_tokens=2),
        stop_reason="toolUse" if calls else "stop",
    )


# -- pi's own results ------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_pi_rules_in_the_tests_reproduce_pi(case: dict[str, Any]) -> None:
    leaf = case["leaf"] if case["leaf"] is not None else pi_rules._UNDEFINED
    ctx = pi_rules.build_context(json.loads(json.dumps(case["entries"])), leaf)
    assert pi_rules.summary(pi_rules.convert_to_llm(ctx["messages"])) == case["pi"]["llm"]
    assert ctx["model"] == case["pi"]["model"]
    assert ctx["thinkingLevel"] == case["pi"]["thinkingLevel"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_every_case_gives_pis_context(case: dict[str, Any], tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "case", "timestamp": "t", "cwd": "/w"}
    path = write_file(tmp_path, [header, *case["entries"]])
    repo = JsonlSessionRepo(tmp_path)
    for read_only in (True, False):
        session = repo.open(str(path), read_only=read_only)
        ctx = session.context(case["leaf"])
        assert pi_rules.summary(llm(ctx.messages)) == case["pi"]["llm"]
        model = case["pi"]["model"]
        assert ctx.pi_model == (model["provider"], model["modelId"])
        assert ctx.pi_thinking_level == case["pi"]["thinkingLevel"]
        session.close()
    # and the same through a Session built from the entries with the case's leaf
    from harnessc.runtime.session import SessionEntry

    entries = [SessionEntry.from_dict(e) for e in case["entries"]]
    session = Session(entries=entries, leaf_id=case["leaf"])
    assert pi_rules.summary(llm(session.context().messages)) == case["pi"]["llm"]


# -- pi's real files ---------------------------------------------------------------------


def test_real_files_list_with_pis_fields(tmp_path: Path) -> None:
    paths = {name: real_file(tmp_path, name) for name in REAL_FILES}
    repo = JsonlSessionRepo(tmp_path)
    metas = {m.path: m for m in repo.list()}
    assert repo.skipped == []
    for path in paths.values():
        meta = metas[str(path)]
        header = json.loads(path.read_text().split("\n", 1)[0])
        assert (meta.id, meta.cwd, meta.version) == (header["id"], header["cwd"], 1)
    large = metas[str(paths["large-session.head200"])]
    assert large.first_prompt is not None and large.first_prompt.strip()


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_files_open_with_pis_context(name: str, tmp_path: Path) -> None:
    path = real_file(tmp_path, name)
    original = path.read_bytes()
    repo = JsonlSessionRepo(tmp_path)
    first = repo.open(str(path), read_only=True)
    count = assert_same_context(first, path)
    assert first.header.version == 3
    # the ids are stable: a second read gives the same ones
    again = repo.open(str(path), read_only=True)
    assert [e.id for e in again.entries()] == [e.id for e in first.entries()]
    assert path.read_bytes() == original  # reading never writes
    if name == "before-compaction.head380":
        # the v1 compaction keeps entries from firstKeptEntryIndex 293 (line 294):
        # summary + 66 kept entries + 20 after, all of them messages here
        assert count == 1 + 66 + 20
        compaction = next(e for e in first.entries() if e.type == "compaction")
        assert compaction.data["firstKeptEntryId"] == first.entries()[292].id
        assert "firstKeptEntryIndex" not in compaction.data
    # opening for writing rewrites the file in version 3, as pi does, with the same ids
    writable = repo.open(str(path))
    assert [e.id for e in writable.entries()] == [e.id for e in first.entries()]
    writable.close()
    assert json.loads(path.read_text().split("\n", 1)[0])["version"] == 3
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert [e.id for e in repo.open(str(path), read_only=True).entries()] == [
        e.id for e in first.entries()
    ]
    assert assert_same_context(repo.open(str(path), read_only=True), path) == count


def test_bash_execution_carries_pis_truncation_note(tmp_path: Path) -> None:
    path = real_file(tmp_path, "before-compaction.tail")
    session = JsonlSessionRepo(tmp_path).open(str(path), read_only=True)
    texts = [text(m) for m in session.context().messages if isinstance(m, UserMessage)]
    note = (
        "[Output truncated. Full output: "
        "/var/folders/49/l4171l3n219_xwq30fmyzr8w0000gn/T/pi-bash-a4cd2460b5b4e0be.log]"
    )
    (truncated,) = [t for t in texts if t.startswith("Ran `find .`")]
    assert truncated.endswith("\n\n" + note)
    (plain,) = [t for t in texts if t.startswith("Ran `ls`")]
    assert "Output truncated" not in plain


def test_fork_at_an_id_of_a_v1_file_carries_the_migrated_fields(tmp_path: Path) -> None:
    path = real_file(tmp_path, "before-compaction.head380")
    repo = JsonlSessionRepo(tmp_path)
    source = repo.open(str(path), read_only=True)
    entries = source.entries()
    after_compaction = entries[-1].id  # an id the source file does not hold
    fork = repo.fork(str(path), after_compaction, position="at")
    fork.close()
    assert fork.path is not None
    lines = [json.loads(line) for line in Path(fork.path).read_text().splitlines()]
    assert lines[0]["version"] == 3 and lines[0]["parentSession"] == str(path)
    (compaction,) = [line for line in lines if line["type"] == "compaction"]
    assert compaction["firstKeptEntryId"] == entries[292].id
    assert "firstKeptEntryIndex" not in compaction
    assert all(line["id"] and "parentId" in line for line in lines[1:])
    forked = repo.open(fork.id, read_only=True)
    assert assert_same_context(forked, Path(fork.path)) == 87
    assert [m.to_dict() for m in forked.context().messages] == [
        m.to_dict() for m in source.context().messages
    ]
    # a fork before a message in the kept part
    kept = entries[300]
    early = repo.fork(str(path), kept.id, position="before")
    early.close()
    assert [e.id for e in early.entries()] == [e.id for e in entries[:300]]


@pytest.mark.parametrize("name", REAL_FILES)
def test_continue_a_real_file_both_ways(name: str, tmp_path: Path) -> None:
    path = real_file(tmp_path, name)
    repo = JsonlSessionRepo(tmp_path)
    # harnessc continues pi's file; pi reads the result
    session = repo.open(str(path))
    session.append_message(UserMessage("harnessc asks"))
    session.append_message(assistant("harnessc answers"))
    session.close()
    mine = repo.open(str(path), read_only=True)
    before = assert_same_context(mine, path)
    assert before > 2
    # pi continues the file harnessc wrote; harnessc reads the result
    pi_rules.append_message(path, {"role": "user", "content": "pi asks", "timestamp": 1}, "t")
    pi_rules.append_message(path, assistant("pi answers").to_dict(), "t")
    theirs = repo.open(str(path), read_only=True)
    size = assert_same_context(theirs, path)
    assert [text(m) for m in theirs.context().messages[-4:]] == [
        "harnessc asks",
        "harnessc answers",
        "pi asks",
        "pi answers",
    ]
    assert size == before + 2


# -- sessions harnessc writes, read by pi's rules -------------------------------------------


def written_types(path: Path) -> set[str]:
    return {json.loads(line)["type"] for line in path.read_text().splitlines()[1:]}


def test_a_harnessc_session_reads_the_same_by_pis_rules(tmp_path: Path) -> None:
    repo = JsonlSessionRepo(tmp_path)
    s = repo.create(cwd="/w")
    assert s.path is not None
    path = Path(s.path)
    s.append_model_change("openai", "gpt-4o")
    s.append_thinking_level_change("high")
    s.append_active_tools_change(["read", "bash"])
    first = s.append_message(UserMessage("read a.txt"))
    s.append_message(assistant("", ToolCall(id="c1", name="read", arguments={"path": "a.txt"})))
    s.append_message(
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent("A")])
    )
    s.append_message(assistant("it says A"))
    s.append_custom("ext-state", {"n": 1})
    s.append_custom_message("note", "injected text", display=False)
    s.set_label(first.id, "start")
    s.set_name("a name")
    kept = s.append_message(UserMessage("go on"))
    s.append_message(assistant("going on"))
    s.sync()
    assert_same_context(s, path)
    s.append_compaction("what happened", kept.id, 1000)
    s.append_message(UserMessage("after compaction"))
    s.sync()
    assert_same_context(s, path)
    # a tree move without a summary: pi's leaf (the last entry) is on the new branch
    target = s.branch()[-2].id
    s.move_to(target)
    s.sync()
    assert_same_context(s, path)
    s.append_message(UserMessage("new branch"))
    s.sync()
    assert_same_context(s, path)
    # a move with a branch summary, then back to the root
    s.move_to(kept.id, summary="tried something")
    s.sync()
    assert_same_context(s, path)
    assert text(s.context().messages[-1]).endswith("tried something</summary>")
    s.move_to(None)
    s.sync()
    assert_same_context(s, path)
    assert s.context().messages == []
    s.append_message(UserMessage("fresh start"))
    s.close()
    reopened = repo.open(str(path), read_only=True)
    assert_same_context(reopened, path)
    assert written_types(path) <= pi_rules.PI_ENTRY_TYPES
    assert "leaf" not in written_types(path) and "active_tools_change" not in written_types(path)


def test_pi_continues_after_a_harnessc_tree_move(tmp_path: Path) -> None:
    """The issue's case: a file ending with a tree move, continued by pi, then by harnessc."""
    repo = JsonlSessionRepo(tmp_path)
    s = repo.create(cwd="/w")
    assert s.path is not None
    path = Path(s.path)
    a = s.append_message(UserMessage("a"))
    s.append_message(assistant("b"))
    s.append_message(UserMessage("abandoned"))
    s.append_message(assistant("abandoned reply"))
    s.move_to(a.id)
    s.close()
    pi_rules.append_message(path, assistant("pi on the new branch").to_dict(), "t")
    pi_rules.append_message(path, {"role": "user", "content": "pi asks", "timestamp": 1}, "t")
    s = repo.open(str(path))
    assert [text(m) for m in s.context().messages] == ["a", "pi on the new branch", "pi asks"]
    assert_same_context(s, path)
    assert s.diagnostics == []
    s.append_message(assistant("harnessc answers"))
    s.close()
    assert_same_context(repo.open(str(path), read_only=True), path)


def test_old_harnessc_entry_types_are_still_read(tmp_path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "old", "timestamp": "t", "cwd": "/w"}

    def message(entry_id: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        return {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "t",
            "message": {"role": role, "content": content, "timestamp": 1},
        }

    lines = [
        header,
        {
            "type": "active_tools_change",
            "id": "t1",
            "parentId": None,
            "timestamp": "t",
            "activeToolNames": ["read"],
        },
        message("u1", "t1", "user", "one"),
        message("a1", "u1", "assistant", "two"),
        {"type": "leaf", "id": "l1", "parentId": "a1", "timestamp": "t", "targetId": "u1"},
    ]
    path = write_file(tmp_path, lines)
    repo = JsonlSessionRepo(tmp_path)
    s = repo.open(str(path))
    assert s.leaf_id == "u1" and s.context().active_tool_names == ["read"]
    assert [text(m) for m in s.context().messages] == ["one"]
    s.append_message(UserMessage("again"))
    fork = repo.fork(s)
    s.close()
    fork.close()
    assert fork.path is not None
    # the fork writes the old active-tools record in its pi form
    assert written_types(Path(fork.path)) <= pi_rules.PI_ENTRY_TYPES
    assert repo.open(fork.id, read_only=True).context().active_tool_names == ["read"]


def test_pi_continuing_an_old_file_that_ends_with_a_leaf_entry(tmp_path: Path) -> None:
    """pi takes an old ``leaf`` entry for an ordinary entry (the last one: its leaf) on the
    branch it ends; what pi appends under it is read on that branch, not cut off."""
    header = {"type": "session", "version": 3, "id": "old", "timestamp": "t", "cwd": "/w"}
    lines = [
        header,
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "t",
            "message": {"role": "user", "content": "one", "timestamp": 1},
        },
        {
            "type": "message",
            "id": "u2",
            "parentId": "u1",
            "timestamp": "t",
            "message": {"role": "user", "content": "abandoned", "timestamp": 1},
        },
        {"type": "leaf", "id": "l1", "parentId": "u2", "timestamp": "t", "targetId": "u1"},
    ]
    path = write_file(tmp_path, lines)
    pi_rules.append_message(path, assistant("pi answers").to_dict(), "t")
    pi_rules.append_message(path, {"role": "user", "content": "pi asks", "timestamp": 1}, "t")
    s = JsonlSessionRepo(tmp_path).open(str(path), read_only=True)
    assert [text(m) for m in s.context().messages] == ["one", "abandoned", "pi answers", "pi asks"]
    assert_same_context(s, path)

"""A session file written the way pi writes it opens, and ours follow the same format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harnessc.runtime.core.messages import (
    AssistantMessage,
    CustomMessage,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from harnessc.runtime.session import JsonlSessionRepo, encode_line
from harnessc.runtime.session.jsonl import js_number

from ._helpers import PI_FILE, PI_ROOT


def test_pi_file_lists_and_opens() -> None:
    repo = JsonlSessionRepo(PI_ROOT)
    (meta,) = repo.list()
    assert meta.id == "5f0c3a2e-8d1b-4c7e-9a65-2b7f4e1d9c08"
    assert meta.cwd == "/home/dev/projects/tinycli"
    assert meta.first_prompt == "Add a --verbose flag to cli.py that prints each step"
    assert meta.name == "Verbose flag for tinycli"
    assert repo.list(cwd="/home/dev/projects/tinycli")[0].id == meta.id
    s = repo.open(meta, read_only=True)
    assert s.diagnostics == []
    assert len(s.entries()) == 23
    assert s.leaf_id == "608193a4"
    assert s.labels() == {"718293a4": "verbose-flag"}


def test_pi_file_contexts() -> None:
    s = JsonlSessionRepo(PI_ROOT).open(str(PI_FILE), read_only=True)
    ctx = s.context()  # the branch that came back to 718293a4 with a summary
    assert ctx.model == ("anthropic", "claude-sonnet-4-5") and ctx.thinking_level == "medium"
    kinds = [type(m).__name__ for m in ctx.messages]
    assert kinds == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
        "CustomMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    first = ctx.messages[1]
    assert isinstance(first, AssistantMessage)
    assert isinstance(first.content[0], ThinkingContent)
    assert first.content[0].thinking_signature == "EqQBCkYIBxgCKkBf3s9"
    assert isinstance(first.content[2], ToolCall) and first.content[2].arguments == {
        "path": "cli.py"
    }
    assert first.usage.cache_write == 2837 and first.stop_reason == "toolUse"
    summary = ctx.messages[6]
    assert isinstance(summary, CustomMessage) and "abandoned branch" in str(summary.content)

    compacted = s.context("3d4e5f71")  # the other branch, compacted
    assert isinstance(compacted.messages[0], CustomMessage)
    assert "Add a --verbose flag to tinycli" in str(compacted.messages[0].content)
    assert compacted.entry_ids[1] == "a4b5c6d7"  # firstKeptEntryId
    roles = [m.role for m in compacted.messages]
    assert roles == [
        "custom",
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",  # pi's bashExecution message, as the model sees it
        "custom",  # custom_message; the custom entry before it is left out
        "user",
        "assistant",
    ]
    bash = compacted.messages[5]
    assert isinstance(bash, UserMessage) and "git status --short" in str(bash.content)
    result = compacted.messages[4]
    assert isinstance(result, ToolResultMessage) and result.tool_name == "bash"


def test_every_pi_line_round_trips_byte_for_byte() -> None:
    data = PI_FILE.read_bytes()
    s = JsonlSessionRepo(PI_ROOT).open(str(PI_FILE), read_only=True)
    lines = data.splitlines(keepends=True)
    assert encode_line(s.header.to_dict()) == lines[0]
    assert [encode_line(e.to_dict()) for e in s.entries()] == lines[1:]


def test_fork_of_a_pi_file_keeps_its_bytes(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(PI_ROOT, root)
    repo = JsonlSessionRepo(root)
    source = repo.list()[0]
    fork = repo.fork(source)  # the whole current branch
    fork.close()
    assert fork.path is not None
    fork_lines = Path(fork.path).read_bytes().splitlines(keepends=True)
    source_lines = {line for line in PI_FILE.read_bytes().splitlines(keepends=True)}
    assert json.loads(fork_lines[0])["parentSession"] == source.path
    # the 11 entries on the path of the leaf, byte for byte, then the label set off it
    assert len(fork_lines) == 1 + 11 + 1
    assert all(line in source_lines for line in fork_lines[1:-1])
    label = json.loads(fork_lines[-1])
    assert label["type"] == "label" and label["targetId"] == "718293a4"
    assert repo.open(fork.id, read_only=True).labels() == {"718293a4": "verbose-flag"}


def test_appending_to_a_pi_file(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    shutil.copytree(PI_ROOT, root)
    repo = JsonlSessionRepo(root)
    s = repo.open(repo.list()[0])
    before = Path(s.path or "").read_bytes()
    entry = s.append_message(UserMessage("and one more thing", timestamp=1733234900000))
    s.close()
    after = Path(s.path or "").read_bytes()
    assert after.startswith(before)
    line = after[len(before) :]
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line.decode() == (
        f'{{"type":"message","id":"{entry.id}","parentId":"608193a4",'
        f'"timestamp":"{entry.timestamp}","message":{{"role":"user",'
        '"content":"and one more thing","timestamp":1733234900000}}\n'
    )


def test_numbers_are_spelled_like_javascript() -> None:
    assert encode_line({"a": 0.0, "b": 1.8e-05, "c": 2.5, "d": 1e21, "e": 1e-7}) == (
        b'{"a":0,"b":0.000018,"c":2.5,"d":1e+21,"e":1e-7}\n'
    )
    assert js_number(-0.000123) == "-0.000123"
    assert js_number(123456789012345680000.0) == "123456789012345680000"
    # strings that look like numbers are left alone
    assert encode_line({"s": "1e-05 and 5.0"}) == b'{"s":"1e-05 and 5.0"}\n'
    assert encode_line({"u": "ünï", "nan": float("nan")}) == '{"u":"ünï","nan":null}\n'.encode()
    # a lone surrogate cannot be UTF-8: written as U+FFFD (and read so, see below)
    assert encode_line({"lone": "\ud800"}) == '{"lone":"\ufffd"}\n'.encode()

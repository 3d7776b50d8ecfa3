"""Hostile session files: huge lines, deep JSON, wrong types, non-finite numbers, a path
traversal in parentSession, symlinks out of the sessions folder. Each opens with
diagnostics or is refused with a SessionError; nothing crashes, nothing outside the
sessions folder is read (a FIFO outside would block any reader forever)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.core.options import AgentHarnessStreamOptions
from harnessc.runtime.providers.base import Context, ProviderRequest
from harnessc.runtime.providers.convert import wire_messages
from harnessc.runtime.providers.openai_completions import build_openai_payload
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.session import JsonlSessionRepo, SessionError

HEADER = {
    "type": "session",
    "version": 3,
    "id": "0b1c2d3e-0000-4000-8000-000000000001",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "cwd": "/work",
}


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=True).encode() + b"\n"


def entry(kind: str, entry_id: str, parent: Any, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": "t", **fields}


USER = entry("message", "u1", None, message={"role": "user", "content": "hello", "timestamp": 1})


def deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def hostile_files() -> dict[str, bytes]:
    ok = line(HEADER) + line(USER)
    files = {
        "huge-line": ok
        + line(
            entry(
                "message",
                "a1",
                "u1",
                message={
                    "role": "assistant",
                    "content": [{"type": "text", "text": "x" * (20 << 20)}],
                },
            )
        ),
        "huge-line-no-newline": ok
        + b'{"type":"message","id":"z","parentId":"u1","message":{"role":"user","content":"'
        + b"y" * (20 << 20),
        "deep-json-entry": ok
        + b'{"type":"custom","id":"d1","parentId":"u1","data":'
        + deep(200_000)
        + b"}\n",
        "deep-json-message": ok
        + b'{"type":"message","id":"d2","parentId":"u1","message":{"role":"user","content":'
        + deep(100_000)
        + b"}}\n",
        "deep-json-header": b'{"type":"session","id":"x","metadata":' + deep(100_000) + b"}\n",
        "deep-json-last-line": ok + deep(100_000),
        "header-not-object": b"[1,2,3]\n" + line(USER),
        "header-wrong-types": line(
            {
                **HEADER,
                "version": "3",
                "cwd": 7,
                "timestamp": [1],
                "metadata": "m",
                "parentSession": 5,
            }
        )
        + line(USER),
        "empty": b"",
        "only-newlines": b"\n\n\n",
        "binary": bytes(range(256)) * 64,
        "nan-and-infinity": ok
        + b'{"type":"message","id":"a2","parentId":"u1","timestamp":NaN,"message":{"role":"assistant","timestamp":Infinity,"content":[{"type":"text","text":"hi"}],"usage":{"input":Infinity,"output":NaN,"cost":{"total":-Infinity}}}}\n',
        "huge-numbers": ok
        + line(
            entry(
                "message",
                "a3",
                "u1",
                message={
                    "role": "assistant",
                    "timestamp": 10**400,
                    "content": [],
                    "usage": {"input": 10**30, "totalTokens": -5},
                },
            )
        ),
        "invalid-utf8": ok
        + b'{"type":"message","id":"b1","parentId":"u1","message":{"role":"user","content":"\xff\xfe"}}\n',
        "lone-surrogates": ok
        + b'{"type":"message","id":"b2","parentId":"u1","message":{"role":"user","content":"\\udc80\\ud800"}}\n',
        "self-parent": ok
        + line(entry("message", "s1", "s1", message={"role": "user", "content": "me"})),
        "parent-cycle": ok
        + line(entry("message", "c1", "c2", message={"role": "user", "content": "a"}))
        + line(entry("message", "c2", "c1", message={"role": "user", "content": "b"})),
        "leaf-to-nowhere": ok + line(entry("leaf", "l1", "u1", targetId="nope")),
        "duplicate-ids": ok + line(USER) + line(USER),
        "unknown-entry-type": ok + line(entry("🤖", "q1", "u1", payload=[1, 2])),
    }
    wrong_types = [
        {"type": "message", "id": 5, "parentId": None},
        {"type": 5, "id": "w1", "parentId": None},
        {"type": "message", "id": "w2", "parentId": ["u1"]},
        entry("message", "w3", "u1", message="not an object"),
        entry("message", "w4", "u1", message={"role": "user", "content": 42}),
        entry(
            "message",
            "w5",
            "u1",
            message={
                "role": "user",
                "content": [{"type": "image"}, None, 3, {"type": "text", "text": 7}],
            },
        ),
        entry("message", "w6", "u1", message={"role": "assistant", "content": "text, not a list"}),
        entry(
            "message",
            "w7",
            "u1",
            message={
                "role": "assistant",
                "content": [{"type": "toolCall", "id": 1, "name": None, "arguments": "{}"}],
                "stopReason": ["x"],
                "errorMessage": {"a": 1},
                "usage": "lots",
            },
        ),
        entry(
            "message",
            "w8",
            "u1",
            message={
                "role": "toolResult",
                "toolCallId": None,
                "content": {"x": 1},
                "isError": "yes",
            },
        ),
        entry("message", "w9", "u1", message={"role": "wizard", "content": "?"}),
        entry(
            "message",
            "w10",
            "u1",
            message={"role": "custom", "customType": 3, "content": None, "display": "x"},
        ),
        entry("compaction", "w11", "u1", summary=None, firstKeptEntryId=12, tokensBefore="many"),
        entry("branch_summary", "w12", "u1", summary=["x"], fromId=None),
        entry("model_change", "w13", "u1", provider=None, modelId=3),
        entry("thinking_level_change", "w14", "u1", thinkingLevel="ludicrous"),
        entry("active_tools_change", "w15", "u1", activeToolNames="bash"),
        entry(
            "custom",
            "w16",
            "u1",
            customType="harnessc.pause",
            data={"pending_tool_calls": "x", "usage": [1]},
        ),
        entry("custom_message", "w17", "u1", customType=None, content=5, display="no"),
        entry("label", "w18", "u1", targetId=None, label=3),
        entry("session_info", "w19", "u1", name=["n"]),
    ]
    for number, item in enumerate(wrong_types):
        files[f"wrong-types-{number}"] = line(HEADER) + line(USER) + line(item)
    files["wrong-types-all"] = (
        line(HEADER) + line(USER) + b"".join(line(item) for item in wrong_types)
    )
    return files


def _with_timeout(func: Callable[[], Any], seconds: float, unblock: Callable[[], None]) -> Any:
    """Run ``func`` in a thread; if it is still running after ``seconds``, call ``unblock``
    (open the FIFO's other end) and fail: something tried to read outside."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = func()
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        unblock()
        thread.join(5)
        pytest.fail("blocked reading a file outside the sessions folder")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def exercise(path: Path, repo: JsonlSessionRepo) -> str:
    """Open read-only and for writing, build the context, run an agent on it."""
    try:
        session = repo.open(str(path), read_only=True)
    except SessionError as exc:
        assert str(path) in str(exc) or path.name in str(exc), str(exc)
        return "refused"
    context = session.context()
    session.close()
    try:
        session = repo.open(str(path))
    except SessionError:
        return "refused for writing"
    provider = ScriptedProvider(lambda context: "still works")  # compaction may ask too
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models={"main": Model(id="scripted", api="scripted", provider="test")},
            provider=provider,
        )
    )
    result = asyncio.run(harness.prompt("next"))
    assert result.status == "done" and result.text == "still works", result.reason
    # the history must also convert to a real wire payload
    model = Model(id="m", api="openai-completions", base_url="http://127.0.0.1:9/v1")
    request = ProviderRequest(
        model=model,
        context=Context(system_prompt="s", messages=harness.messages, tools=[]),
        stream_options=AgentHarnessStreamOptions(),
    )
    json.dumps(build_openai_payload(request))
    wire_messages(harness.messages)
    session.close()
    reopened = repo.open(str(path), read_only=True)
    assert reopened.context().messages[-1].text == "still works"
    reopened.close()
    _ = context
    return "opened" + (" with diagnostics" if session.diagnostics else "")


@pytest.mark.parametrize("name", list(hostile_files()))
def test_hostile_session_file(name: str, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    folder = root / "--work--"
    folder.mkdir(parents=True)
    path = folder / f"2026-01-01T00-00-00-000Z_{name}.jsonl"
    path.write_bytes(hostile_files()[name])
    repo = JsonlSessionRepo(root)
    outcome = exercise(path, repo)
    assert outcome
    listed = repo.list()  # listing never raises either
    assert len(listed) + len(repo.skipped) == 1


def _fifo_outside(tmp_path: Path) -> tuple[Path, Callable[[], None]]:
    outside = tmp_path / "outside"
    outside.mkdir()
    fifo = outside / "parent.jsonl"
    os.mkfifo(fifo)

    def unblock() -> None:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)

    return fifo, unblock


@pytest.mark.parametrize(
    "parent",
    [
        "{fifo}",
        "../../outside/parent.jsonl",
        "../../../../../../../../etc/shadow",
        "/dev/zero",
        "~root/.ssh/id_rsa",
    ],
)
def test_parent_session_is_never_followed(parent: str, tmp_path: Path) -> None:
    fifo, unblock = _fifo_outside(tmp_path)
    root = tmp_path / "sessions"
    folder = root / "--work--"
    folder.mkdir(parents=True)
    header = {**HEADER, "parentSession": parent.format(fifo=fifo)}
    path = folder / f"2026-01-01T00-00-00-000Z_{HEADER['id']}.jsonl"
    path.write_bytes(line(header) + line(USER))
    repo = JsonlSessionRepo(root)

    def everything() -> None:
        assert repo.list()[0].parent_session == header["parentSession"]
        repo.list(full=True)
        exercise(path, repo)
        fork = repo.fork(str(path))
        fork.close()
        repo.open(HEADER["id"], read_only=True).close()

    _with_timeout(everything, 10, unblock)


def test_symlinks_out_of_the_sessions_folder(tmp_path: Path) -> None:
    fifo, unblock = _fifo_outside(tmp_path)
    secret = tmp_path / "outside" / "secret.jsonl"
    secret.write_bytes(line({**HEADER, "id": "secret-id"}) + line(USER))
    root = tmp_path / "sessions"
    folder = root / "--work--"
    folder.mkdir(parents=True)
    (folder / "2026-01-01T00-00-00-000Z_fifo-id.jsonl").symlink_to(fifo)
    (folder / "2026-01-01T00-00-00-000Z_secret-id.jsonl").symlink_to(secret)
    (root / "--linked-dir--").symlink_to(tmp_path / "outside", target_is_directory=True)
    repo = JsonlSessionRepo(root)

    def everything() -> None:
        listed = repo.list()
        assert all(m.id != "secret-id" for m in listed), "listed a session outside the root"
        repo.list(full=True)
        for session_id in ("secret-id", "fifo-id"):
            with pytest.raises(SessionError):
                repo.open(session_id, read_only=True)
        assert repo.latest() is None

    _with_timeout(everything, 10, unblock)


def test_full_text_index_over_hostile_files(tmp_path: Path) -> None:
    from harnessc.runtime.session import SessionIndex

    fifo, unblock = _fifo_outside(tmp_path)
    secret = tmp_path / "outside" / "secret.jsonl"
    secret_entry = entry("message", "x1", None, message={"role": "user", "content": "zebrasecret"})
    secret.write_bytes(line({**HEADER, "id": "secret-id"}) + line(secret_entry))
    root = tmp_path / "sessions"
    folder = root / "--work--"
    folder.mkdir(parents=True)
    for number, (name, data) in enumerate(hostile_files().items()):
        (folder / f"2026-01-01T00-00-{number:02d}-000Z_{name}.jsonl").write_bytes(data)
    (folder / "2026-01-01T00-00-00-000Z_fifo-id.jsonl").symlink_to(fifo)
    (folder / "2026-01-01T00-00-00-000Z_secret-id.jsonl").symlink_to(secret)
    (root / "--linked-dir--").symlink_to(tmp_path / "outside", target_is_directory=True)

    def everything() -> tuple[Any, Any]:
        index = SessionIndex(root)
        index.refresh()
        return index.search("hello"), index.search("zebrasecret")

    hello, zebra = _with_timeout(everything, 20, unblock)
    assert hello, "the readable sessions are indexed"
    assert not zebra, "a file outside the sessions folder was indexed"

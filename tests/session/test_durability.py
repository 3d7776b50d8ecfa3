"""Crash safety: torn and corrupt lines, repair on the next append, SIGKILLed writers,
and one writer per session across processes."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.core.messages import AssistantMessage, ToolResultMessage, UserMessage
from harnessc.runtime.session import (
    JsonlSessionRepo,
    SessionFileError,
    SessionLockedError,
)

from ._helpers import reply, user

HOLDER = Path(__file__).parent / "_holder.py"


def make_session(repo: JsonlSessionRepo, n: int = 3) -> tuple[str, list[str]]:
    s = repo.create(cwd="/w")
    ids = [s.append_message(user(f"m{i}")).id for i in range(n)]
    s.close()
    assert s.path is not None
    return s.path, ids


def assert_valid_jsonl(path: str) -> list[dict]:
    data = Path(path).read_bytes()
    assert data.endswith(b"\n")
    return [json.loads(line) for line in data.splitlines()]


def test_torn_last_line_is_skipped_and_the_next_append_truncates_it(
    repo: JsonlSessionRepo,
) -> None:
    path, ids = make_session(repo)
    with open(path, "ab") as f:
        f.write(b'{"type":"message","id":"deadbeef","parentId":"')
    s = repo.open(path)
    assert [e.id for e in s.entries()] == ids
    (diag,) = s.diagnostics
    assert ":5: torn last line" in diag and "next append removes it" in diag
    entry = s.append_message(user("after the crash"))
    assert entry.parent_id == ids[-1]
    s.close()
    lines = assert_valid_jsonl(path)
    assert [line.get("id") for line in lines[1:]] == [*ids, entry.id]
    again = repo.open(path)
    assert again.diagnostics == [] and again.leaf_id == entry.id
    again.close()


def test_read_only_open_leaves_a_torn_file_alone(repo: JsonlSessionRepo) -> None:
    path, _ = make_session(repo)
    with open(path, "ab") as f:
        f.write(b'{"type":"mess')
    before = Path(path).read_bytes()
    s = repo.open(path, read_only=True)
    assert len(s.diagnostics) == 1
    assert Path(path).read_bytes() == before


def test_last_line_without_newline_is_kept_and_completed(repo: JsonlSessionRepo) -> None:
    path, ids = make_session(repo)
    Path(path).write_bytes(Path(path).read_bytes().rstrip(b"\n"))
    s = repo.open(path)
    assert s.diagnostics == [] and [e.id for e in s.entries()] == ids
    entry = s.append_message(user("next"))
    s.close()
    assert [line.get("id") for line in assert_valid_jsonl(path)[1:]] == [*ids, entry.id]


def test_corrupt_middle_line_is_reported_and_the_rest_kept(repo: JsonlSessionRepo) -> None:
    path, ids = make_session(repo, 5)
    lines = Path(path).read_bytes().splitlines(keepends=True)
    lines[3] = b'{"type":"message","id":"broken" garbage\n'  # entry ids[2]
    Path(path).write_bytes(b"".join(lines))
    s = repo.open(path)
    assert len(s.diagnostics) == 2
    assert ":4: corrupt line in the middle" in s.diagnostics[0]
    assert "lost in a corrupt line" in s.diagnostics[1] and ids[3] in s.diagnostics[1]
    assert [e.id for e in s.entries()] == [ids[0], ids[1], ids[3], ids[4]]
    # the orphan is attached to the entry before the gap, so the branch stays whole
    assert [e.id for e in s.branch()] == [ids[0], ids[1], ids[3], ids[4]]
    assert [m.content for m in s.context().messages] == ["m0", "m1", "m3", "m4"]
    entry = s.append_message(user("more"))
    s.close()
    # the corrupt line stays where it was (the file is never rewritten); the new entry
    # is a complete line after it
    data = Path(path).read_bytes().splitlines()
    assert data[3] == lines[3].rstrip(b"\n")
    assert json.loads(data[-1])["id"] == entry.id


def test_odd_lines_fall_back_to_line_by_line_reading(repo: JsonlSessionRepo) -> None:
    path, ids = make_session(repo, 3)
    lines = Path(path).read_bytes().splitlines(keepends=True)
    odd = [lines[0], lines[1], b'{"a":1},{"b":2}\n', b"\n", b"[1,\n", b"2]\n", *lines[2:]]
    Path(path).write_bytes(b"".join(odd))
    s = repo.open(path, read_only=True)
    assert [e.id for e in s.entries()] == ids
    assert [d.split(": ", 1)[0].rsplit(":", 1)[1] for d in s.diagnostics] == ["3", "5", "6"]


def test_not_a_session_file(repo: JsonlSessionRepo, tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"type":"message"}\n')
    with pytest.raises(SessionFileError, match="line 1 is not a session header"):
        repo.open(str(bad))
    bad.write_text("")  # pi's rule: an empty file opens as a new session
    opened = repo.open(str(bad))
    assert opened.entries() == [] and "empty file" in opened.diagnostics[0]
    opened.close()
    assert bad.read_bytes().startswith(b'{"type":"session","version":3,')


def _writer(root: str, path: str, seed: int) -> None:
    """Child process body: append entries of mixed sizes as fast as possible."""
    rng = random.Random(seed)
    session = JsonlSessionRepo(root).open(path)
    os.write(1, b"r")
    i = 0
    while True:
        size = rng.choice((10, 200, 3000, 300_000))
        session.append_message(UserMessage(f"{i} " + "x" * size))
        i += 1


def test_sigkill_writers_at_random_points(repo: JsonlSessionRepo, tmp_path: Path) -> None:
    """50 writers killed a few ms into their run: every reopen works, a torn tail is
    reported, and the next append leaves valid JSONL."""
    rng = random.Random(1234)
    torn = 0
    kills = 0
    for chain in range(10):
        path, _ = make_session(repo, 1)
        known = 2  # header + entry
        for k in range(5):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child never returns
                try:
                    os.close(read_end)
                    os.dup2(write_end, 1)
                    _writer(str(repo.root), path, chain * 10 + k)
                finally:
                    os._exit(0)
            os.close(write_end)
            assert os.read(read_end, 1) == b"r"
            os.close(read_end)
            time.sleep(rng.uniform(0.0005, 0.012))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            kills += 1
            data = Path(path).read_bytes()
            complete = data.count(b"\n")
            assert complete >= known  # nothing written before was lost
            known = complete
            s = repo.open(path)  # the dead writer's lock is gone
            assert len(s.entries()) == complete - 1
            if data.endswith(b"\n"):
                assert s.diagnostics == []
            else:
                torn += 1
                (diag,) = s.diagnostics
                assert "torn last line" in diag
            s.close()
            # the next append repairs: check on a copy, the chain goes on with the original
            copy = tmp_path / f"copy-{chain}-{k}.jsonl"
            shutil.copyfile(path, copy)
            c = repo.open(str(copy))
            entry = c.append_message(user("repair"))
            c.close()
            lines = assert_valid_jsonl(str(copy))
            assert len(lines) == complete + 1 and lines[-1]["id"] == entry.id
            again = repo.open(str(copy), read_only=True)
            assert again.diagnostics == [] and again.leaf_id == entry.id
            copy.unlink()
    assert kills == 50
    print(f"{torn} of {kills} kills left a torn line")


def test_second_writer_in_another_process_is_refused(repo: JsonlSessionRepo) -> None:
    path, _ = make_session(repo)
    proc = subprocess.Popen(
        [sys.executable, str(HOLDER), str(repo.root), path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        line = proc.stdout.readline().decode()
        assert line.startswith("ready"), line
        holder_pid = int(line.split()[1])
        with pytest.raises(SessionLockedError) as err:
            repo.open(path)
        assert err.value.pid == holder_pid
        assert f"process {holder_pid}" in str(err.value)
        with pytest.raises(SessionLockedError):
            repo.delete(path)
        # readers are welcome
        ro = repo.open(path, read_only=True)
        assert ro.context().messages[-1].content == "from the holder"
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    s = repo.open(path)  # released on close
    s.append_message(reply("mine now"))
    s.close()
    roles = [line.get("message", {}).get("role") for line in assert_valid_jsonl(path)]
    assert roles[-2:] == ["user", "assistant"]


def test_second_writer_in_the_same_process_is_refused(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    with pytest.raises(SessionLockedError, match="this process"):
        repo.open(s.id)
    s.close()
    repo.open(s.id).close()


def test_sync_fsyncs_and_close_is_idempotent(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("x"))
    s.sync()
    s.sync()
    s.close()
    s.close()
    with pytest.raises(Exception, match="closed"):
        s.append_message(user("y"))


def test_creating_a_session_leaves_its_fsync_to_the_first_sync(
    repo: JsonlSessionRepo, synced: list[int]
) -> None:
    """Creating runs on the event loop: no fsync there; the first sync (in a worker
    thread at the end of the turn) makes the file and its folder durable."""
    s = repo.create(cwd="/w")
    assert synced == []
    s.sync()
    assert len(synced) == 2  # the file, then its folder
    s.append_message(user("x"))
    s.close()
    assert len(synced) == 3
    reopened = repo.open(s.id)
    assert [e.role for e in reopened.entries()] == ["user"]
    reopened.close()


def test_sessions_created_together_share_one_fsync_of_their_folder(
    repo: JsonlSessionRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder fsync that began after a file was linked makes that file's entry
    durable: the sessions created before it need none of their own; a session created
    after it does."""
    import stat

    folders: list[int] = []
    files: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        (folders if stat.S_ISDIR(os.fstat(fd).st_mode) else files).append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    together = [repo.create(cwd="/w") for _ in range(5)]
    for s in together:
        s.append_message(user("x"))
        s.sync()
    assert (len(files), len(folders)) == (5, 1)
    later = repo.create(cwd="/w")
    later.sync()
    assert (len(files), len(folders)) == (6, 2)
    elsewhere = repo.create(cwd="/elsewhere")  # another folder: its own fsync
    elsewhere.close()
    assert (len(files), len(folders)) == (7, 3)
    for s in [*together, later]:
        s.close()
    assert (len(files), len(folders)) == (7, 3)
    assert len({os.path.dirname(s.path or "") for s in together}) == 1


def test_a_run_killed_while_a_tool_runs_loses_no_recorded_step(tmp_path: Path) -> None:
    """Every entry is written before the run goes on: a process SIGKILLed during its
    third tool call leaves the two finished steps and the reply that asked for the
    running call in its session file, which opens without a diagnostic."""
    from harnessc.testing import ProtocolServer, ScriptedResponse
    from harnessc.testing.streams import openai_events, openai_tool_call_events

    def script(request: Any) -> ScriptedResponse:
        done = sum(1 for m in request.json["messages"] if m["role"] == "tool")
        if done < 4:
            call = (f"call_{done}", "step", json.dumps({"n": done}))
            return ScriptedResponse.sse(openai_tool_call_events([call]))
        return ScriptedResponse.sse(openai_events(["all done"]))

    ran = tmp_path / "ran.txt"
    root = tmp_path / "sessions"
    with ProtocolServer() as server:
        server.set_handler(script)
        child = subprocess.run(
            [sys.executable, str(Path(__file__).parent / "_killed_run.py"), str(root)]
            + [f"{server.url}/v1"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "RAN_FILE": str(ran), "OPENAI_API_KEY": "sk-test"},
        )
        requests = len(server.requests)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert ran.read_text().split() == ["0", "1", "2"]
    assert requests == 3
    session = JsonlSessionRepo(root).open(child.stdout.strip(), read_only=True)
    assert session.diagnostics == []
    messages = [e.message for e in session.entries() if e.type == "message"]
    assert [m.role for m in messages if m is not None] == [
        "user",
        *["assistant", "toolResult"] * 2,
        "assistant",
    ]
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert calls == ["call_0", "call_1", "call_2"]  # the running call is on file
    results = [m.text for m in messages if isinstance(m, ToolResultMessage)]
    assert results == ["step 0 done", "step 1 done"]

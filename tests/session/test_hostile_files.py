"""Odd bytes, full disks, file size limits, file modes, leftovers and locked indexes
(issue 15 items 1, 8b, 10, 13, 14 on the session side). Failures are real: a write to
/dev/full, RLIMIT_FSIZE (``ulimit -f``) in a child process, a real SQLite lock."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import harnessc
from harnessc.runtime.core.messages import AssistantMessage, TextContent, UserMessage
from harnessc.runtime.session import (
    JsonlSessionRepo,
    Session,
    SessionIndex,
    SessionWriteError,
)
from harnessc.runtime.session.index import SessionIndexBusyError
from harnessc.runtime.session.storage import JsonlStorage

ROOT = str(Path(harnessc.__file__).resolve().parents[1])


def run_child(code: str, *, fsize: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child Python; with ``fsize``, under that RLIMIT_FSIZE and with
    SIGXFSZ ignored (so an oversized write fails with EFBIG, as under ``ulimit -f``)."""
    prelude = "import resource, signal\n"
    if fsize is not None:
        prelude += (
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({fsize}, {fsize}))\n"
        )
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


# -- item 1: text that is not UTF-8 -------------------------------------------------------


def test_invalid_utf8_and_lone_surrogates_open_and_write(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(UserMessage("before"))
    s.close()
    assert s.path is not None
    path = Path(s.path)
    header_and_first = path.read_bytes()
    bad_bytes = (
        b'{"type":"message","id":"b1","parentId":null,"timestamp":"t",'
        b'"message":{"role":"user","content":"caf\xe9 latin-1 \xff","timestamp":1}}\n'
    )
    lone = (
        b'{"type":"message","id":"b2","parentId":"b1","timestamp":"t","message":'
        b'{"role":"assistant","content":[{"type":"text","text":"half \\udce9 pair"}],'
        b'"provider":"p","model":"m","timestamp":1}}\n'
    )
    path.write_bytes(header_and_first + bad_bytes + lone)
    s = repo.open(s.id)
    assert s.diagnostics == []  # no line is lost
    texts = [json.dumps(m.to_dict(), ensure_ascii=False) for m in s.context().messages]
    assert "caf\ufffd latin-1 \ufffd" in texts[0] and "half \ufffd pair" in texts[1]
    for text in texts:  # what a provider sends encodes
        text.encode("utf-8")
    # text with a lone surrogate arriving now is written as U+FFFD
    s.append_message(UserMessage("new \udce9 text"))
    s.append_message(AssistantMessage(content=[TextContent("ok \ud83d")], provider="p", model="m"))
    s.close()
    tail = path.read_bytes()[len(header_and_first + bad_bytes + lone) :]
    tail.decode("utf-8")  # valid UTF-8
    assert b"\\ud" not in tail and "new \ufffd text".encode() in tail
    again = repo.open(s.id, read_only=True)
    assert len(again.context().messages) == 4
    for m in again.context().messages:
        json.dumps(m.to_dict(), ensure_ascii=False).encode("utf-8")


# -- item 10: file modes ---------------------------------------------------------------------


def test_session_files_are_0600_in_0700_folders(repo: JsonlSessionRepo) -> None:
    old = os.umask(0o022)
    try:
        s = repo.create(cwd="/w")
        s.append_message(UserMessage("secret"))
        fork = repo.fork(s)
        s.close()
        fork.close()
        index = SessionIndex(repo.root)
        index.refresh()
        index.close()
    finally:
        os.umask(old)
    for path in (s.path, fork.path):
        assert path is not None
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    assert stat.S_IMODE(repo.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(os.stat(index.db_path).st_mode) == 0o600


# -- item 13: a full disk, a file size limit -------------------------------------------------


def test_disk_full_names_the_session_file_and_keeps_the_session(tmp_path: Path) -> None:
    """ENOSPC from the kernel: the session's descriptor is /dev/full."""
    path = str(tmp_path / "s.jsonl")
    storage = JsonlStorage(path, os.open("/dev/full", os.O_WRONLY | os.O_APPEND))
    session = Session(storage=storage, path=path)
    with pytest.raises(SessionWriteError) as caught:
        session.append_message(UserMessage("lost to a full disk"))
    assert path in str(caught.value) and "No space left on device" in str(caught.value)
    assert isinstance(caught.value, OSError) and caught.value.errno == 28
    assert session.entries() == [] and session.context().messages == []
    storage.close()


def test_file_size_limit_mid_line_leaves_a_valid_session(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(UserMessage("kept"))
    s.close()
    assert s.path is not None
    size = os.path.getsize(s.path)
    child = run_child(
        f"""
        from harnessc.runtime.core.messages import UserMessage
        from harnessc.runtime.session import JsonlSessionRepo, SessionWriteError
        s = JsonlSessionRepo({str(repo.root)!r}).open({s.id!r})
        try:
            s.append_message(UserMessage("x" * 100_000))
        except SessionWriteError as exc:
            print("ERROR", exc)
        print("ENTRIES", len(s.entries()))
        s.append_message(UserMessage("y"))  # too big as well? no: 10 bytes are left
        """,
        fsize=size + 300,
    )
    assert child.returncode == 0, child.stderr
    assert "Traceback" not in child.stderr
    assert f"ERROR cannot write to session file {s.path}" in child.stdout
    assert "ulimit -f" in child.stdout and "ENTRIES 1" in child.stdout
    reopened = repo.open(s.id, read_only=True)
    assert reopened.diagnostics == []  # no torn line: the partial write was cut off
    assert [m.to_dict()["content"] for m in reopened.context().messages] == ["kept", "y"]


@pytest.mark.parametrize("fsize", [0, 40], ids=["nothing-written", "header-cut-short"])
def test_full_disk_at_creation_leaves_no_file(repo: JsonlSessionRepo, fsize: int) -> None:
    """RLIMIT_FSIZE: the header's write stores nothing, or 40 bytes of it, then fails."""
    folder = repo.root / "--w--"
    folder.mkdir(parents=True)
    child = run_child(
        f"""
        from harnessc.runtime.session import JsonlSessionRepo, SessionWriteError
        try:
            JsonlSessionRepo({str(repo.root)!r}).create(cwd="/w")
        except SessionWriteError as exc:
            print("ERROR", exc)
        """,
        fsize=fsize,
    )
    assert child.returncode == 0, child.stderr
    assert "ERROR cannot create session file " + str(folder) in child.stdout
    assert "ulimit -f" in child.stdout
    assert list(folder.iterdir()) == []  # no file, whole or partly written


def test_an_empty_session_file_opens_by_its_id(repo: JsonlSessionRepo) -> None:
    folder = repo.root / "--w--"
    folder.mkdir(parents=True)
    empty = folder / "2026-01-01T00-00-00-000Z_0b1c2d3e-aaaa-bbbb-cccc-000000000000.jsonl"
    empty.write_bytes(b"")
    s = repo.open("0b1c2d3e")  # what --session 0b1c2d3e does
    assert s.id == "0b1c2d3e-aaaa-bbbb-cccc-000000000000" and s.entries() == []
    s.append_message(UserMessage("first"))
    s.close()
    assert repo.open("0b1c2d3e", read_only=True).context().messages[0].to_dict()["content"] == (
        "first"
    )


def test_index_under_a_file_size_limit_says_so(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    for i in range(200):
        s.append_message(UserMessage(f"message {i} " + "word " * 400))
    s.close()
    child = run_child(
        f"""
        from harnessc.runtime.session import SessionIndex
        from harnessc.runtime.session.index import SessionIndexError
        index = SessionIndex({str(repo.root)!r})
        try:
            index.refresh()
        except SessionIndexError as exc:
            print("ERROR", exc)
        """,
        fsize=64 * 1024,
    )
    assert child.returncode == 0, child.stderr
    assert "Traceback" not in child.stderr
    assert "cannot rollback" not in child.stdout
    assert f"ERROR cannot write the session index {repo.root / '.index.sqlite'}" in child.stdout
    # without the limit the same index refreshes
    index = SessionIndex(repo.root)
    assert index.refresh().messages_added == 200
    index.close()


# -- item 14: leftovers ---------------------------------------------------------------------------


def test_stale_temporary_files_are_removed_on_open(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.close()
    assert s.path is not None
    folder = Path(s.path).parent
    name = Path(s.path).name
    stale = folder / f".{name}.a1b2c3d4.tmp"
    fresh = folder / f".{name}.e5f6a7b8.tmp"
    held = folder / f".{name}.0badc0de.tmp"
    other = folder / ".notes.txt.12345678.tmp"
    for p in (stale, fresh, held, other):
        p.write_text("partial")
    old = time.time() - 3600
    for p in (stale, held, other):
        os.utime(p, (old, old))
    import fcntl

    with held.open("rb") as holder:  # a writer still at work holds its lock
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        repo.open(s.id).close()
        left = sorted(p.name for p in folder.iterdir())
    assert stale.name not in left
    assert {fresh.name, held.name, other.name, name} <= set(left)


def test_creates_in_one_folder_list_it_once_a_minute_and_an_open_still_cleans(
    repo: JsonlSessionRepo,
) -> None:
    """Before: every create listed its whole folder for leftovers, so a service with
    thousands of sessions in one folder paid milliseconds per new session on its loop.
    A leftover is only removed once it is a minute old, so once a minute is enough."""
    first = repo.create(cwd="/w")
    first.close()
    assert first.path is not None
    folder = Path(first.path).parent
    stale = folder / f".{Path(first.path).name}.a1b2c3d4.tmp"
    stale.write_text("partial")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    second = repo.create(cwd="/w")
    second.close()
    assert stale.exists()  # not listed again within the minute
    repo.open(second.id).close()
    assert not stale.exists()


def test_sigkill_while_migrating_leaves_a_readable_file(repo: JsonlSessionRepo) -> None:
    """A killed rewrite leaves the old file whole and a .tmp that the next open removes."""
    folder = repo.root / "--w--"
    folder.mkdir(parents=True)
    path = folder / "2024-01-01T00-00-00-000Z_v1.jsonl"
    lines = [{"type": "session", "id": "v1", "timestamp": "t", "cwd": "/w"}] + [
        {"type": "message", "timestamp": "t", "message": {"role": "user", "content": f"m{i}"}}
        for i in range(2000)
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    path.write_bytes(data)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import os, signal
                from harnessc.runtime.session import storage
                real = storage._write_all
                def slow(fd, data):
                    os.write(fd, data[:100])
                    print("writing", flush=True)
                    signal.pause()
                storage._write_all = slow
                from harnessc.runtime.session import JsonlSessionRepo
                JsonlSessionRepo({str(repo.root)!r}).open({str(path)!r})
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "writing\n"
        child.kill()
    finally:
        child.wait(10)
    leftovers = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and path.read_bytes() == data  # the old file is whole
    old = time.time() - 3600
    os.utime(leftovers[0], (old, old))
    s = repo.open(str(path))
    assert len(s.context().messages) == 2000
    s.close()
    assert [p.name for p in folder.iterdir()] == [path.name]


# -- item 8b: a locked index is waited for, never deleted --------------------------------------


def test_a_locked_index_is_never_deleted(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(UserMessage("findme"))
    s.close()
    first = SessionIndex(repo.root)
    first.refresh()
    first.close()
    db = str(repo.root / ".index.sqlite")
    inode = os.stat(db).st_ino
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("PRAGMA locking_mode=EXCLUSIVE")
    other.execute("BEGIN EXCLUSIVE")
    # locked past the timeout: a clear error, the file untouched
    index = SessionIndex(repo.root, busy_timeout_s=0.3)
    with pytest.raises(SessionIndexBusyError, match="locked by another process"):
        index.search("findme")
    assert os.stat(db).st_ino == inode
    # locked for a moment: waited for
    timer = threading.Timer(0.3, lambda: (other.execute("COMMIT"), other.close()))
    timer.start()
    try:
        waiting = SessionIndex(repo.root, busy_timeout_s=10)
        assert [h.session_id for h in waiting.search("findme")] == [s.id]
        waiting.close()
    finally:
        timer.join()
    assert os.stat(db).st_ino == inode
    index.close()


def test_a_damaged_index_is_rebuilt(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(UserMessage("findme"))
    s.close()
    (repo.root / ".index.sqlite").write_bytes(b"this is not a database" * 100)
    index = SessionIndex(repo.root)
    index.refresh()
    assert [h.session_id for h in index.search("findme")] == [s.id]
    index.close()


def _index_agent(
    root: Path, start: threading.Barrier, found: list[int], errors: list[BaseException]
) -> None:
    try:
        with SessionIndex(root) as index:
            start.wait()
            index.refresh()
            found.append(len(index.search("findme")))
    except BaseException as exc:  # handed to the test
        errors.append(exc)


def test_indexes_opened_at_the_same_moment_share_one_file(tmp_path: Path) -> None:
    """Several agents sharing a sessions folder create its index at once (item 8b)."""
    for round_ in range(4):
        repo = JsonlSessionRepo(tmp_path / f"r{round_}")
        s = repo.create(cwd="/w")
        s.append_message(UserMessage("findme"))
        s.close()
        start = threading.Barrier(6)
        found: list[int] = []
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=_index_agent, args=(repo.root, start, found, errors))
            for _ in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert errors == [] and found == [1] * 6
        with SessionIndex(repo.root) as index:
            assert len(index.search("findme")) == 1

"""Creating a session file under its own name (no temporary file): what a reader sees of
a file a crash left right after its creation, two creators of one name, a header that
cannot be written."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from harnessc.runtime.core.messages import UserMessage
from harnessc.runtime.session import JsonlSessionRepo, SessionIndex
from harnessc.runtime.session.entries import SessionHeader
from harnessc.runtime.session.jsonl import SessionFileError
from harnessc.runtime.session.lock import SessionLockedError
from harnessc.runtime.session.repo import session_file_name
from harnessc.runtime.session.storage import JsonlStorage

SESSION_ID = "0b1c2d3e-aaaa-bbbb-cccc-000000000000"
NAME = f"2026-01-01T00-00-00-000Z_{SESSION_ID}.jsonl"


def _left_by_a_crash(repo: JsonlSessionRepo, data: bytes) -> Path:
    """A session file as a crash during its creation leaves it, beside a whole session."""
    whole = repo.create(cwd="/w")
    whole.append_message(UserMessage("kept"))
    whole.close()
    assert whole.path is not None
    path = Path(whole.path).parent / NAME
    path.write_bytes(data)
    os.utime(path, (2e9, 2e9))  # the newest file of the folder
    return path


@pytest.mark.parametrize(
    "data",
    [
        b"",  # killed between the create and the header's write
        b'{"type":"session","version":3,"id":"0b1c2d3e-aaaa-bb',  # killed mid-header
    ],
    ids=["empty", "torn-header"],
)
def test_a_file_a_crash_left_at_creation_is_skipped_by_readers_and_opens_as_new(
    repo: JsonlSessionRepo, data: bytes
) -> None:
    """Before (torn header): opening it raised "line 1 is not a session header", while an
    empty file opened as a new session; both are what a killed create leaves now."""
    path = _left_by_a_crash(repo, data)
    # listing (and so --continue) skips it and names it; search indexes nothing of it
    metas = repo.list("/w")
    assert [m.first_prompt for m in metas] == ["kept"]
    assert [where for where, _ in repo.skipped] == [str(path)]
    assert repo.latest("/w") == metas[0]
    with SessionIndex(repo.root) as index:
        index.refresh()
        assert [hit.session_id for hit in index.search("kept")] == [metas[0].id]
    # read-only: a new session with the id of its name, the file untouched
    seen = repo.open(SESSION_ID, read_only=True)
    assert seen.id == SESSION_ID and seen.entries() == []
    assert "opened" not in seen.diagnostics[0] and str(path) in seen.diagnostics[0]
    assert path.read_bytes() == data
    # for writing: the same, and the file becomes a valid session
    s = repo.open(SESSION_ID)
    assert s.id == SESSION_ID and s.entries() == []
    assert s.diagnostics[0].endswith("opened as a new session")
    s.append_message(UserMessage("again"))
    s.close()
    reopened = repo.open(SESSION_ID, read_only=True)
    assert reopened.diagnostics == []
    assert [m.to_dict()["content"] for m in reopened.context().messages] == ["again"]


def test_a_file_that_is_not_a_torn_header_still_refuses_to_open(tmp_path: Path) -> None:
    """Only the start of a session header without a newline is taken for a killed
    create: any other single unparseable line stays an error (the file is not
    overwritten)."""
    repo = JsonlSessionRepo(tmp_path / "sessions")
    folder = repo.root / "--w--"
    folder.mkdir(parents=True)
    for data in (b'{"type":"message","id":"x"', b"notes, not a session", b'{"type":"session"\n'):
        path = folder / NAME
        path.write_bytes(data)
        with pytest.raises(SessionFileError, match="not a session header"):
            repo.open(str(path))
        assert path.read_bytes() == data


def test_concurrent_creates_of_one_name_one_wins(tmp_path: Path) -> None:
    path = str(tmp_path / NAME)
    headers = [SessionHeader.new(cwd=f"/w{i}") for i in range(8)]
    start = threading.Barrier(len(headers))
    made: list[JsonlStorage] = []
    refused: list[BaseException] = []

    def create(header: SessionHeader) -> None:
        start.wait()
        try:
            made.append(JsonlStorage.create(path, header))
        except (FileExistsError, SessionLockedError) as exc:
            refused.append(exc)

    threads = [threading.Thread(target=create, args=(h,)) for h in headers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and len(refused) == len(headers) - 1
    assert all(isinstance(exc, FileExistsError) for exc in refused)
    (winner,) = made
    winner.close()
    lines = Path(path).read_bytes().splitlines()
    assert len(lines) == 1  # one header, the winner's: nobody wrote into its file
    assert sorted(os.listdir(tmp_path)) == [NAME]  # no temporary file either


def test_create_holds_the_lock_and_makes_a_private_file(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    assert s.path is not None
    with pytest.raises(SessionLockedError):
        repo.open(s.id)  # a second writer is refused while the creator holds it
    assert stat.S_IMODE(os.stat(s.path).st_mode) == 0o600
    s.close()
    existing = SessionHeader.new(cwd="/w")
    existing.id, existing.timestamp = s.header.id, s.header.timestamp
    assert session_file_name(existing) == Path(s.path).name
    with pytest.raises(FileExistsError):
        JsonlStorage.create(s.path, existing)
    assert len(Path(s.path).read_bytes().splitlines()) == 1  # untouched


def test_create_makes_its_folder_and_makes_it_again_once_removed(tmp_path: Path) -> None:
    """The folder is not looked up before each create: a create that finds it missing
    makes it (0700) and creates again."""
    repo = JsonlSessionRepo(tmp_path / "sessions")
    first = repo.create(cwd="/w")
    first.close()
    assert first.path is not None
    folder = Path(first.path).parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert (repo.root / ".gitignore").is_file()
    Path(first.path).unlink()
    folder.rmdir()
    second = repo.create(cwd="/w")
    second.close()
    assert second.path is not None and Path(second.path).parent == folder
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert [m.id for m in repo.list("/w")] == [second.id]

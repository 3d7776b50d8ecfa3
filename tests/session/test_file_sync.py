"""The fsyncs that end a turn, on the session sync threads: every file synced, errors
and cancellations handed back to the waiter, nothing of a finished call kept."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import weakref
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.session import JsonlSessionRepo, Session, SessionWriteError
from harnessc.runtime.session.file_sync import MAX_THREADS, sync_off_loop

from ._helpers import user


def _sync_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "harnessc-session-sync"]


def test_many_sessions_sync_on_a_few_threads(repo: JsonlSessionRepo, synced: list[int]) -> None:
    sessions = [repo.create(cwd="/w") for _ in range(60)]

    async def turn(session: Session, i: int) -> None:
        session.append_message(user(f"m{i}"))
        await session.sync_off_loop()

    async def main() -> None:
        await asyncio.gather(*(turn(s, i) for i, s in enumerate(sessions)))
        files = len(synced)
        await asyncio.gather(*(s.sync_off_loop() for s in sessions))  # nothing new
        assert len(synced) == files

    asyncio.run(main())
    fds = {s.storage._fd for s in sessions}  # type: ignore[union-attr]
    assert fds <= set(synced)  # every file, and their folder once (created together)
    assert len(synced) == len(sessions) + 1
    assert 1 <= len(_sync_threads()) <= MAX_THREADS
    for s in sessions:
        s.close()
        assert repo.open(s.path, read_only=True).leaf_id == s.leaf_id  # type: ignore[arg-type]


def test_an_in_memory_session_needs_no_thread() -> None:
    session = Session()
    session.append_message(user("hi"))
    asyncio.run(session.sync_off_loop())


def test_a_failed_fsync_raises_in_the_waiting_session_only(
    repo: JsonlSessionRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    good, bad = repo.create(cwd="/w"), repo.create(cwd="/w")
    bad_fd = bad.storage._fd  # type: ignore[union-attr]
    real = os.fsync

    def failing(fd: int) -> None:
        if fd == bad_fd:
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing)

    async def main() -> list[BaseException | None]:
        for s in (good, bad):
            s.append_message(user("m"))
        return await asyncio.gather(
            good.sync_off_loop(), bad.sync_off_loop(), return_exceptions=True
        )

    ok, error = asyncio.run(main())
    assert ok is None
    assert isinstance(error, SessionWriteError)
    assert bad.path in str(error) and "Input/output error" in str(error)
    good.close()
    monkeypatch.setattr(os, "fsync", real)
    bad.close()


def test_a_cancelled_waiter_waits_for_its_call_to_finish() -> None:
    """The caller may close the file as soon as it sees the cancellation."""
    started, release = threading.Event(), threading.Event()
    finished: list[bool] = []

    def slow() -> None:
        started.set()
        release.wait(10)
        finished.append(True)

    async def main() -> None:
        task = asyncio.ensure_future(sync_off_loop(slow))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # still waiting for the thread
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert finished == [True]

    asyncio.run(main())


def test_a_finished_call_is_not_kept_by_the_thread(tmp_path: Path) -> None:
    """A service's finished sessions are freed at once (the thread waits for the next
    call holding nothing of the last one)."""

    class Probe:
        def sync(self) -> None:
            pass

    async def main() -> weakref.ref[Probe]:
        probe = Probe()
        await sync_off_loop(probe.sync)
        ref = weakref.ref(probe)
        del probe
        for _ in range(200):
            if ref() is None:
                break
            await asyncio.sleep(0.005)
        return ref

    assert asyncio.run(main())() is None


def test_a_file_behind_another_storage_is_synced_off_the_loop(repo: JsonlSessionRepo) -> None:
    """A durable run's session wraps the JSONL store in its own storage: its fsync still
    leaves the event loop's thread; a session without a file (PostgreSQL) syncs in place."""

    class Wrapper:
        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.threads: list[str] = []

        def append(self, line: dict[str, Any]) -> None:
            self.inner.append(line)

        def sync(self) -> None:
            self.threads.append(threading.current_thread().name)
            self.inner.sync()

        def close(self) -> None:
            self.inner.close()

    on_file = repo.create(cwd="/w")
    wrapped = Session(header=on_file.header, storage=Wrapper(on_file.storage), path=on_file.path)
    in_place = Session(storage=Wrapper(repo.create(cwd="/w").storage))

    async def main() -> None:
        for s in (wrapped, in_place):
            s.append_message(user("m"))
            await s.sync_off_loop()

    asyncio.run(main())
    main_thread = threading.current_thread().name
    assert wrapped.storage.threads == ["harnessc-session-sync"]  # type: ignore[union-attr]
    assert in_place.storage.threads == [main_thread]  # type: ignore[union-attr]
    wrapped.close()
    in_place.close()

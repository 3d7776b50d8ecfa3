"""A call's start mark written from the run's event loop (``Heartbeat.start_call_async``):
no thread of the pool unless the lease's renewal is due, the same guarantees as the
threaded mark (a first mark says so, a second does not, a lost lease records nothing),
and a mark the worker dies right after holds for the worker that recovers the run; on
SQLite the marks' log is copied into their file by the heartbeat's thread only."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos", reason="durable runs need dbos (pip install -e '.[dev]')")


class NoThreads(ThreadPoolExecutor):
    """A default executor that refuses work: ``asyncio.to_thread`` fails with it."""

    submitted = 0

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        NoThreads.submitted += 1
        raise RuntimeError("a thread was asked for")


def _url(tmp_path: Path, database: str, request: Any) -> str:
    if database == "postgres":
        return str(request.getfixturevalue("pg_database"))
    return f"sqlite:///{tmp_path}/d.sqlite"


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_a_mark_from_the_loop_takes_no_thread_and_holds_once(
    tmp_path: Path, database: str, request: Any
) -> None:
    import sqlalchemy as sa

    from harnessc.runtime.durable.engine import Heartbeat

    lost: list[str] = []
    beat = Heartbeat(_url(tmp_path, database, request), "w", "q", 30.0, on_lost=lost.append)

    async def marks() -> list[bool]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(NoThreads())
        got = [
            await beat.start_call_async("run", "1:a"),
            await beat.start_call_async("run", "1:a"),  # an earlier execution started it
            await beat.start_call_async("run", "2:a"),
        ]
        return got

    try:
        beat.take()
        NoThreads.submitted = 0
        assert asyncio.run(marks()) == [True, False, True]
        assert NoThreads.submitted == 0
        assert beat.start_call("run", "2:a") is False  # the threaded mark sees them
        with beat.engine.begin() as conn:  # another worker claimed this one
            conn.execute(sa.update(beat.table).values(state="recovered by x"))
        beat.renewed = -1e9  # the lease is due: the mark renews it first, in a thread
        with pytest.raises(RuntimeError, match="lease was lost"):
            asyncio.run(beat.start_call_async("run", "3:a"))
        assert lost == ["recovered by x"]
        assert beat.marks.calls("run") == ["1:a", "2:a"]  # nothing recorded without the lease
    finally:
        beat.engine.dispose()
        beat.marks.close()


@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_a_worker_killed_right_after_a_mark_from_the_loop_leaves_it_held(
    tmp_path: Path, database: str, request: Any
) -> None:
    from harnessc.runtime.durable.engine import Heartbeat

    url = _url(tmp_path, database, request)
    code = (
        "import asyncio, os, sys\n"
        "from harnessc.runtime.durable.engine import Heartbeat\n"
        "beat = Heartbeat(sys.argv[1], 'dying', 'q', 30.0)\n"
        "beat.take()\n"
        "async def mark():\n"
        "    assert await beat.start_call_async('run', '1:a')\n"
        "    os._exit(9)  # nothing closed, nothing copied out of the log\n"
        "asyncio.run(mark())\n"
    )
    done = subprocess.run([sys.executable, "-c", code, url], capture_output=True, text=True)
    assert done.returncode == 9, done.stderr
    beat = Heartbeat(url, "w", "q", 30.0)
    try:
        beat.take()
        assert asyncio.run(beat.start_call_async("run", "1:a")) is False  # the mark holds
        assert beat.marks.calls("run") == ["1:a"]
    finally:
        beat.engine.dispose()
        beat.marks.close()


def test_sqlite_marks_log_is_copied_by_the_heartbeat_not_by_the_mark(tmp_path: Path) -> None:
    from harnessc.runtime.durable.engine import Heartbeat, calls_path

    database = tmp_path / "d.sqlite"
    beat = Heartbeat(f"sqlite:///{database}", "w", "q", 30.0)
    try:
        beat.take()
        for n in range(20):
            assert asyncio.run(beat.start_call_async("run", f"{n}:a")) is True
        assert beat.marks.conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
        with sqlite3.connect(calls_path(str(database))) as lite:
            # nothing copied yet: a read through another connection still finds them all
            assert lite.execute("SELECT count(*) FROM harnessc_started_calls").fetchone() == (20,)
        beat.marks.checkpoint()  # as the heartbeat's thread does at every beat
        assert beat.marks.copier is not None
        busy, logged, copied = beat.marks.copier.execute("PRAGMA wal_checkpoint").fetchone()
        assert busy == 0 and logged == copied and logged > 0
    finally:
        beat.engine.dispose()
        beat.marks.close()


def test_closing_the_marks_from_another_thread_waits_for_a_mark_in_flight(
    pg_database: str,
) -> None:
    """A worker's heartbeat stops (closing the marks) while its runs drain: a mark in
    flight on the loop still completes, and the connection closes after it."""
    import threading

    from harnessc.runtime.durable.engine import CallMarks, Heartbeat

    Heartbeat(pg_database, "w", "q", 30.0).engine.dispose()  # makes the marks' table
    marks = CallMarks(pg_database)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever)
    thread.start()
    try:

        async def busy_then_mark() -> bool:
            conn = await marks._aconnection()
            slow = asyncio.ensure_future(conn.execute("SELECT pg_sleep(0.5)"))
            await asyncio.sleep(0)  # the slow query holds the connection first
            result = await marks.first_async("run", "1:a", "w")
            await slow
            return result

        pending = asyncio.run_coroutine_threadsafe(busy_then_mark(), loop)
        while marks.inflight == 0 and not pending.done():
            threading.Event().wait(0.01)
        marks.close()  # from this thread, the mark still in flight
        assert pending.result(timeout=30) is True
        closed = asyncio.run_coroutine_threadsafe(asyncio.sleep(0, marks.aconn), loop)
        assert closed.result(timeout=5) is None  # closed once the mark was done
        assert marks.calls("run") == ["1:a"]
    finally:
        marks.close()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

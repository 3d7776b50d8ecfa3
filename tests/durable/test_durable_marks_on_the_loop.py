"""A call's start mark as a run's event loop asks for it (``Heartbeat.start_call_async``):
on SQLite no thread of the pool unless the lease's renewal is due; on both databases
the same guarantees as the threaded mark (a first mark says so, a second does not, a
lost lease records nothing), and a mark the worker dies right after holds for the
worker that recovers the run; on SQLite the marks' log is copied into their file by the
heartbeat's thread only."""

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
def test_a_mark_from_the_loop_holds_once_and_never_without_the_lease(
    tmp_path: Path, database: str, request: Any
) -> None:
    import sqlalchemy as sa

    from harnessc.runtime.durable.engine import Heartbeat

    lost: list[str] = []
    beat = Heartbeat(_url(tmp_path, database, request), "w", "q", 30.0, on_lost=lost.append)

    async def marks() -> list[bool]:
        if database == "sqlite":  # an append to the log: on the loop, no thread
            asyncio.get_running_loop().set_default_executor(NoThreads())
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

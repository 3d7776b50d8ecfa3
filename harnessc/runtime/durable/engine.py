"""DBOS in this process: an executor (a worker, or a one-shot run) or a client only.

Only ``launch_executor`` starts DBOS's executor, which dequeues and recovers runs;
``open_client`` talks to the system database with ``DBOSClient`` and never executes a
run. Workers keep a heartbeat row (the database's clock); a worker silent for longer
than the lease is presumed dead and the first live worker to claim it re-enqueues its
unfinished runs (DBOS recovery for that executor id), so a dead machine never strands a
run. A worker that was only stalled finds its lease taken at its next beat or step and
ends at once (exit 75), so the runs it lost go on only where they were recovered.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from harnessc.runtime.durable.config import DurableConfig, DurableError, resolve_database_url
from harnessc.runtime.durable.workflow import DurableAgent, register_agent

__all__ = [
    "APP_VERSION",
    "CallMarks",
    "calls_path",
    "EXIT_LEASE_LOST",
    "Heartbeat",
    "db_now",
    "launch_executor",
    "live_workers",
    "open_client",
    "shutdown",
    "started_table",
    "taking_runs",
    "workers_table",
]

EXIT_LEASE_LOST = 75  # EX_TEMPFAIL: a supervisor may start the worker again
APP_VERSION = "harnessc-1"  # every process of one agent agrees on it (recovery needs that)
_POLL_S = 0.1


def _dbos_config(config: DurableConfig, url: str, executor_id: str) -> dict[str, Any]:
    return {
        "name": config.app_name(),
        "system_database_url": url,
        "executor_id": executor_id,
        "application_version": APP_VERSION,
        "log_level": os.environ.get("HARNESSC_DBOS_LOG_LEVEL", "ERROR"),
        "notification_listener_polling_interval_sec": _POLL_S,
        **_ENGINE,
    }


# SQLAlchemy's pre-ping is a round trip before every system-database operation (every
# step); a connection the server dropped fails its operation instead, which DBOS
# retries on a fresh one, and none lives longer than pool_recycle.
_ENGINE: dict[str, Any] = {"db_engine_kwargs": {"pool_pre_ping": False, "pool_recycle": 300}}


def _import_dbos() -> Any:
    try:
        import dbos
    except ImportError:
        raise DurableError("durable runs need DBOS: pip install 'harnessc[durable]'") from None
    return dbos


_TAKING: list[str] = []  # the worker id, while this process takes runs from the queue


def taking_runs() -> str | None:
    """This process's worker id when it takes runs from the queue (``--worker``)."""
    return _TAKING[0] if _TAKING else None


def launch_executor(
    config: DurableConfig,
    agent: DurableAgent,
    *,
    cwd: str,
    executor_id: str,
    concurrency: int,
    listen: bool,
) -> str:
    """Launch DBOS executing runs of ``agent``; with ``listen`` it takes runs from the
    queue. The resolved database URL is returned."""
    dbos = _import_dbos()
    url = resolve_database_url(config.database_url, cwd)
    register_agent(agent)
    from dbos import DBOS

    from harnessc.runtime.durable import workflow  # noqa: F401 - registers the workflow

    DBOS(config=_dbos_config(config, url, executor_id))  # type: ignore[arg-type]
    DBOS.listen_queues([config.queue] if listen else [])
    try:
        DBOS.launch()
        if listen:  # workers own the queue's settings; a one-shot run never changes them
            DBOS.register_queue(
                config.queue, worker_concurrency=concurrency, polling_interval_sec=_POLL_S
            )
        else:
            DBOS.register_queue(
                config.queue, polling_interval_sec=_POLL_S, on_conflict="never_update"
            )
    except dbos.DBOSException as exc:
        DBOS.destroy()
        raise DurableError(f"cannot start DBOS: {exc}") from None
    _TAKING[:] = [executor_id] if listen else []
    return url


def open_client(config: DurableConfig, *, cwd: str, create: bool = False) -> Any:
    """A DBOSClient for the agent's system database; ``create`` makes it (and the queue)
    first if it is new (``--submit``); readers never write to it."""
    _import_dbos()
    from dbos import DBOS, DBOSClient

    url = resolve_database_url(config.database_url, cwd, create=create)
    path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else None
    if not create and path is not None and not os.path.exists(path):
        raise DurableError(f"no durable runs yet: {path} does not exist")
    try:
        if create:
            DBOS.migrate(url)
        client = DBOSClient(system_database_url=url, application_name=config.app_name())
        if create:
            client.register_queue(
                config.queue, polling_interval_sec=_POLL_S, on_conflict="never_update"
            )
    except Exception as exc:  # DBOS and SQLAlchemy errors: say which database
        raise DurableError(
            f"cannot open the durable database: {type(exc).__name__}: {exc}"
        ) from None
    return client


def shutdown(timeout_s: float) -> None:
    """Stop taking runs, give running ones ``timeout_s`` to finish, then stop DBOS
    (unfinished runs stay pending: this worker, restarted, or another one after the
    lease, continues them)."""
    from dbos import DBOS

    _TAKING.clear()
    DBOS.destroy(workflow_completion_timeout_sec=int(timeout_s))


class Heartbeat:
    """This worker's row in ``harnessc_workers`` (its lease) and the lease watch over the
    others.

    ``take`` makes the row this process's (alive, its pid); ``beat`` renews it only while
    it is still this process's and alive. A worker that stalled past its lease and was
    claimed (its runs recovered by another) finds so at its next beat, or before its
    next step (``guard``), and ends at once (``on_lost``): the runs are another's now."""

    def __init__(
        self,
        url: str,
        worker_id: str,
        queue: str,
        lease_s: float,
        *,
        claim: bool = True,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        import sqlalchemy as sa

        self.worker_id = worker_id
        self.queue = queue
        self.lease_s = lease_s
        self.claim = claim  # watch over the other workers (a one-shot run does not)
        self.on_lost = on_lost or _lease_lost
        self.engine = sa.create_engine(_sqlalchemy_url(url))
        self.table = workers_table()
        self.started = started_table()
        _create_table(self.engine, self.table)
        if not url.startswith("sqlite:///"):  # SQLite's are in a file of their own
            _create_table(self.engine, self.started)
        self.marks = CallMarks(url)
        self.recovered: list[str] = []
        self.renewed = 0.0  # time.monotonic() before the last renewal that held
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="harnessc-heartbeat", daemon=True)

    def start(self) -> None:
        self.take()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.engine.dispose()
        self.marks.close()

    def take(self) -> None:
        """Make the row this process's: alive, with its pid and a fresh heartbeat."""
        import sqlalchemy as sa

        started = time.monotonic()
        with self.engine.begin() as conn:
            values = {
                "queue": self.queue,
                "heartbeat": db_now(conn),
                "pid": os.getpid(),
                "state": "alive",
            }
            done = conn.execute(
                sa.update(self.table)
                .where(self.table.c.worker_id == self.worker_id)
                .values(**values)
            )
            if done.rowcount == 0:
                conn.execute(sa.insert(self.table).values(worker_id=self.worker_id, **values))
        self.renewed = started

    def beat(self) -> bool:
        """Renew the lease if it is still this process's; False (and ``on_lost``) when
        another worker claimed it."""
        import sqlalchemy as sa

        started = time.monotonic()
        t = self.table
        with self.engine.begin() as conn:
            done = conn.execute(
                sa.update(t)
                .where(
                    t.c.worker_id == self.worker_id, t.c.pid == os.getpid(), t.c.state == "alive"
                )
                .values(heartbeat=db_now(conn))
            )
            held = done.rowcount == 1
            state = None
            if not held:
                state = conn.execute(
                    sa.select(t.c.state).where(t.c.worker_id == self.worker_id)
                ).scalar()
        if not held:
            self.on_lost(str(state or "gone"))
            return False
        self.renewed = started
        return True

    def start_call(self, run_id: str, key: str) -> bool:
        """Record that call ``key`` of run ``run_id`` starts; False when an earlier
        execution of the run recorded it. One statement in autocommit on a connection of
        its own (one round trip, no BEGIN / COMMIT of its own), after the lease check the
        guard makes (which renews the lease when it is due): a lost lease records
        nothing and ends the worker (``on_lost``)."""
        if time.monotonic() - self.renewed > self.lease_s / 2 and not self.beat():
            raise RuntimeError("this worker's lease was lost")
        return self.marks.first(run_id, key, self.worker_id)

    async def start_call_async(self, run_id: str, key: str) -> bool:
        """``start_call`` from the run's event loop. On SQLite the mark is an append to
        the marks' write-ahead log, made on the loop with no thread hand-off (tens of
        microseconds, no sync). On PostgreSQL it is a round trip, made in a thread as
        ``start_call`` (an asyncio connection measured no quicker), and so is any mark
        when the lease's renewal is due (a transaction on the system database)."""
        if self.marks.sqlite and time.monotonic() - self.renewed <= self.lease_s / 2:
            return self.marks.first(run_id, key, self.worker_id)
        return await asyncio.to_thread(self.start_call, run_id, key)

    def guard(self) -> None:
        """Before a step: the lease still holds (renewed within half of it here, or now
        in the database)."""
        if time.monotonic() - self.renewed > self.lease_s / 2:
            self.beat()

    def claim_dead(self) -> list[str]:
        """Workers of this queue silent for longer than the lease that this worker claimed."""
        import sqlalchemy as sa

        t = self.table
        claimed: list[str] = []
        with self.engine.begin() as conn:
            cutoff = db_now(conn) - self.lease_s
            rows = conn.execute(
                sa.select(t.c.worker_id).where(
                    t.c.queue == self.queue,
                    t.c.state == "alive",
                    t.c.heartbeat < cutoff,
                    t.c.worker_id != self.worker_id,
                )
            ).fetchall()
            for (dead,) in rows:
                won = conn.execute(
                    sa.update(t)
                    .where(t.c.worker_id == dead, t.c.state == "alive", t.c.heartbeat < cutoff)
                    .values(state=f"recovered by {self.worker_id}")
                )
                if won.rowcount == 1:
                    claimed.append(dead)
        return claimed

    def _loop(self) -> None:
        from dbos import DBOS

        interval = max(0.05, self.lease_s / 3)
        while not self._stop.wait(interval):
            try:
                if not self.beat():
                    continue
                self.marks.checkpoint()
                if not self.claim:
                    continue
                dead = self.claim_dead()
                if dead:
                    # DBOS's recovery for those executor ids: their pending runs go back
                    # on the queue, and any worker (this one or another) takes them
                    DBOS._recover_pending_workflows(dead)
                    self.recovered.extend(dead)
            except Exception:  # a database hiccup: try again at the next beat
                continue


class CallMarks:
    """The ``harnessc_started_calls`` rows of one worker, written on a DBAPI connection of
    their own in autocommit: each mark is one INSERT that does nothing when the row is
    there (SQLite's ``OR IGNORE``, PostgreSQL's ``ON CONFLICT DO NOTHING``). A mark does
    not wait for the disk (SQLite ``synchronous = NORMAL``, PostgreSQL
    ``synchronous_commit = off``): it survives the worker's death, which is what it is
    for; one lost with the machine's or database server's crash makes that call run again.

    On SQLite the marks have a database file of their own beside the system database
    (``calls_path``), in write-ahead-log mode: a mark is then an append to the log with no
    file created, synced or deleted (in the system database's rollback-journal mode, which
    DBOS keeps, each mark cost a journal file's create and delete: 5-7 ms). Marks an
    older harnessc left in the system database are copied over when that file is made.
    The connection that writes the marks never copies the log into the file (a copy
    syncs the disk); ``checkpoint``, from the heartbeat's thread, does.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite = url.startswith("sqlite:///")
        self.lock = threading.Lock()  # marks come from several threads (asyncio.to_thread)
        self.conn: Any = None
        self.copier: Any = None  # SQLite: the heartbeat thread's connection (``checkpoint``)

    def _connect(self) -> Any:
        if self.sqlite:
            import sqlite3

            path = self.url[len("sqlite:///") :]
            marks = calls_path(path)
            new = not os.path.exists(marks)
            lite = sqlite3.connect(marks, isolation_level=None, check_same_thread=False, timeout=30)
            lite.execute("PRAGMA journal_mode = WAL")  # a mark appends to the log
            lite.execute("PRAGMA synchronous = NORMAL")  # no fsync of its own per mark
            lite.execute("PRAGMA wal_autocheckpoint = 0")  # copied by ``checkpoint``
            lite.execute(_SQLITE_CALLS)
            if new:
                _copy_older_marks(lite, path)
            return lite
        import psycopg

        conn = psycopg.connect(_dbapi_url(self.url), autocommit=True)
        conn.execute("SET synchronous_commit = off")  # no wait for the WAL flush per mark
        return conn

    def first(self, run_id: str, key: str, worker_id: str) -> bool:
        """Mark the call started; True when this mark is its first."""
        with self.lock:
            if self.conn is None:
                self.conn = self._connect()
            try:
                if self.sqlite:
                    done = self.conn.execute(
                        "INSERT OR IGNORE INTO harnessc_started_calls (run_id, call, worker_id)"
                        " VALUES (?, ?, ?)",
                        (run_id, key, worker_id),
                    )
                    return bool(done.rowcount == 1)
                row = self.conn.execute(_PG_MARK, (run_id, key, worker_id)).fetchone()
                return row is not None
            except Exception:
                self.close_locked()
                raise

    def checkpoint(self) -> None:
        """SQLite: copy the marks' log into their file (a passive checkpoint, which never
        waits for a writer), on a connection of the calling thread's own."""
        if not self.sqlite or self.conn is None:
            return
        if self.copier is None:
            import sqlite3

            path = calls_path(self.url[len("sqlite:///") :])
            self.copier = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.copier.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def calls(self, run_id: str) -> list[str]:
        """The keys of the calls marked started in run ``run_id``."""
        with self.lock:
            if self.conn is None:
                self.conn = self._connect()
            query = "SELECT call FROM harnessc_started_calls WHERE run_id = " + (
                "?" if self.sqlite else "%s"
            )
            return sorted(str(row[0]) for row in self.conn.execute(query, (run_id,)).fetchall())

    def close(self) -> None:
        with self.lock:
            self.close_locked()
            copier, self.copier = self.copier, None
            if copier is not None:
                copier.close()

    def close_locked(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # a connection already broken: nothing to release
                pass


_PG_MARK = (
    "INSERT INTO harnessc_started_calls (run_id, call, worker_id) VALUES"
    " (%s, %s, %s) ON CONFLICT DO NOTHING RETURNING run_id"
)


def _dbapi_url(url: str) -> str:
    return _sqlalchemy_url(url).replace("+psycopg", "", 1)


_SQLITE_CALLS = (
    "CREATE TABLE IF NOT EXISTS harnessc_started_calls (run_id TEXT NOT NULL,"
    " call TEXT NOT NULL, worker_id TEXT NOT NULL, PRIMARY KEY (run_id, call))"
)


def calls_path(database: str) -> str:
    """The SQLite file of the call marks of the system database at ``database``."""
    return database + ".calls"


def _copy_older_marks(lite: Any, database: str) -> None:
    """Copy the marks an older harnessc wrote into the system database itself (a run it
    started may be recovered by this one); workers starting together copy alike."""
    if not os.path.exists(database):
        return
    lite.execute("ATTACH DATABASE ? AS system", (database,))
    try:
        found = lite.execute(
            "SELECT 1 FROM system.sqlite_master WHERE type = 'table'"
            " AND name = 'harnessc_started_calls'"
        ).fetchone()
        if found:
            lite.execute(
                "INSERT OR IGNORE INTO main.harnessc_started_calls (run_id, call, worker_id)"
                " SELECT run_id, call, worker_id FROM system.harnessc_started_calls"
            )
    finally:
        lite.execute("DETACH DATABASE system")


def _lease_lost(state: str) -> None:
    """A worker whose lease another took ends here and now: no step of the runs it held
    may run again in this process (they go on elsewhere)."""
    import sys

    sys.stderr.write(f"harnessc: this worker's lease was lost ({state}): stopping at once\n")
    sys.stderr.flush()
    os._exit(EXIT_LEASE_LOST)


def workers_table() -> Any:
    """``harnessc_workers``: a row per worker, its last heartbeat (the database's clock,
    in seconds) and whether it is alive or was recovered by another."""
    import sqlalchemy as sa

    return sa.Table(
        "harnessc_workers",
        sa.MetaData(),
        sa.Column("worker_id", sa.Text, primary_key=True),
        sa.Column("queue", sa.Text, nullable=False),
        sa.Column("heartbeat", sa.Float, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
    )


def started_table() -> Any:
    """``harnessc_started_calls``: a row per call with outside effects a run started
    (its key in the run: the count of its tool executions and the call id), so an
    execution that recovers the run knows not to run it again."""
    import sqlalchemy as sa

    return sa.Table(
        "harnessc_started_calls",
        sa.MetaData(),
        sa.Column("run_id", sa.Text, primary_key=True),
        sa.Column("call", sa.Text, primary_key=True),
        sa.Column("worker_id", sa.Text, nullable=False),
    )


def db_now(conn: Any) -> float:
    """The database's clock in seconds since the epoch: every worker judges leases by
    the same clock, whatever its machine's says."""
    import sqlalchemy as sa

    if conn.dialect.name == "sqlite":
        query = "SELECT (julianday('now') - 2440587.5) * 86400.0"
    else:
        query = "SELECT EXTRACT(EPOCH FROM clock_timestamp())"
    return float(conn.execute(sa.text(query)).scalar_one())


def live_workers(engine: Any, queue: str, lease_s: float) -> list[str]:
    """The workers of ``queue`` whose heartbeat is younger than the lease."""
    import sqlalchemy as sa

    t = workers_table()
    if not sa.inspect(engine).has_table(t.name):
        return []
    with engine.begin() as conn:
        cutoff = db_now(conn) - lease_s
        rows = conn.execute(
            sa.select(t.c.worker_id).where(
                t.c.queue == queue, t.c.state == "alive", t.c.heartbeat >= cutoff
            )
        ).fetchall()
    return sorted(str(r[0]) for r in rows)


def _create_table(engine: Any, table: Any) -> None:
    """Create ``table`` unless it exists; workers starting together race to create it,
    and a loser finds it made (PostgreSQL reports the race as a unique violation)."""
    import sqlalchemy as sa

    try:
        table.metadata.create_all(engine, checkfirst=True)
    except sa.exc.DBAPIError:
        if not sa.inspect(engine).has_table(table.name):
            raise


def _sqlalchemy_url(url: str) -> str:
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url

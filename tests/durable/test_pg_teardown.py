"""The teardown of a test's own PostgreSQL database holds against what else is connected
to it when the test ends: an autovacuum worker (which the test role may not terminate:
``DROP DATABASE ... WITH (FORCE)`` then fails with InsufficientPrivilege, "member of
pg_signal_backend"), and connections of the test role itself (DBOS's pools)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest

from tests.pgtest import drop_database

psycopg = pytest.importorskip("psycopg")

_AUTOVACUUM_WAIT_S = 150.0  # autovacuum visits each database once a naptime (1 min)


def _url(dsn: str, name: str) -> str:
    return dsn.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def database(pg_dsn: str) -> Iterator[str]:
    name = "t_" + secrets.token_hex(6)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        drop_database(pg_dsn, name)  # again, when a test stopped before it (IF EXISTS)


def _others(pg_dsn: str, name: str) -> list[tuple[object, ...]]:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, usename, backend_type FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        return list(rows.fetchall())


def test_the_teardown_drops_a_database_autovacuum_is_working_in(pg_dsn: str, database: str) -> None:
    with psycopg.connect(_url(pg_dsn, database), autocommit=True) as conn:
        # dead rows autovacuum must clean, slowly: its worker stays in the database
        conn.execute(
            "CREATE TABLE churn(x int) WITH (autovacuum_vacuum_threshold = 0, "
            "autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_cost_delay = 100, "
            "autovacuum_vacuum_cost_limit = 1)"
        )
        conn.execute("INSERT INTO churn SELECT generate_series(1, 20000)")
        conn.execute("DELETE FROM churn")
    deadline = time.monotonic() + _AUTOVACUUM_WAIT_S
    while not _others(pg_dsn, database):
        if time.monotonic() > deadline:
            pytest.skip(f"autovacuum did not visit the database in {_AUTOVACUUM_WAIT_S:.0f} s")
        time.sleep(0.5)
    drop_database(pg_dsn, database)
    assert not _others(pg_dsn, database)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        gone = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,))
        assert gone.fetchone() is None


def test_the_teardown_ends_the_test_roles_own_connections(pg_dsn: str, database: str) -> None:
    """A pool a test left open (a DBOS client not destroyed, a killed worker's
    connections still being noticed by the server) does not keep the database."""
    left_open = [psycopg.connect(_url(pg_dsn, database), autocommit=True) for _ in range(3)]
    try:
        left_open[0].execute("BEGIN")
        left_open[0].execute("CREATE TABLE held(x int)")  # a transaction still open
        drop_database(pg_dsn, database)
        assert not _others(pg_dsn, database)
    finally:
        for conn in left_open:
            conn.close()

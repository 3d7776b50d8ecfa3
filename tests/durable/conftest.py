"""PostgreSQL for the tests: the server ``.ci/run`` started (HARNESSC_TEST_PG_DSN), or the
one tests/conftest.py started with ``scripts/pg-test-up`` (stopped again at the end).
Each test gets its own schema (``pg_schema``) or database (``pg_database``), dropped
afterwards. Without any PostgreSQL the tests that need one skip and say why."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.testing import ProtocolServer
from tests.pgtest import drop_database

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The server tests/conftest.py started (or the caller's HARNESSC_TEST_PG_DSN)."""
    try:
        import psycopg
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[dev]')")
    dsn = os.environ.get("HARNESSC_TEST_PG_DSN", "")
    if not dsn:
        pytest.skip(os.environ.get("HARNESSC_TEST_PG_SKIP", "HARNESSC_TEST_PG_DSN is not set"))
    try:
        psycopg.connect(dsn, connect_timeout=10).close()
    except psycopg.Error as exc:
        pytest.skip(f"PostgreSQL at HARNESSC_TEST_PG_DSN does not answer: {exc}")
    yield dsn


def _admin(dsn: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    """A schema name of this test's own; dropped (with everything in it) afterwards."""
    name = "t_" + secrets.token_hex(6)
    try:
        yield name
    finally:
        _admin(pg_dsn, f"DROP SCHEMA IF EXISTS {name} CASCADE")


@pytest.fixture
def pg_database(pg_dsn: str) -> Iterator[str]:
    """The URL of a fresh database of this test's own; dropped afterwards."""
    from urllib.parse import urlsplit, urlunsplit

    name = "t_" + secrets.token_hex(6)
    _admin(pg_dsn, f"CREATE DATABASE {name}")
    parts = urlsplit(pg_dsn)
    try:
        yield urlunsplit(parts._replace(path="/" + name))
    finally:
        drop_database(pg_dsn, name)  # whatever is still connected (autovacuum, DBOS's pools)


def make_repo(kind: str, tmp_path: Path, request: Any) -> Any:
    """A session repo of ``kind`` ("jsonl" or "postgres") for this test."""
    from harnessc.runtime.session import JsonlSessionRepo

    if kind == "jsonl":
        return JsonlSessionRepo(tmp_path / "sessions")
    from harnessc.runtime.session.postgres import PostgresSessionRepo

    repo = PostgresSessionRepo(
        request.getfixturevalue("pg_dsn"), schema=request.getfixturevalue("pg_schema")
    )
    request.addfinalizer(repo.close)
    return repo


@pytest.fixture(scope="module")
def server() -> Iterator[ProtocolServer]:
    """The scripted model server of a module's tests."""
    with ProtocolServer() as running:
        yield running

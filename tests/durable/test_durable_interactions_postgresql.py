"""The interaction property test on PostgreSQL (what it is: test_durable_interactions.py;
a file of its own, so pytest-xdist runs it beside the SQLite runs)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import example, given

from .test_durable_interactions import (
    _SETTINGS,
    CAPPED_EXAMPLE,
    SUBAGENT_EXAMPLE,
    Server,
    _check,
    scenarios,
    server,
)

__all__ = ["server"]  # the module's fixture, shared with the SQLite file's


@_SETTINGS
@given(scenario=scenarios)
@example(scenario=SUBAGENT_EXAMPLE)
@example(scenario=CAPPED_EXAMPLE)
def test_a_killed_worker_changes_nothing_on_postgresql(
    scenario: tuple[list[str], bool, int, bool],
    tmp_path: Path,
    server: Server,
    pg_dsn: str,
) -> None:
    from tests.pgtest import drop_database

    from .conftest import _admin

    names = ["t_" + os.urandom(6).hex() for _ in range(2)]
    try:
        for name in names:
            _admin(pg_dsn, f"CREATE DATABASE {name}")
        base = pg_dsn.rsplit("/", 1)[0]
        _check(scenario, (f"{base}/{names[0]}", f"{base}/{names[1]}"), tmp_path, server)
    finally:
        for name in names:
            drop_database(pg_dsn, name)

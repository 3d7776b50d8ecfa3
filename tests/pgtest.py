"""Dropping the PostgreSQL databases the tests make (one helper for the whole suite).

``DROP DATABASE ... WITH (FORCE)`` must terminate every other backend in the database,
and the test role may terminate only its own: an autovacuum worker that happens to be
cleaning the database makes it fail with InsufficientPrivilege ("member of
pg_signal_backend"), now and then, at the end of a durable test. So the role ends its
own connections (DBOS's pools, a killed worker's) itself, and a plain ``DROP DATABASE``
(which stops autovacuum workers by itself) follows, tried again while another
connection of the role still arrives or leaves.
"""

from __future__ import annotations

import time

__all__ = ["drop_database"]

_OWN_BACKENDS = """
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE datname = %s AND pid <> pg_backend_pid() AND usename = current_user
"""


def drop_database(dsn: str, name: str, *, timeout_s: float = 60.0) -> None:
    """Drop the database ``name`` of the server at ``dsn`` (connected to as the role
    that made it), whatever is still connected to it."""
    import psycopg

    deadline = time.monotonic() + timeout_s
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            conn.execute(_OWN_BACKENDS, (name,))
            try:
                conn.execute(f"DROP DATABASE IF EXISTS {name}")
                return
            except psycopg.errors.ObjectInUse:  # one of ours came back, or is still leaving
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

"""``harnessc doctor`` for durable runs: the system database answers, its DBOS schema
is the one this DBOS expects, the queue is registered and workers are alive. Each
check is a (status, text) pair: ok, warning or error. The URL shown is redacted."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from harnessc.runtime.durable.config import DurableConfig, DurableError, resolve_database_url

__all__ = ["durable_checks"]


def durable_checks(durable_config: Callable[[], DurableConfig], cwd: str) -> list[tuple[str, str]]:
    """What is wrong, or fine, with the durable runs of the agent (its generated
    ``durable_config``) seen from ``cwd``."""
    from harnessc.runtime.session.postgres_storage import redact_url

    try:
        config = durable_config()
        url = resolve_database_url(config.database_url, cwd, create=False)
    except KeyError as exc:  # env(): a variable the spec needs is unset
        return [("error", f"durable: {exc.args[0] if exc.args else exc}")]
    except DurableError as exc:
        return [("error", f"durable: {exc}")]
    shown = redact_url(url)
    if url.startswith("sqlite:///") and not os.path.exists(url[len("sqlite:///") :]):
        return [("warning", f"durable: no runs yet: {shown} does not exist (a run creates it)")]
    try:
        import sqlalchemy as sa

        from harnessc.runtime.durable.engine import _sqlalchemy_url
    except ImportError:
        return [("error", "durable: DBOS is not installed: pip install 'harnessc[durable]'")]
    engine = sa.create_engine(_sqlalchemy_url(url))
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except Exception as exc:  # the driver's errors: one line, without the password
        engine.dispose()
        first = (str(exc).strip().splitlines() or [""])[0]
        return [("error", f"durable: {shown} does not answer: {redact_url(first)}")]
    checks = [("ok", f"durable: {shown} answers")]
    try:
        checks.append(_schema(engine, url))
        if checks[-1][0] != "warning" or "no DBOS schema" not in checks[-1][1]:
            checks.append(_queue(config, url))
            checks.append(_workers(engine, config))
    finally:
        engine.dispose()
    return checks


def _schema(engine: Any, url: str) -> tuple[str, str]:
    """The schema version recorded (``dbos_migrations``) beside the one this DBOS
    migrates to (``dbos._migration``: private, pinned by tests/durable/test_doctor.py)."""
    from dbos import _migration

    if url.startswith("sqlite"):
        current, latest = _migration.get_sqlite_migration_versions(engine)
    else:
        current, latest = _migration.get_migration_versions(engine, "dbos", True)
    if current == 0:
        return ("warning", "durable: no DBOS schema yet (a run or a worker creates it)")
    if current < latest:
        return (
            "warning",
            f"durable: DBOS schema version {current}; this DBOS migrates it to {latest} "
            "when a worker starts",
        )
    if current > latest:
        return (
            "error",
            f"durable: DBOS schema version {current} is newer than this DBOS's ({latest}): "
            "upgrade dbos here",
        )
    return ("ok", f"durable: DBOS schema version {current} (this DBOS's)")


def _queue(config: DurableConfig, url: str) -> tuple[str, str]:
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=url, application_name=config.app_name())
    try:
        queue = client.retrieve_queue(config.queue)
    finally:
        client.destroy()
    if queue is None:
        return ("warning", f"durable: queue {config.queue} is not registered yet (a worker does)")
    return ("ok", f"durable: queue {config.queue} is registered")


def _workers(engine: Any, config: DurableConfig) -> tuple[str, str]:
    from harnessc.runtime.durable.engine import live_workers

    live = live_workers(engine, config.queue, config.lease_s)
    if not live:
        return (
            "warning",
            f"durable: no live worker on queue {config.queue}: submitted runs wait for one "
            "(--worker)",
        )
    return ("ok", f"durable: {len(live)} live worker(s) on {config.queue}: {', '.join(live)}")

"""Durable runs on DBOS Transact (extra ``harnessc[durable]``): a run is a workflow whose
model calls and tool executions are checkpointed steps, pull points are durable waits,
and workers share a queue. Importing this package does not import DBOS."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessc.runtime.durable.cli import run_durable_cli
    from harnessc.runtime.durable.clients import DurableRuns
    from harnessc.runtime.durable.config import (
        DurableConfig,
        DurableError,
        default_worker_id,
        resolve_database_url,
    )

_EXPORTS: dict[str, str] = {
    "DurableConfig": "harnessc.runtime.durable.config",
    "DurableError": "harnessc.runtime.durable.config",
    "DurableRuns": "harnessc.runtime.durable.clients",
    "default_worker_id": "harnessc.runtime.durable.config",
    "resolve_database_url": "harnessc.runtime.durable.config",
    "run_durable_cli": "harnessc.runtime.durable.cli",
}

__all__ = [
    "DurableConfig",
    "DurableError",
    "DurableRuns",
    "default_worker_id",
    "resolve_database_url",
    "run_durable_cli",
]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)

"""Durable runs on DBOS Transact (extra ``harnessc[durable]``): a run is a workflow whose
model calls and tool executions are checkpointed steps, pull points are durable waits,
and workers share a queue; ``control.DurableRunControl`` is the run-control layer's
interface over them. Importing this package does not import DBOS. (The command line's
durable verbs are the terminal's: ``harnessc.runtime.run_durable_cli``.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
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
}

__all__ = [
    "DurableConfig",
    "DurableError",
    "DurableRuns",
    "default_worker_id",
    "resolve_database_url",
]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)

"""Where a run takes the readings that differ from one execution to the next: the clock
its wall-clock budget reads, and its run id.

``LIVE`` (the default) reads the process's monotonic clock and makes a random run id. A
durable run (``harnessc.runtime.durable``) passes readings its workflow recorded in
steps, so a run recovered after a crash keeps its run id and its wall-clock budget
counts the time already spent.
"""

from __future__ import annotations

import time
import uuid
from typing import Protocol

__all__ = ["LIVE", "LiveRunInputs", "RunInputs"]


class RunInputs(Protocol):
    """``AgentHarnessOptions.run_inputs``: the clock and the ids of a harness's runs."""

    def clock(self) -> float:
        """Seconds on a clock that never goes back (only differences are used)."""
        ...

    def new_run_id(self) -> str:
        """The id of a run that starts now."""
        ...


class LiveRunInputs:
    """The process's monotonic clock and random run ids."""

    __slots__ = ()

    def clock(self) -> float:
        return time.monotonic()

    def new_run_id(self) -> str:
        return uuid.uuid4().hex[:12]


LIVE: RunInputs = LiveRunInputs()

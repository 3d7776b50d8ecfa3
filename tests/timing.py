"""Wall-clock bounds that follow this machine's speed (one helper for the whole suite).

A test that checks that something ended promptly (an abort, a timeout, a hang guard)
compares the time it took with ``scaled(seconds)``: the figure that holds on an idle
machine, times how much slower this one runs right now. The slowdown is measured: a
fixed CPU workload is timed once per test process (median of three runs) and its wall
time compared with its CPU time on an idle machine of this kind (``REFERENCE_S``); the
load average per core, read at each call, raises it when the machine got busier since.
It is never below 1, so a bound is never tighter than its idle figure.

A test whose point is "ended before the slow path would have" makes that slow path
long (a server that stalls for a minute), so a scaled bound still tells them apart.
"""

from __future__ import annotations

import functools
import os
import statistics
import time

__all__ = ["REFERENCE_S", "scaled", "slowdown"]

# CPU seconds of the workload below on an idle core of this machine kind.
REFERENCE_S = 0.02
_ROUNDS = 300_000


def _workload() -> float:
    start = time.perf_counter()
    total = 0
    for i in range(_ROUNDS):
        total += i * i % 7
    return time.perf_counter() - start


@functools.cache
def _measured() -> float:
    return statistics.median(_workload() for _ in range(3)) / REFERENCE_S


def slowdown() -> float:
    """How many times slower than idle this machine runs now (at least 1)."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return max(1.0, _measured(), load)


def scaled(seconds: float) -> float:
    """``seconds`` (a bound that holds on an idle machine) stretched by ``slowdown()``."""
    return seconds * slowdown()

"""Blocking calls (fsync) moved off the event loop, so many sessions in one loop keep going.

``run_blocking(fn)`` runs ``fn`` in the loop's default worker threads and waits for it.
A cancellation of the waiting task still waits for ``fn`` to finish before it is
re-raised: the caller may close what ``fn`` works on (a session's file descriptor) as
soon as it sees the cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


async def run_blocking(fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread; finished (or failed) before this returns or raises."""
    future = asyncio.get_running_loop().run_in_executor(None, fn)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(future)
            break
        except asyncio.CancelledError:
            if future.done():
                raise
            cancelled = True  # wait for the thread, then pass the cancellation on
    if cancelled:
        raise asyncio.CancelledError
    return result

"""Sync python tools run in harnessc's tool threads (harnessc.runtime.tools.threads)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest

from harnessc.runtime.tools.threads import MAX_THREADS, run_in_tool_thread

_who: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


async def _runs_off_the_loop_in_the_callers_context() -> None:
    _who.set("caller")
    seen = await run_in_tool_thread(lambda: (threading.get_ident(), _who.get()))
    assert seen == (seen[0], "caller")
    assert seen[0] != threading.get_ident()


async def _an_exception_reaches_the_awaiting_task() -> None:
    def fail() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        await run_in_tool_thread(fail)


async def _blocking_calls_run_side_by_side() -> None:
    # Each call waits until all of them have started: it only ends if they run at once.
    count = min(4, MAX_THREADS)
    barrier = threading.Barrier(count, timeout=10)
    results = await asyncio.gather(*(run_in_tool_thread(barrier.wait) for _ in range(count)))
    assert sorted(results) == list(range(count))


async def _a_call_cancelled_before_a_thread_took_it_never_runs() -> None:
    # Every thread is held, so the last call waits in the queue while it is cancelled.
    release = threading.Event()
    held = [run_in_tool_thread(lambda: release.wait(10)) for _ in range(MAX_THREADS)]
    ran: list[str] = []
    late = run_in_tool_thread(lambda: ran.append("ran"))
    late.cancel()
    release.set()
    assert await asyncio.gather(*held) == [True] * MAX_THREADS
    await run_in_tool_thread(lambda: None)  # every thread passed the cancelled call by now
    for _ in range(MAX_THREADS):
        await run_in_tool_thread(lambda: None)
    assert ran == []


def test_runs_off_the_loop_in_the_callers_context():
    asyncio.run(_runs_off_the_loop_in_the_callers_context())


def test_an_exception_reaches_the_awaiting_task():
    asyncio.run(_an_exception_reaches_the_awaiting_task())


def test_blocking_calls_run_side_by_side():
    asyncio.run(_blocking_calls_run_side_by_side())


def test_a_call_cancelled_before_a_thread_took_it_never_runs():
    asyncio.run(_a_call_cancelled_before_a_thread_took_it_never_runs())

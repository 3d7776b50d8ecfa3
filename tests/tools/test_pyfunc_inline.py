"""A quick sync python tool runs on the event loop once its calls showed it quick; a
slow one stays in a worker thread, and one that turns slow goes back to the thread."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import pyfunc, python_tool


def _threads_of(tool, calls: int, **params):  # type: ignore[no-untyped-def]
    """Which thread ran each of ``calls`` calls ("loop" or "worker")."""
    seen: list[str] = []

    async def main() -> None:
        loop_thread = threading.get_ident()
        for _ in range(calls):
            result = await tool.execute("c1", params, AbortSignal(), lambda _: None, None)
            assert not result.is_error, result.content
            seen.append("loop" if result.content[0].text == str(loop_thread) else "worker")

    asyncio.run(main())
    return seen


def test_a_quick_sync_tool_runs_on_the_loop_after_its_first_calls():
    """Before: every call of a sync function went to a worker thread (about 0.3-0.5 ms
    of CPU for the hand-off, more than a quick function's own time)."""

    def where(n: int) -> int:
        return threading.get_ident()

    tool = python_tool(where)
    # a call that a loaded machine stretched past INLINE_BELOW_S starts the count again
    seen = _threads_of(tool, pyfunc.INLINE_AFTER + 50, n=1)
    assert seen[: pyfunc.INLINE_AFTER] == ["worker"] * pyfunc.INLINE_AFTER
    assert "loop" in seen


def test_a_slow_sync_tool_stays_in_the_thread():
    def slow(n: int) -> int:
        time.sleep(pyfunc.INLINE_BELOW_S * 2)
        return threading.get_ident()

    tool = python_tool(slow)
    assert _threads_of(tool, pyfunc.INLINE_AFTER + 3, n=1) == ["worker"] * (pyfunc.INLINE_AFTER + 3)


def test_a_tool_that_turns_slow_on_the_loop_goes_back_to_the_thread_for_good():
    state = {"slow": False}

    def sometimes(n: int) -> int:
        if state["slow"]:
            time.sleep(pyfunc.INLINE_SLOW_S * 2)
        return threading.get_ident()

    tool = python_tool(sometimes)
    assert "loop" in _threads_of(tool, pyfunc.INLINE_AFTER + 50, n=1)
    state["slow"] = True
    assert _threads_of(tool, 1, n=1) == ["loop"]  # this call shows it slow
    state["slow"] = False
    assert _threads_of(tool, 3, n=1) == ["worker"] * 3


def test_errors_and_bad_arguments_read_the_same_on_the_loop():
    def fails(n: int) -> int:
        if n < 0:
            raise ValueError("negative")
        return threading.get_ident()

    tool = python_tool(fails)
    assert "loop" in _threads_of(tool, pyfunc.INLINE_AFTER + 50, n=1)

    async def call(params):  # type: ignore[no-untyped-def]
        return await tool.execute("c1", params, AbortSignal(), lambda _: None, None)

    failed = asyncio.run(call({"n": -1}))
    assert failed.is_error and "ValueError: negative" in failed.content[0].text
    bad = asyncio.run(call({"m": 1}))
    assert bad.is_error and "bad arguments" in bad.content[0].text


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited")
def test_a_quick_tool_that_runs_an_event_loop_of_its_own_goes_back_to_the_thread():
    """Code written for a worker thread may start its own loop (``asyncio.run``): on the
    loop's thread that raises; the call is made again in the thread, and the function
    stays there."""

    async def inner(n: int) -> int:
        return n + 1

    def runs_a_loop(n: int) -> int:
        asyncio.run(inner(n))
        return threading.get_ident()

    tool = python_tool(runs_a_loop)
    seen = _threads_of(tool, pyfunc.INLINE_AFTER + 50, n=1)
    assert "loop" not in seen  # never returned from the loop's thread
    analysis = pyfunc._analysis(runs_a_loop)
    assert analysis.inline is not True

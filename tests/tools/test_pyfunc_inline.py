"""A quick sync python tool runs on the event loop once its calls showed it quick; a
slow one stays in a worker thread, and one that turns slow goes back to the thread."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
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


# A child process pinned to one CPU with two busy processes beside it: the scheduler
# preempts its calls mid-way, so a quick call's wall time now and then spans another
# process's time slice (milliseconds) though the call itself needs 0.1 ms of CPU.
_CROWDED = r"""
import asyncio, json, os, subprocess, sys, threading, time

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import pyfunc, python_tool

cpu = min(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpu})
hog = f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\nend = time.time() + 60\nwhile time.time() < end: pass"
hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(2)]


def spin(n: int) -> int:
    end = time.thread_time() + 0.0001
    while time.thread_time() < end:
        pass
    return threading.get_ident()


async def main() -> list[str]:
    tool = python_tool(spin)
    # shown quick already: no worker thread lives in this process (a thread's wait for
    # the GIL is a wait of the loop's thread too, and would count)
    pyfunc._analysis(spin).inline = True
    loop_thread = threading.get_ident()
    seen = []
    for _ in range(400):
        result = await tool.execute("c1", {"n": 1}, AbortSignal(), lambda _: None, None)
        seen.append("loop" if result.content[0].text == str(loop_thread) else "worker")
    return seen


try:
    time.sleep(0.2)  # the hogs are running
    print(json.dumps(asyncio.run(main())))
finally:
    for p in hogs:
        p.kill()
        p.wait()
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_a_quick_tool_preempted_by_a_busy_machine_stays_on_the_loop():
    """Before: an inline call's wall time decided, so the first call the scheduler
    preempted (another process's time slice, milliseconds, while the call needed 0.1
    ms) sent a quick tool back to the thread for good, and every later call paid the
    hand-off. Now a call counts as slow by its own CPU time, or by its wall time when
    it waited (a voluntary context switch: sleep, I/O, a lock)."""
    done = subprocess.run(
        [sys.executable, "-c", _CROWDED], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen == ["loop"] * len(seen), seen

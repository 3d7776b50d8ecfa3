"""A run goes on the caller's task: no task of its own per harness (issue 19).

A thousand harnesses under ``asyncio.gather`` each saved one task. ``abort`` still
ends the run as ``aborted`` and leaves the caller's task as it was; a cancellation of
the caller still reaches the caller once the run is recorded as aborted.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessc.runtime import LoopState, ToolResultMessage
from harnessc.runtime.providers.scripted import reply_tool_calls


def test_the_run_goes_on_the_callers_task(make_harness: Any) -> None:
    """Before: each prompt() made a task of its own and waited for it."""
    harness, _ = make_harness(["done"])
    seen: list[Any] = []
    harness.on("before_agent_start", lambda event: seen.append(asyncio.current_task()))

    async def main() -> tuple[Any, str]:
        result = await harness.prompt("go")
        return asyncio.current_task(), result.text

    caller, text = asyncio.run(main())
    assert text == "done"
    assert seen == [caller]


def test_abort_ends_the_run_and_leaves_the_callers_task_uncancelled(
    make_harness: Any, kit: Any
) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("sleep", {"seconds": 30})]), "unused"], tools=[kit.sleep_tool()]
    )

    async def main() -> tuple[str, int, str]:
        async def caller() -> tuple[str, int]:
            result = await harness.prompt("go")
            task = asyncio.current_task()
            assert task is not None
            await asyncio.sleep(0)  # no cancellation is left pending for the caller
            return result.status, task.cancelling()

        task = asyncio.create_task(caller())
        await asyncio.sleep(0.1)
        harness.abort()
        status, cancelling = await asyncio.wait_for(task, 5)
        again = await harness.prompt("again")
        return status, cancelling, again.status

    status, cancelling, again = asyncio.run(main())
    assert (status, cancelling, again) == ("aborted", 0, "done")


def test_a_cancelled_caller_is_cancelled_and_the_run_recorded_as_aborted(
    make_harness: Any, kit: Any
) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("sleep", {"seconds": 30})]), "after"], tools=[kit.sleep_tool()]
    )

    async def main() -> str:
        task = asyncio.create_task(harness.prompt("go"))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert harness.state is LoopState.IDLE
        return (await harness.prompt("again")).text

    assert asyncio.run(main()) == "after"
    results = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1 and results[0].is_error


def test_a_timeout_around_prompt_still_times_out(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("sleep", {"seconds": 30})]), "unused"], tools=[kit.sleep_tool()]
    )

    async def main() -> None:
        async with asyncio.timeout(0.2):
            await harness.prompt("go")

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    assert harness.state is LoopState.IDLE


def test_wait_for_idle_waits_for_the_run(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("sleep", {"seconds": 0.2})]), "done"], tools=[kit.sleep_tool()]
    )

    async def main() -> tuple[bool, str]:
        task = asyncio.create_task(harness.prompt("go"))
        await asyncio.sleep(0.05)
        await asyncio.wait_for(harness.wait_for_idle(), 5)
        return task.done(), (await task).text

    assert asyncio.run(main()) == (True, "done")


def test_abort_twice_leaves_no_cancellation_behind(make_harness: Any, kit: Any) -> None:
    harness, _ = make_harness(
        [reply_tool_calls([("sleep", {"seconds": 30})]), "unused"], tools=[kit.sleep_tool()]
    )

    async def main() -> tuple[str, int]:
        async def caller() -> tuple[str, int]:
            result = await harness.prompt("go")
            task = asyncio.current_task()
            assert task is not None
            return result.status, task.cancelling()

        task = asyncio.create_task(caller())
        await asyncio.sleep(0.1)
        harness.abort()
        harness.abort()
        return await asyncio.wait_for(task, 5)

    assert asyncio.run(main()) == ("aborted", 0)

"""Following a run never misses its last change (issue 40 item 14).

A stream waits for the run's next change between looks at its events. On Python 3.11
``asyncio.wait_for`` runs the awaited coroutine as a task of its own that starts one
loop iteration later: a wait that read the run's change event when it started could
read the one made after a change it should have seen, and sleep until the 15 s
keep-alive. These tests make the change land exactly there, with no clock: the loop
is stepped one iteration at a time.
"""

from __future__ import annotations

import asyncio

from harnessc.runtime.runs.run import Run, follow


async def _step(times: int = 1) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


def test_a_change_between_the_look_and_the_wait_is_not_lost() -> None:
    async def scenario() -> None:
        run = Run("r1")
        stream = follow(run, keep_alive_s=3600)
        first = asyncio.ensure_future(anext(stream))
        await _step()  # the follower looked (nothing yet) and began its wait
        assert not first.done()
        run.add_recorded({"type": "agent_end"})
        run.status = "done"
        run.changed()  # the run's last change, made right then
        await _step(20)  # a handful of loop iterations, never the keep-alive
        assert first.done(), "the stream slept through the run's last change"
        assert first.result() == (0, '{"type":"agent_end"}')
        rest = [item async for item in stream]
        assert rest == []  # the run ended: the stream ends after its events

    asyncio.run(scenario())


def test_every_change_wakes_every_follower_whenever_it_starts_waiting() -> None:
    async def scenario() -> None:
        run = Run("r2")
        seen: list[list[int]] = [[], [], []]

        async def reader(index: int) -> None:
            async for item in follow(run, keep_alive_s=3600):
                assert item is not None
                seen[index].append(item[0])

        readers = []
        for index in range(3):
            readers.append(asyncio.ensure_future(reader(index)))
            await _step(index)  # each reader starts at another moment
            run.add_recorded({"type": "message_end", "n": index})
            run.changed()
        run.status = "done"
        run.changed()
        await _step(30)
        assert all(r.done() for r in readers), "a reader slept through a change"
        assert seen == [[0, 1, 2]] * 3

    asyncio.run(scenario())


def test_a_wait_with_nothing_new_times_out_for_the_keep_alive() -> None:
    async def scenario() -> None:
        run = Run("r3")
        stream = follow(run, keep_alive_s=0.01)
        assert await anext(stream) is None  # nothing happened: a keep-alive
        run.status = "done"
        run.changed()
        assert [item async for item in stream] == []

    asyncio.run(scenario())

"""Runs started together begin a few per turn of the event loop (issue 47)."""

from __future__ import annotations

import asyncio
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.providers.transport import HttpClientPool
from harnessc.runtime.session import Session
from harnessc.runtime.support.start_gate import PER_TURN, admit
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import openai_events


class Turns:
    """Counts the turns of the running loop (one tick per turn)."""

    def __init__(self) -> None:
        self.now = 0
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0)
            self.now += 1

    def __enter__(self) -> Turns:
        self._task = asyncio.get_running_loop().create_task(self._tick())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


def test_admit_lets_a_few_begin_per_turn_in_order() -> None:
    async def run() -> list[tuple[int, int]]:
        begun: list[tuple[int, int]] = []
        with Turns() as turns:

            async def one(i: int) -> None:
                await admit()
                begun.append((i, turns.now))

            await asyncio.gather(*(one(i) for i in range(5 * PER_TURN + 3)))
        return begun

    begun = asyncio.run(run())
    assert [i for i, _ in begun] == list(range(5 * PER_TURN + 3))  # first come, first begun
    per_turn: dict[int, int] = {}
    for _, turn in begun:
        per_turn[turn] = per_turn.get(turn, 0) + 1
    assert max(per_turn.values()) == PER_TURN
    assert len(per_turn) >= 6


def test_a_run_alone_begins_in_the_turn_it_was_started() -> None:
    async def run() -> tuple[int, int]:
        with Turns() as turns:
            before = turns.now
            await admit()
            return before, turns.now

    before, after = asyncio.run(run())
    assert before == after


def test_a_thousand_prompts_under_one_gather_do_not_all_begin_in_one_turn() -> None:
    """Before: every run's first step (hooks, the prompt's entries, the request up to
    its wait for a slot) ran in the turn the tasks were started, a second of the loop
    at a thousand sessions; now PER_TURN runs begin in each turn."""
    n = 60
    with ProtocolServer() as server:
        server.set_handler(lambda request: ScriptedResponse.sse(openai_events(["ok"])))
        model = Model(id="m", api="openai-completions", base_url=f"{server.url}/v1")

        async def run() -> list[int]:
            clients = HttpClientPool(max_concurrent=4)
            started: list[int] = []
            with Turns() as turns:

                async def one() -> str:
                    harness = AgentHarness(
                        AgentHarnessOptions(
                            session=Session(), models={"m": model}, model="m", http_clients=clients
                        )
                    )
                    harness.on("before_agent_start", lambda event: started.append(turns.now))
                    try:
                        result: Any = await harness.prompt("hi")
                        return str(result.text)
                    finally:
                        await harness.close()

                texts = await asyncio.gather(*(one() for _ in range(n)))
            await clients.aclose()
            assert texts == ["ok"] * n
            return started

        started = asyncio.run(run())
    per_turn: dict[int, int] = {}
    for turn in started:
        per_turn[turn] = per_turn.get(turn, 0) + 1
    assert len(started) == n
    assert max(per_turn.values()) <= PER_TURN


def test_a_run_admitted_with_hold_is_not_queued_again_in_that_turn() -> None:
    """A harness admits its run before the run's start work (``hold``): the run's own
    admit in the same turn passes at once, not behind the runs still waiting; a pass
    is good only in the turn it was given in."""

    async def run() -> tuple[list[tuple[int, int, int]], int, int]:
        begun: list[tuple[int, int, int]] = []
        with Turns() as turns:

            async def one(i: int) -> None:
                await admit(hold=True)
                first = turns.now
                await admit()  # the same run's: at once
                begun.append((i, first, turns.now))

            await asyncio.gather(*(one(i) for i in range(3 * PER_TURN + 1)))
            await admit(hold=True)
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            before = turns.now
            await admit()  # a turn later: no pass left, but nothing waits either
            return begun, before, turns.now

    begun, before, after = asyncio.run(run())
    assert [i for i, _, _ in begun] == list(range(3 * PER_TURN + 1))
    assert all(first == second for _, first, second in begun)
    assert before == after


def test_a_pass_left_unused_does_not_let_a_later_run_skip_the_queue() -> None:
    async def run() -> list[str]:
        order: list[str] = []
        with Turns():

            async def holder() -> None:
                await admit(hold=True)  # never used in this turn
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                await admit()  # a later turn, behind the waiting runs
                order.append("holder")

            async def other(i: int) -> None:
                await admit()
                order.append(f"run {i}")

            await asyncio.gather(holder(), *(other(i) for i in range(3 * PER_TURN)))
        return order

    order = asyncio.run(run())
    assert order.index("holder") > PER_TURN

"""The shared pool's cap on requests in flight follows the event loop (issue 47)."""

from __future__ import annotations

import asyncio
import time

import pytest

from harnessc.runtime.providers import clients as clients_module
from harnessc.runtime.providers.clients import ADAPTIVE_CAP, HttpClientPool, Lease

URL = "http://127.0.0.1:9/v1"  # acquire() opens no connection: nothing is sent here
START, LOW, HIGH = ADAPTIVE_CAP


async def _settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


def test_the_cap_grows_while_waiting_requests_wake_promptly(monkeypatch: pytest.MonkeyPatch):
    """Before: the default cap was 64 whatever the model's latency, so a slow hosted
    model served 64 requests at a time; now each prompt hand-over opens one more slot."""
    monkeypatch.setattr(clients_module, "_PROMPT_S", 3600.0)  # every wake-up is prompt

    async def run() -> tuple[int, int, int]:
        clients = HttpClientPool(max_concurrent=None)
        leases = [await clients.acquire(URL) for _ in range(START)]
        assert clients.cap(URL) == START
        waiting = [asyncio.create_task(clients.acquire(URL)) for _ in range(10)]
        await _settle()
        assert clients.waiting(URL) == 10
        assert leases[0] is not None
        leases[0].release()  # one slot back: its waiter wakes, and the cap grows from there
        await _settle()
        done = sum(1 for task in waiting if task.done())
        cap = clients.cap(URL)
        for lease in [*leases[1:], *(task.result() for task in waiting)]:
            assert isinstance(lease, Lease)
            lease.release()
        await clients.aclose()
        return done, cap, clients.waiting(URL)

    assert asyncio.run(run()) == (10, START + 10, 0)


def test_the_cap_shrinks_when_the_loop_is_late(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(clients_module, "_PROMPT_S", 0.0)
    monkeypatch.setattr(clients_module, "_LATE_S", 0.0)  # any lateness is late

    async def run() -> None:
        clients = HttpClientPool(max_concurrent=None)
        leases = [await clients.acquire(URL) for _ in range(START)]
        first = asyncio.create_task(clients.acquire(URL))
        second = asyncio.create_task(clients.acquire(URL))
        await _settle()
        assert leases[0] is not None and leases[1] is not None and leases[2] is not None
        leases[0].release()  # handed to ``first``, which wakes late: the loop is busy
        time.sleep(0.002)
        await _settle()
        assert first.done() and clients.cap(URL) == START - 1
        leases[1].release()  # the slot goes with the lower cap: ``second`` still waits
        await _settle()
        assert not second.done() and clients.waiting(URL) == 1
        leases[2].release()
        await _settle()
        assert second.done()
        for lease in [*leases[3:], first.result(), second.result()]:
            assert lease is not None
            lease.release()
        await clients.aclose()

    asyncio.run(run())


def test_the_cap_stays_within_its_bounds(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(clients_module, "_PROMPT_S", 0.0)
    monkeypatch.setattr(clients_module, "_LATE_S", 0.0)

    async def run() -> int:
        clients = HttpClientPool(max_concurrent=None)
        for _ in range(3 * START):  # every hand-over late: the cap comes down to LOW
            leases = [await clients.acquire(URL) for _ in range(clients.cap(URL))]
            waiter = asyncio.create_task(clients.acquire(URL))
            await _settle()
            leases[0].release()
            time.sleep(0.001)
            await _settle()
            for lease in [*leases[1:], waiter.result()]:
                assert lease is not None
                lease.release()
            await _settle()
        cap = clients.cap(URL)
        await clients.aclose()
        return cap

    assert asyncio.run(run()) == LOW


def test_a_given_max_concurrent_stays_fixed():
    async def run() -> int:
        clients = HttpClientPool(max_concurrent=2)
        a, b = await clients.acquire(URL), await clients.acquire(URL)
        waiter = asyncio.create_task(clients.acquire(URL))
        await _settle()
        assert a is not None and b is not None
        a.release()
        await _settle()
        lease = waiter.result()
        assert lease is not None
        cap = clients.cap(URL)
        b.release()
        lease.release()
        await clients.aclose()
        return cap

    assert asyncio.run(run()) == 2


def test_each_request_measures_its_own_wait_for_the_slot_it_was_handed():
    """Before: the lateness was measured from the last hand-over of the origin, so a
    request handed its slot early in a long turn of the loop, and woken only in the next,
    counted as prompt when another slot was handed just before it woke: with a thousand
    sessions the cap grew to 300-500 while the loop ran 100 ms late. Now each request
    measures from its own hand-over."""

    async def run() -> int:
        clients = HttpClientPool(max_concurrent=None)
        leases = [await clients.acquire(URL) for _ in range(START)]
        waiting = [asyncio.create_task(clients.acquire(URL)) for _ in range(3)]
        await _settle()
        assert all(lease is not None for lease in leases[:3])
        leases[0].release()  # handed to the first waiter, which runs only in the next turn
        time.sleep(0.08)  # the rest of a long turn of the loop
        leases[1].release()  # handed to the second: it too waits 40 ms and more
        time.sleep(0.04)
        leases[2].release()  # the third is handed its slot just before they all wake
        await _settle()
        assert all(task.done() for task in waiting)
        cap = clients.cap(URL)  # two late (one fewer each), one prompt (one more)
        for lease in [*leases[3:], *(task.result() for task in waiting)]:
            assert isinstance(lease, Lease)
            lease.release()
        await clients.aclose()
        return cap

    assert asyncio.run(run()) == START - 1

"""The exchange's channel: ordered, bounded, one waiting side at a time, wake-ups offered."""

from __future__ import annotations

import asyncio

import pytest

from harnessc.runtime.providers.channel import Channel


def test_items_come_out_in_order_and_a_full_channel_makes_put_wait() -> None:
    async def main() -> list[int]:
        channel: Channel[int] = Channel(2)
        got: list[int] = []

        async def produce() -> None:
            for i in range(5):
                await channel.put(i)

        producer = asyncio.create_task(produce())
        await asyncio.sleep(0)
        assert len(channel) == 2 and not producer.done()  # waits for the reader
        for _ in range(5):
            got.append(await channel.get())
        await producer
        return got

    assert asyncio.run(main()) == [0, 1, 2, 3, 4]


def test_offer_adds_unless_full_and_wakes_a_waiting_reader() -> None:
    async def main() -> None:
        channel: Channel[str] = Channel(1)
        reader = asyncio.create_task(channel.get())
        await asyncio.sleep(0)
        assert channel.offer("wake")
        assert await reader == "wake"
        assert channel.offer("a") and not channel.offer("b")  # full: refused, not raised
        assert await channel.get() == "a"

    asyncio.run(main())


def test_a_cancelled_get_leaves_the_channel_usable() -> None:
    async def main() -> None:
        channel: Channel[int] = Channel(4)
        reader = asyncio.create_task(channel.get())
        await asyncio.sleep(0)
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        await channel.put(7)
        assert await channel.get() == 7

    asyncio.run(main())


def test_maxsize_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Channel(0)

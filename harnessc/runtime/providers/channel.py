"""A small bounded channel from one producer task to one consumer (an exchange's items).

``asyncio.Queue`` holds three deques and an Event (about 3 KB even when empty); a
process running a thousand requests at once holds a thousand of them. This one holds
a short list and at most one waiting future per side, which is all an exchange needs:
one task puts (and waits when the channel is full), one driver gets, and an interrupt
may ``offer`` a wake-up item without waiting.
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

__all__ = ["Channel"]

T = TypeVar("T")


class Channel(Generic[T]):
    """Items in order; ``put`` waits while ``maxsize`` items are unread."""

    __slots__ = ("_items", "_maxsize", "_getter", "_putter")

    def __init__(self, maxsize: int) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self._items: list[T] = []
        self._maxsize = maxsize
        self._getter: asyncio.Future[None] | None = None
        self._putter: asyncio.Future[None] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def offer(self, item: T) -> bool:
        """Add ``item`` unless the channel is full; True when it was added."""
        if len(self._items) >= self._maxsize:
            return False
        self._items.append(item)
        self._wake(self._getter)
        return True

    async def put(self, item: T) -> None:
        while len(self._items) >= self._maxsize:
            waiter = self._putter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._putter is waiter:
                    self._putter = None
        self._items.append(item)
        self._wake(self._getter)

    async def get(self) -> T:
        while not self._items:
            waiter = self._getter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                if self._getter is waiter:
                    self._getter = None
        item = self._items.pop(0)
        self._wake(self._putter)
        return item

    @staticmethod
    def _wake(waiter: asyncio.Future[None] | None) -> None:
        """Resolve ``waiter`` unless there is none or it is already done (cancelled)."""
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

"""How many hand-overs run at once: one agent's (``max_parallel``) and the whole tree's
(``max_parallel_tree``).

A hand-over takes a place under both caps before its sub-agent starts (or resumes) and
gives it back when the sub-agent ends or pauses; the others wait, in the order they
asked, which is the order of the calls in the reply (the tool batch starts them in call
order). A nested hand-over counts in the tree's cap while its parent's keeps its place,
so the tree's cap must be at least the tree's depth (the spec checks it).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

__all__ = ["HandOverCaps", "Slots"]


@dataclass(slots=True)
class Slots:
    """A number of places taken first come, first served (``limit`` None: no limit):
    ``running`` counts the places taken, ``waiting`` the hand-overs queued for one."""

    limit: int | None
    running: int = 0
    waiting: int = 0
    # asyncio's semaphore serves its waiters in the order they came
    _free: asyncio.Semaphore | None = field(default=None, init=False, repr=False)

    @property
    def full(self) -> bool:
        return self.limit is not None and (self.running >= self.limit or self.waiting > 0)

    async def take(self) -> None:
        if self.limit is not None:
            if self._free is None:
                self._free = asyncio.Semaphore(self.limit)
            self.waiting += 1
            try:
                await self._free.acquire()
            finally:
                self.waiting -= 1
        self.running += 1

    def give_back(self) -> None:
        self.running -= 1
        if self._free is not None:
            self._free.release()


@dataclass(slots=True)
class HandOverCaps:
    """The caps one agent's hand-overs run under: its own and its tree's (shared by
    every agent of the tree)."""

    agent: Slots
    tree: Slots

    @staticmethod
    def make(max_parallel: int | None, tree: Slots | None, max_tree: int | None) -> HandOverCaps:
        return HandOverCaps(Slots(max_parallel), tree if tree is not None else Slots(max_tree))

    @asynccontextmanager
    async def place(self, on_wait: Callable[[], object] | None = None) -> AsyncIterator[None]:
        """Hold a place under both caps while the block runs (``on_wait`` is called when
        the hand-over has to wait for one)."""
        if on_wait is not None and (self.agent.full or self.tree.full):
            on_wait()
        await self.agent.take()
        try:
            await self.tree.take()
        except BaseException:
            self.agent.give_back()
            raise
        try:
            yield
        finally:
            self.tree.give_back()
            self.agent.give_back()

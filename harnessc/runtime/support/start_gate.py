"""A few runs begin in each turn of the event loop; the others in the turns after.

Tasks started together (a thousand ``prompt()`` calls under one ``gather``) take their
first steps in the same turn of the loop, and a run's first step (its hooks, the
prompt's session entries, the first request up to its wait for a connection slot)
costs most of a millisecond: a thousand of them would make the loop late by a second
at once, and every other session with it. ``await admit()`` lets ``PER_TURN`` runs
begin in a turn and queues the rest, first come first served, for the turns after;
a run that begins alone begins at once.

``await admit(hold=True)`` (a harness before its run's own start work) leaves the task
a pass: its next ``admit()`` in the same turn of the loop returns at once, so the run
is admitted once, not queued again behind the runs still waiting.

The process's first admission also settles its garbage collector (``collector.settle``):
what start-up made leaves the collections the runs' objects cause.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque

from harnessc.runtime.support.collector import settle

__all__ = ["PER_TURN", "admit"]

PER_TURN = 8


class _Gate:
    """The runs begun in this turn of one loop, and those waiting for a later one."""

    __slots__ = ("begun", "waiters", "scheduled", "passes")

    def __init__(self) -> None:
        self.begun = 0
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.scheduled = False
        # Tasks admitted in this turn with ``hold``: their next admit passes at once.
        self.passes: set[asyncio.Task[object]] = set()

    def next_turn(self) -> None:
        """A new turn: the first ``PER_TURN`` waiters may begin (in the turn after this
        call, as the tasks it wakes run then), and the count starts again."""
        self.scheduled = False
        self.passes.clear()  # a pass is good for the turn it was given in
        woken = 0
        waiters = self.waiters
        while waiters and woken < PER_TURN:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                woken += 1
        self.begun = woken
        if woken or waiters:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self.next_turn)


_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Gate] = weakref.WeakKeyDictionary()


async def admit(*, hold: bool = False) -> None:
    """Return when a run may begin: at once while fewer than ``PER_TURN`` began in this
    turn of the loop and none wait, else in a later turn, in order. ``hold``: the
    task's next ``admit`` in this turn passes at once (the same run's)."""
    loop = asyncio.get_running_loop()
    gate = _gates.get(loop)
    if gate is None:  # the first run on this loop: start-up is over (the first loop's)
        settle()
        gate = _gates[loop] = _Gate()
    task = asyncio.current_task() if hold or gate.passes else None
    if gate.passes and task in gate.passes:
        gate.passes.discard(task)  # type: ignore[arg-type]
        return
    if gate.begun < PER_TURN and not gate.waiters:
        gate.begun += 1
        if not gate.scheduled:
            gate.scheduled = True
            loop.call_soon(gate.next_turn)
    else:
        waiter: asyncio.Future[None] = loop.create_future()
        gate.waiters.append(waiter)
        await waiter
    if hold and task is not None:
        gate.passes.add(task)

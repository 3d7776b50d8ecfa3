"""The fsyncs that end a turn of sessions on files, run on the session sync threads.

``await sync_off_loop(fn)`` runs ``fn`` (a session's ``sync``) on one of a few
long-lived threads of the process and waits for it, so a slow disk does not stall the
other sessions on the event loop. The calls made in one turn of an event loop go to the
threads as one batch (handed over at the end of that turn); a thread takes every batch
waiting when it wakes, runs the calls one after another, and hands each batch's results
back to its event loop in one call. Against one call of the loop's default executor per
fsync, this makes fewer thread wake-ups and cross-thread futures (at a thousand
sessions in one process, about 0.08 ms less CPU per turn in a benchmark of the session
writes alone).

A thread starts (up to ``MAX_THREADS``) only when a batch arrives while every thread is
busy, so a slow disk still gets fsyncs in parallel. A cancelled waiter still waits for
its call to finish before the cancellation is passed on: the caller may close the file
as soon as it sees it."""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Callable

__all__ = ["MAX_THREADS", "sync_off_loop"]

MAX_THREADS = 4

_Call = tuple[Callable[[], None], "asyncio.Future[None]"]
_Batch = tuple[asyncio.AbstractEventLoop, list[_Call]]
_Results = list[tuple["asyncio.Future[None]", BaseException | None]]


class _Threads:
    """The calls waiting and the threads running them (one set per process)."""

    def __init__(self) -> None:
        self.batches: queue.SimpleQueue[_Batch] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.started = 0
        self.idle = 0  # threads waiting for a batch
        # the calls of this turn of each event loop, handed over at its end
        self.gathering: dict[asyncio.AbstractEventLoop, list[_Call]] = {}

    def add(self, loop: asyncio.AbstractEventLoop, call: _Call) -> None:
        calls = self.gathering.get(loop)
        if calls is None:
            calls = self.gathering[loop] = []
            loop.call_soon(self.submit, loop)
        calls.append(call)

    def submit(self, loop: asyncio.AbstractEventLoop) -> None:
        calls = self.gathering.pop(loop, None)
        if not calls:
            return
        self.batches.put((loop, calls))
        if self.idle == 0 and self.started < MAX_THREADS:
            with self.lock:
                if self.idle == 0 and self.started < MAX_THREADS:
                    self.started += 1
                    thread = threading.Thread(
                        target=self._work, name="harnessc-session-sync", daemon=True
                    )
                    thread.start()

    def _work(self) -> None:
        batches = self.batches
        while True:
            with self.lock:
                self.idle += 1
            taken = [batches.get()]
            with self.lock:
                self.idle -= 1
            while True:
                try:
                    taken.append(batches.get_nowait())
                except queue.Empty:
                    break
            for loop, calls in taken:
                results: _Results = []
                for fn, future in calls:
                    error: BaseException | None = None
                    try:
                        fn()
                    except BaseException as exc:  # handed to the waiter
                        error = exc
                    results.append((future, error))
                try:
                    loop.call_soon_threadsafe(_deliver, results)
                except RuntimeError:  # that loop is closed: nobody waits any more
                    pass
            # Nothing of a finished call stays referenced while this thread waits.
            del taken, loop, calls, results, fn, future, error


def _deliver(results: _Results) -> None:
    for future, error in results:
        if future.done():
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)


_threads = _Threads()


def _after_fork() -> None:
    """A forked child has none of the parent's threads: it starts its own."""
    global _threads
    _threads = _Threads()


os.register_at_fork(after_in_child=_after_fork)


async def sync_off_loop(fn: Callable[[], None]) -> None:
    """``fn()`` on a session sync thread; finished (or failed) before this returns or
    raises (see the module docstring)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    _threads.add(loop, (fn, future))
    cancelled = False
    while True:
        try:
            await asyncio.shield(future)
            break
        except asyncio.CancelledError:
            if future.done():
                raise
            cancelled = True  # wait for the call to finish, then pass the cancellation on
    if cancelled:
        raise asyncio.CancelledError

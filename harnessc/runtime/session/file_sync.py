"""The fsyncs that end a turn of sessions on files, run on the session sync threads.

``await sync_off_loop(fn)`` runs ``fn`` (a session's ``sync``) on one of a few
long-lived threads of the process and waits for it, so a slow disk does not stall the
other sessions on the event loop. A thread takes every call waiting when it wakes, runs
them one after another, and hands the finished ones back to each event loop in one call
(group commit). Against the loop's default executor this saves about 0.1 ms of CPU per
turn with a thousand sessions in one process: no future chained across threads per
call, and a few lines of Python per call on the worker's side (each of them must take
the GIL from the busy event loop thread).

A second thread starts (up to ``MAX_THREADS``) only when calls arrive while every
thread is busy, so a slow disk still gets fsyncs in parallel. As with
``run_blocking``, a cancelled waiter still waits for its call to finish before the
cancellation is passed on: the caller may close the file as soon as it sees it.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Callable

__all__ = ["MAX_THREADS", "sync_off_loop"]

MAX_THREADS = 4

_Call = tuple[Callable[[], None], asyncio.AbstractEventLoop, "asyncio.Future[None]"]
_Results = list[tuple["asyncio.Future[None]", BaseException | None]]


class _Threads:
    """The calls waiting and the threads running them (one set per process)."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.started = 0
        self.idle = 0  # threads waiting for a call

    def submit(self, call: _Call) -> None:
        self.calls.put(call)
        if self.idle == 0 and self.started < MAX_THREADS:
            with self.lock:
                if self.idle == 0 and self.started < MAX_THREADS:
                    self.started += 1
                    thread = threading.Thread(
                        target=self._work, name="harnessc-session-sync", daemon=True
                    )
                    thread.start()

    def _work(self) -> None:
        calls = self.calls
        while True:
            with self.lock:
                self.idle += 1
            first = calls.get()
            with self.lock:
                self.idle -= 1
            batch = [first]
            del first
            while True:
                try:
                    batch.append(calls.get_nowait())
                except queue.Empty:
                    break
            finished: dict[asyncio.AbstractEventLoop, _Results] = {}
            for fn, loop, future in batch:
                error: BaseException | None = None
                try:
                    fn()
                except BaseException as exc:  # handed to the waiter
                    error = exc
                finished.setdefault(loop, []).append((future, error))
            del batch, fn, loop, future, error
            for loop, results in finished.items():
                try:
                    loop.call_soon_threadsafe(_deliver, results)
                except RuntimeError:  # that loop is closed: nobody waits any more
                    pass
            # Nothing of a finished call stays referenced while this thread waits.
            del finished, results, loop


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
    _threads.submit((fn, loop, future))
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

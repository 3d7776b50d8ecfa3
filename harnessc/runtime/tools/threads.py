"""The worker threads that run sync python tools off the event loop.

A few long-lived threads of the process, started as calls need them: up to
``MAX_THREADS`` (as many as asyncio's default executor has), shared by every loop of
the process. A call goes to them through one queue and its result comes back to its
loop with one ``call_soon_threadsafe``; the executor hop of ``asyncio.to_thread`` adds
a concurrent future with its lock and condition, a semaphore and a chained asyncio
future, and costs about five times the CPU time (45-65 against 8-13 µs on a 2-core
machine), which a thousand sessions pay at every tool call.

As with ``asyncio.to_thread``, the function runs in a copy of the caller's context
variables, a call cancelled before a thread took it never runs, and at interpreter
exit the threads finish the calls they were given, then end.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MAX_THREADS", "run_in_tool_thread"]

T = TypeVar("T")

MAX_THREADS = min(32, (os.cpu_count() or 1) + 4)

# A call: its loop, the future it settles, the caller's context's ``run``, the function.
_Call = tuple[
    asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], Callable[[], Any]
]


class _Threads:
    """The queue, and the threads that take calls from it."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.started = 0
        self.idle = 0  # threads waiting for a call that no call has claimed yet
        self.closed = False

    def submit(self, call: _Call) -> None:
        with self.lock:
            if self.closed:
                raise RuntimeError("cannot run a tool after interpreter shutdown")
            if self.idle:
                self.idle -= 1  # that thread takes it
                start = False
            else:
                start = self.started < MAX_THREADS
                self.started += start
        self.calls.put(call)
        if start:
            name = f"harnessc-tool-{self.started}"
            threading.Thread(target=self._work, name=name, daemon=False).start()

    def _work(self) -> None:
        calls = self.calls
        while True:
            call = calls.get()
            if call is None:
                return
            loop, future, run, function = call
            del call
            if not future.cancelled():  # a call cancelled while it waited never runs
                value: Any = None
                error: BaseException | None = None
                try:
                    value = run(function)
                except BaseException as exc:  # handed to the awaiting task, as to_thread does
                    error = exc
                try:
                    loop.call_soon_threadsafe(_settle, future, value, error)
                except RuntimeError:  # the loop is closed: nobody waits any more
                    pass
                del value, error
            del loop, future, run, function
            with self.lock:
                self.idle += 1

    def close(self) -> None:
        """Interpreter exit: the threads end once the calls before this are done."""
        with self.lock:
            self.closed = True
            started = self.started
        for _ in range(started):
            self.calls.put(None)


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled while it ran
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


_threads = _Threads()


def _at_exit() -> None:
    _threads.close()


def _after_fork() -> None:
    global _threads
    _threads = _Threads()  # the parent's threads do not exist in the child


# Run before the interpreter joins its threads at exit, as concurrent.futures does.
getattr(threading, "_register_atexit")(_at_exit)  # noqa: B009 - not in the typeshed stubs
os.register_at_fork(after_in_child=_after_fork)


def run_in_tool_thread(function: Callable[[], T]) -> asyncio.Future[T]:
    """A future of ``function()`` run in a tool thread, in a copy of this context."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    _threads.submit((loop, future, contextvars.copy_context().run, function))
    return future

"""The event loop the MCP clients live on: one daemon thread for the whole process.

The SDK's sessions are anyio task groups that must be entered and left in one task, and
a generated agent may run several event loops in turn (``asyncio.run`` per prompt in
library use). So the MCP connections live on their own loop in a background thread,
independent of the harness's loops; a tool call crosses over with
``run_coroutine_threadsafe`` (tens of microseconds). At interpreter exit ``atexit``
closes every connection that is still open (stdio children get the SDK's
close-stdin / SIGTERM / SIGKILL sequence), so no server outlives the agent.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["McpLoop", "mcp_loop", "run_in_mcp_loop"]

T = TypeVar("T")

_SHUTDOWN_TIMEOUT_S = 10.0


class McpLoop:
    """An asyncio loop in a daemon thread, with shutdown callbacks run at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closers: dict[int, Callable[[], Awaitable[None]]] = {}
        self._next = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._thread is None or not self._thread.is_alive():
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=run, name="harnessc-mcp", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop())

    def on_shutdown(self, closer: Callable[[], Awaitable[None]]) -> Callable[[], None]:
        """Run ``closer()`` on the MCP loop at exit (unless removed first)."""
        with self._lock:
            key = self._next
            self._next += 1
            self._closers[key] = closer

        def remove() -> None:
            with self._lock:
                self._closers.pop(key, None)

        return remove

    def shutdown(self) -> None:
        """Close every registered connection, then stop the thread (bounded wait)."""
        with self._lock:
            closers = list(self._closers.values())
            self._closers.clear()
            loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        if closers:

            async def close_all() -> None:
                await asyncio.gather(*(c() for c in closers), return_exceptions=True)

            future = asyncio.run_coroutine_threadsafe(close_all(), loop)
            try:
                future.result(_SHUTDOWN_TIMEOUT_S)
            except (concurrent.futures.TimeoutError, Exception):
                future.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_SHUTDOWN_TIMEOUT_S)
        with self._lock:
            if self._loop is loop:
                self._loop, self._thread = None, None


_LOOP = McpLoop()
atexit.register(_LOOP.shutdown)


def mcp_loop() -> McpLoop:
    return _LOOP


async def run_in_mcp_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on the MCP loop from any other loop; cancelling cancels it there."""
    future = _LOOP.submit(coro)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()
        raise

"""Loading on a background thread while the main thread waits for the network.

The terminal printer needs rich's modules only once the model answers, and a code
block's lexer only once the block's opening fence has streamed. ``Warmup`` runs such
loading jobs one after another on a daemon thread, started when the response headers
arrive (the request is out by then, so the thread cannot delay it), overlapping the
wait for the tokens. The main thread calls ``wait()`` (or checks ``done()``) before it
uses what a job loads: it never imports or compiles the same things at the same time
as the thread (no import-lock contention, no partly initialised module, no work twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import queue
import threading
from collections.abc import Callable

__all__ = ["Warmup", "imports"]


def imports(*modules: str) -> Callable[[], None]:
    """A job importing ``modules``."""

    def job() -> None:
        for name in modules:
            importlib.import_module(name)

    return job


class Warmup:
    """Runs jobs on one daemon thread, in the order they are added."""

    __slots__ = ("_idle", "_jobs", "_lock", "_on_idle", "_pending", "_thread")

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], object]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        # Called in the event loop's thread when the last pending job is over.
        self._on_idle: tuple[asyncio.AbstractEventLoop, Callable[[], None]] | None = None

    @property
    def started(self) -> bool:
        return self._thread is not None

    def add(self, job: Callable[[], object], on_idle: Callable[[], None] | None = None) -> None:
        """Run ``job`` after the jobs before it; ``on_idle``, when given from inside a
        running event loop, is called there once no job is left."""
        if on_idle is not None:
            with contextlib.suppress(RuntimeError):  # no running loop: nobody to call
                self._on_idle = (asyncio.get_running_loop(), on_idle)
        with self._lock:
            self._pending += 1
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="warmup", daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def done(self) -> bool:
        """True when no job is pending (a failed job counts as done: the caller's own
        import or call then raises where it is handled)."""
        return self._idle.is_set()

    def wait(self) -> None:
        """Return when every job added so far is over (at once when none is pending)."""
        self._idle.wait()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            with contextlib.suppress(Exception):
                job()
            with self._lock:
                self._pending -= 1
                idle = self._pending == 0
                if idle:
                    self._idle.set()
                notify = self._on_idle if idle else None
            if notify is not None:
                loop, callback = notify
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    loop.call_soon_threadsafe(callback)

"""Importing modules on a background thread while the main thread waits for the network.

The terminal printer needs rich's modules only once the model answers. ``Warmup``
imports them in a daemon thread started when the response headers arrive (the request
is out by then, so the thread cannot delay it), and the main thread calls ``wait()``
before it uses them: it never imports the same modules at the same time as the thread
(no import-lock contention, no partly initialised module).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import threading
from collections.abc import Callable

__all__ = ["Warmup"]


class Warmup:
    """Imports ``modules`` in the background once ``start()`` is called."""

    __slots__ = ("_done", "_modules", "_thread")

    def __init__(self, *modules: str) -> None:
        self._modules = modules
        self._thread: threading.Thread | None = None
        self._done = threading.Event()

    @property
    def started(self) -> bool:
        return self._thread is not None

    def start(self, on_done: Callable[[], None] | None = None) -> None:
        """Start importing; ``on_done`` is called in the loop's thread when it is over
        (when called from inside a running event loop)."""
        if self._thread is not None:
            return
        loop: asyncio.AbstractEventLoop | None = None
        if on_done is not None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self._thread = threading.Thread(
            target=self._load, args=(loop, on_done), name="render-warmup", daemon=True
        )
        self._thread.start()

    def done(self) -> bool:
        """True once every module is imported (or failed to: ``wait`` then returns)."""
        return self._done.is_set()

    def wait(self) -> None:
        """Return when the modules are imported (at once when never started: the caller
        then imports what it needs itself)."""
        if self._thread is not None:
            self._done.wait()

    def _load(
        self, loop: asyncio.AbstractEventLoop | None, on_done: Callable[[], None] | None
    ) -> None:
        try:
            for name in self._modules:
                importlib.import_module(name)
        except Exception:  # the caller's own import will raise it where it is handled
            pass
        finally:
            self._done.set()
        if loop is not None and on_done is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(on_done)

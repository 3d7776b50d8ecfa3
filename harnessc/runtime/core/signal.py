"""AbortSignal: how an abort reaches providers and tools."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["AbortSignal", "AbortedError"]


class AbortedError(Exception):
    """Raised by code that notices its signal was aborted."""


class AbortSignal:
    """A one-shot flag with listeners; ``abort()`` may be called from any thread."""

    __slots__ = ("_aborted", "_reason", "_listeners", "_event", "_loop")

    def __init__(self) -> None:
        self._aborted = False
        self._reason = ""
        self._listeners: list[Callable[[], None]] = []
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> str:
        return self._reason

    def abort(self, reason: str = "aborted") -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = reason
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # a listener must never stop the abort
                pass
        if self._event is not None and self._loop is not None:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is self._loop:
                self._event.set()
            else:
                self._loop.call_soon_threadsafe(self._event.set)

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` on abort (at once if already aborted); returns a remover."""
        if self._aborted:
            listener()
            return lambda: None
        self._listeners.append(listener)

        def remove() -> None:
            self.remove_listener(listener)

        return remove

    def remove_listener(self, listener: Callable[[], None]) -> None:
        """Stop calling ``listener`` (``add_listener``'s remover, without a closure)."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    async def wait(self) -> None:
        """Return once the signal is aborted."""
        if self._aborted:
            return
        if self._event is None:
            self._event = asyncio.Event()
            self._loop = asyncio.get_running_loop()
        await self._event.wait()

    def raise_if_aborted(self) -> None:
        if self._aborted:
            raise AbortedError(self._reason)

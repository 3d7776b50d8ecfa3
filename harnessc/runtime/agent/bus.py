"""The event bus: numbers events, hands them to subscribers, then to ``on`` handlers.

Events raised where the loop cannot await (a state change, a queue change, a tool's
progress update) are queued with ``emit_soon``; the queue is delivered in order before
the next event, and a tool update is delivered at once by a scheduled flush, so a long
tool shows its progress while it runs. The next event waits for that flush, so every
subscriber and hook sees a tool's updates before its end.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.events import ErrorEvent, Event, StateChangeEvent, describe_exception
from harnessc.runtime.core.hooks import PauseRequest

if TYPE_CHECKING:
    from harnessc.runtime.agent.hooks import HookRunner
    from harnessc.runtime.core.loop_states import LoopState

__all__ = ["EventBus"]


class EventBus:
    __slots__ = ("listeners", "hooks", "seq", "_pending", "_flusher", "on_pause_request")

    def __init__(self, hooks: HookRunner) -> None:
        # A tuple, replaced by each change: an idle bus holds none, and an event is
        # delivered to the listeners of its moment without a copy.
        self.listeners: tuple[Callable[[Event], Any], ...] = ()
        self.hooks = hooks
        self.seq = 0
        # A list, not a deque: an empty deque costs 600 bytes, and a process may hold
        # a thousand buses.
        self._pending: list[Event] = []
        self._flusher: asyncio.Task[None] | None = None
        # Where a PauseRequest returned by an event handler goes (the current run).
        self.on_pause_request: Callable[[str], None] | None = None

    def subscribe(self, listener: Callable[[Event], Any]) -> Callable[[], None]:
        self.listeners = (*self.listeners, listener)

        def unsubscribe() -> None:
            if listener in self.listeners:
                kept = list(self.listeners)
                kept.remove(listener)
                self.listeners = tuple(kept)

        return unsubscribe

    @property
    def wanted(self) -> bool:
        """True when someone listens (stream deltas are skipped otherwise)."""
        return bool(self.listeners) or self.hooks.has("message_update")

    def emit_soon(self, event: Event, *, now: bool = False) -> None:
        """Queue ``event``; with ``now``, deliver it from a task without waiting for the next."""
        self._pending.append(event)
        if now and (self._flusher is None or self._flusher.done()):
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._flusher = loop.create_task(self.flush())

    def state_changed(self, source: LoopState, target: LoopState) -> None:
        """Announce a run's state change (a ``StateMachine``'s listener)."""
        self.emit_soon(StateChangeEvent(from_state=source.value, to_state=target.value))

    async def flush(self) -> None:
        """Deliver the queued events, after the ones a scheduled flush is delivering."""
        flusher = self._flusher
        if flusher is not None and flusher is not asyncio.current_task():
            if not flusher.done():
                # An update it took from the queue may still be with an async subscriber:
                # it reaches everyone before the events after it (a tool's end, agent_end).
                await asyncio.wait((flusher,))
            if self._flusher is flusher:
                self._flusher = None
        while self._pending:
            await self._deliver(self._pending.pop(0))

    async def emit(self, event: Event) -> list[Any]:
        if self._pending or self._flusher is not None:
            await self.flush()
        if not self.listeners and not self.hooks.has(event.type):
            # Nobody to tell (most events of a service's sessions): numbered, not delivered.
            self.seq += 1
            event.seq = self.seq
            return []
        return await self._deliver(event)

    async def _deliver(self, event: Event) -> list[Any]:
        self.seq += 1
        event.seq = self.seq
        for listener in self.listeners:
            try:
                outcome = listener(event)
                if outcome is not None and inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:  # a subscriber never breaks the run
                if not isinstance(event, ErrorEvent):
                    await self.error(f"subscriber:{event.type}", exc)
        if not self.hooks.has(event.type):
            return []
        results = await self.hooks.run(event.type, event, getattr(event, "tool_name", None))
        for result in results:
            if isinstance(result, PauseRequest) and self.on_pause_request is not None:
                self.on_pause_request(result.reason)
        return results

    async def error(self, source: str, exc: BaseException | None, *, message: str = "") -> None:
        text = message or (f"{source}: {describe_exception(exc)}" if exc else source)
        await self.emit(ErrorEvent(source=source, message=text))

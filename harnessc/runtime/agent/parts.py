"""What the loop's steps share: the parts of one harness, and the host protocol.

The steps (``driver``, ``model_call``, ``tool_batch``, ``budget_gate``, ``endings``) are
functions of ``(parts, run)``: ``parts`` holds the long-lived pieces (bus, hooks,
context, settings, budget, queues), ``run`` the one ``RunState`` they read and change.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from harnessc.runtime.agent.bus import EventBus
from harnessc.runtime.agent.context import ContextWindow
from harnessc.runtime.agent.hooks import HookRunner
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.agent.settings import Settings
from harnessc.runtime.core.budget import Budget, BudgetTracker
from harnessc.runtime.core.events import QueueUpdateEvent
from harnessc.runtime.core.loop import LoopState
from harnessc.runtime.core.messages import Message, UserMessage, message_text
from harnessc.runtime.core.options import AgentHarnessOptions, Model, QueueMode
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.providers.base import Provider
from harnessc.runtime.session.session import Session

__all__ = ["LoopHost", "Parts"]


class LoopHost(Protocol):
    """What the steps ask of the facade."""

    compaction_pipeline: Any  # CompactionPipeline | None (see extensions.base)

    def provider_for(self, model: Model) -> Provider: ...

    async def system_prompt(self) -> str: ...

    async def compact(
        self, custom_instructions: str | None = None, *, reason: str = "manual"
    ) -> Any: ...


class _ClosedHost:
    """The host of a closed harness: what would need the harness says it is closed."""

    __slots__ = ()

    compaction_pipeline: Any = None

    def provider_for(self, model: Model) -> Provider:
        raise RuntimeError("the harness is closed")

    async def system_prompt(self) -> str:
        raise RuntimeError("the harness is closed")

    async def compact(
        self, custom_instructions: str | None = None, *, reason: str = "manual"
    ) -> Any:
        raise RuntimeError("the harness is closed")


_CLOSED_HOST = _ClosedHost()


class Parts:
    __slots__ = (
        "options",
        "session",
        "hooks",
        "bus",
        "context",
        "settings",
        "budget",
        "host",
        "signal",
        "run",
        "last_state",
        "new_messages",
        "steering",
        "follow_up",
        "steering_mode",
        "follow_up_mode",
    )

    def __init__(self, options: AgentHarnessOptions, session: Session, host: LoopHost) -> None:
        self.options = options
        self.session = session
        self.hooks = HookRunner()
        self.bus = EventBus(self.hooks)
        self.hooks.report = self._report
        self.bus.on_pause_request = self._pause_requested
        self.context = ContextWindow(session, self.bus)
        self.settings = Settings(options, session, self.bus)
        inputs = options.run_inputs
        self.budget = BudgetTracker(  # without run inputs: time.monotonic, as LIVE reads it
            options.budget or Budget(), clock=inputs.clock if inputs is not None else time.monotonic
        )
        self.host = host
        self.signal: AbortSignal | None = None
        self.run: RunState | None = None
        self.last_state = LoopState.IDLE  # the state when no run is open (IDLE or DONE)
        self.new_messages: list[Message] = []  # messages of the current prompt/resume call
        # Lists, not deques (600 bytes each when empty): the queues are short.
        self.steering: list[UserMessage] = []
        self.follow_up: list[UserMessage] = []
        self.steering_mode = options.steering_mode or QueueMode.ONE_AT_A_TIME
        self.follow_up_mode = options.follow_up_mode or QueueMode.ONE_AT_A_TIME

    @property
    def state(self) -> LoopState:
        return self.run.state if self.run is not None else self.last_state

    def detach(self) -> None:
        """Let go of the harness (``AgentHarness.close``): the hooks, the bus and the
        steps hold it and these parts, and the harness holds them, so without this a
        closed harness waits for the cyclic collector instead of being freed at once."""
        self.host = _CLOSED_HOST
        self.hooks.host = None
        self.hooks.report = None
        self.bus.on_pause_request = None

    def adopt(self, run: RunState) -> None:
        """Make ``run`` the open run: its state changes (``run.machine.transition``, the
        one place a state changes) are announced as ``state_change`` events."""
        run.machine.on_change = self.bus.state_changed
        self.run = run

    async def append(self, message: Message, *, started: bool = False) -> None:
        await self.context.append(message, self.new_messages, started=started)

    # -- queues ------------------------------------------------------------------

    def queue_changed(self) -> None:
        self.bus.emit_soon(
            QueueUpdateEvent(
                steering=[message_text(m) for m in self.steering],
                follow_up=[message_text(m) for m in self.follow_up],
            )
        )

    def dequeue(self, which: str) -> list[UserMessage]:
        queue = self.steering if which == "steering" else self.follow_up
        mode = self.steering_mode if which == "steering" else self.follow_up_mode
        if not queue:
            return []
        if mode is QueueMode.ALL:
            out = list(queue)
            queue.clear()
        else:
            out = [queue.pop(0)]
        self.queue_changed()
        return out

    # -- plumbing ----------------------------------------------------------------

    def _pause_requested(self, reason: str) -> None:
        if self.run is not None:
            self.run.pause_requested = reason

    async def _report(self, source: str, exc: BaseException, message: str) -> None:
        await self.bus.error(source, exc, message=message)

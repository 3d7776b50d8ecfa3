"""The parts of one agent that its turns share, and the run it has open.

The turn's stages (``plan``, ``call_model``, ``run_tools``, ``reflect``, and the loop
that walks them, ``loop``) are functions of ``(agent, run)``: ``agent`` is the
``AgentParts`` (bus, hooks, context window, settings, budget, providers, compaction,
queues), ``run`` the one ``RunState`` they read and change. Everything a stage needs
is here, handed down by the facade (``AgentHarness``) that built it; the facade itself
is only what user callbacks receive (``harness``: a callable system prompt, hook
handlers, an extension's compactor or compaction pipeline).
"""

from __future__ import annotations

import inspect
import time
from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent.bus import EventBus
from harnessc.runtime.agent.context import ContextWindow
from harnessc.runtime.agent.hooks import HookRunner
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.agent.settings import Settings
from harnessc.runtime.core.budget import Budget, BudgetTracker
from harnessc.runtime.core.events import Event, QueueUpdateEvent
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import Message, UserMessage, message_text
from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model, QueueMode
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.providers.base import Provider
from harnessc.runtime.session.session import Session

if TYPE_CHECKING:
    from harnessc.runtime.checkpoints.batch import BatchCheckpoints
    from harnessc.runtime.compaction.trigger import CompactionSettings
    from harnessc.runtime.options.harness_context import CompactionPipeline, HarnessContext
    from harnessc.runtime.providers.pool import ProviderPool

__all__ = ["AgentParts"]

_NO_BUDGET = Budget()  # no limits (never changed: new limits replace the object)


class AgentParts:
    __slots__ = (
        "options",
        "session",
        "hooks",
        "bus",
        "context",
        "settings",
        "budget",
        "harness",
        "pool",
        "signal",
        "busy",
        "run",
        "last_state",
        "new_messages",
        "steering",
        "follow_up",
        "steering_mode",
        "follow_up_mode",
        "compaction_settings",
        "compactor",
        "compaction_pipeline",
        "checkpoints",
    )

    def __init__(
        self, options: AgentHarnessOptions, session: Session, harness: HarnessContext
    ) -> None:
        self.options = options
        self.session = session
        self.hooks = HookRunner()
        self.hooks.host = harness
        self.bus = EventBus(self.hooks)
        self.bus.on_pause_request = self._pause_requested
        self.context = ContextWindow(session, self.bus)
        self.settings = Settings(options, session, self.bus)
        inputs = options.run_inputs
        self.budget = BudgetTracker(  # without run inputs: time.monotonic, as LIVE reads it
            options.budget or _NO_BUDGET,
            clock=inputs.clock if inputs is not None else time.monotonic,
        )
        # What user callbacks receive; None once the harness is closed.
        self.harness: HarnessContext | None = harness
        self.pool: ProviderPool | None = None  # this agent's providers and HTTP clients
        self.signal: AbortSignal | None = None
        self.busy = False  # a prompt or resume call is running
        self.run: RunState | None = None
        self.last_state = LoopState.IDLE  # the state when no run is open (IDLE or DONE)
        self.new_messages: list[Message] = []  # messages of the current prompt/resume call
        # Lists, not deques (600 bytes each when empty): the queues are short; made by
        # the first message queued (most harnesses never queue one).
        self.steering: list[UserMessage] | None = None
        self.follow_up: list[UserMessage] | None = None
        self.steering_mode = options.steering_mode or QueueMode.ONE_AT_A_TIME
        self.follow_up_mode = options.follow_up_mode or QueueMode.ONE_AT_A_TIME
        # Set by the compaction extension; None means CompactionSettings() defaults.
        self.compaction_settings: CompactionSettings | None = None
        # An extension's compaction (called with the harness), else the session summary.
        self.compactor: Any = None
        # The compaction pipeline (the compaction extension): it owns the trigger (the
        # plan stage's own threshold check is off) and overflow recovery runs it.
        self.compaction_pipeline: CompactionPipeline | None = None
        # The workspace checkpoints around tool batches (``agent.checkpoints``), made on
        # first use when the options turn them on.
        self.checkpoints: BatchCheckpoints | None = None

    @property
    def state(self) -> LoopState:
        return self.run.state if self.run is not None else self.last_state

    def detach(self) -> None:
        """Let go of the harness (``AgentHarness.close``): the hooks, the bus and the
        stages hold it and these parts, and the harness holds them, so without this a
        closed harness waits for the cyclic collector instead of being freed at once."""
        self.harness = None
        self.hooks.host = None
        self.bus.on_pause_request = None

    def callbacks_harness(self) -> HarnessContext:
        """The harness user callbacks receive; RuntimeError once it is closed."""
        if self.harness is None:
            raise RuntimeError("the harness is closed")
        return self.harness

    def adopt(self, run: RunState) -> None:
        """Make ``run`` the open run: its state changes (``run.machine.transition``, the
        one place a state changes) are announced as ``state_change`` events."""
        run.machine.on_change = self.bus.state_changed
        self.run = run

    async def append(self, message: Message, *, started: bool = False) -> None:
        await self.context.append(message, self.new_messages, started=started)

    async def commit(self, run: RunState, *, partial: bool = False) -> None:
        """Append the run's finalized tool results to the context in call order
        (``partial``: stop at the first call without one)."""
        for record in run.calls:
            if record.committed:
                continue
            if record.result is None:
                if partial:
                    break
                continue
            record.committed = True
            await self.append(record.result)

    # -- what a stage asks for ---------------------------------------------------

    async def system_prompt(self) -> str:
        """The system prompt for the next turn, with the model-invocable skills listed."""
        source = self.options.system_prompt
        harness = self.callbacks_harness() if callable(source) else None
        return await self.settings.system_prompt(source, harness)

    def provider_for(self, model: Model) -> Provider:
        """The provider serving ``model`` (the options' provider when one is given)."""
        if self.options.provider is not None:
            return self.options.provider
        if self.pool is None:  # made on first use: an agent that never calls stays light
            if self.harness is None:
                raise RuntimeError("the harness is closed")
            from harnessc.runtime.providers.pool import ProviderPool

            self.pool = ProviderPool(self.options.http_clients)  # shared: never closed here
        return self.pool.get(model.api)

    async def compact(
        self, custom_instructions: str | None = None, *, reason: str = "manual"
    ) -> Any:
        """Compact the session: the extension's ``compactor`` (it gets the harness), else
        the session summary (``compact_harness`` on these parts); the outcome or None."""
        if self.compactor is None:
            from harnessc.runtime.compaction.apply import compact_harness

            return await compact_harness(
                self, custom_instructions=custom_instructions, reason=reason
            )
        result = self.compactor(
            self.callbacks_harness(), custom_instructions=custom_instructions, reason=reason
        )
        if inspect.isawaitable(result):
            result = await result
        return result

    # -- what compaction reads (``compaction.CompactionHost``) ------------

    @property
    def model(self) -> Model:
        return self.settings.model

    @property
    def stream_options(self) -> AgentHarnessStreamOptions:
        return self.settings.stream_options

    @property
    def messages(self) -> list[Message]:
        """The model context as it stands (a copy)."""
        return list(self.context.messages)

    @property
    def is_busy(self) -> bool:
        return self.busy

    def context_tokens(self, use_usage: bool = True) -> int:
        return self.context.tokens(use_usage)

    def reload_messages(self) -> None:
        self.context.reload()

    def has_handlers(self, moment: str) -> bool:
        return self.hooks.has(moment)

    async def call_hooks(self, moment: str, event: Any, tool_name: str | None = None) -> list[Any]:
        return await self.hooks.run(moment, event, tool_name)

    async def emit(self, event: Event) -> list[Any]:
        return await self.bus.emit(event)

    # -- queues ------------------------------------------------------------------

    def queue_changed(self) -> None:
        self.bus.emit_soon(
            QueueUpdateEvent(
                steering=[message_text(m) for m in self.steering or ()],
                follow_up=[message_text(m) for m in self.follow_up or ()],
            )
        )

    def enqueue(self, which: str, message: UserMessage) -> None:
        """Queue ``message`` for steering or as a follow-up, and announce the queues."""
        if which == "steering":
            if self.steering is None:
                self.steering = []
            self.steering.append(message)
        else:
            if self.follow_up is None:
                self.follow_up = []
            self.follow_up.append(message)
        self.queue_changed()

    def clear_queues(self) -> list[UserMessage]:
        """Empty both queues; returns what they held."""
        dropped = [*(self.steering or ()), *(self.follow_up or ())]
        if dropped:
            self.steering = self.follow_up = None
            self.queue_changed()
        return dropped

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

"""AgentHarness: seed 000's harness driven by seed 004's state machine.

One run (``prompt`` or ``resume``) walks IDLE -> PLANNING (a model call) -> EXECUTING
(its tool calls) -> REFLECTING (what next) ... until DONE, or back to IDLE on a pause.
Everything the loop does is announced as a typed event; hooks registered with ``on``
may change what it does.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from harnessc.runtime.budget import Budget, BudgetTracker, BudgetUsage, BudgetWarning
from harnessc.runtime.commands import CommandOutcome, CommandRegistry, split_command
from harnessc.runtime.events import (
    AbortEvent,
    AgentEndEvent,
    AgentPauseEvent,
    AgentResumeEvent,
    AgentStartEvent,
    BudgetWarnEvent,
    ErrorEvent,
    Event,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ModelUpdateEvent,
    NoticeEvent,
    PlanCommitEvent,
    ProviderResponseEvent,
    QueueUpdateEvent,
    ResourcesUpdateEvent,
    RetryEvent,
    StateChangeEvent,
    ThinkingLevelUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolsUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
    event_matches,
)
from harnessc.runtime.hooks import (
    EVENT_ALIASES,
    AfterPlanEvent,
    AfterPlanResult,
    AfterProviderResponseEvent,
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeProviderPayloadEvent,
    BeforeProviderPayloadResult,
    BeforeProviderRequestEvent,
    BeforeProviderRequestResult,
    BeforeStopEvent,
    ContextEvent,
    ContextResult,
    HookSpec,
    PauseRequest,
    StopDecision,
    ToolCallEvent,
    ToolCallResult,
    ToolResultEvent,
    ToolResultPatch,
    accepts_context,
    canonical_hook_name,
)
from harnessc.runtime.loop import LoopState, StateMachine
from harnessc.runtime.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
    estimate_context_tokens,
    estimate_tokens,
)
from harnessc.runtime.options import (
    AgentHarnessOptions,
    AgentHarnessStreamOptions,
    Model,
    QueueMode,
    RetryOptions,
    ThinkingLevel,
    ToolContextSource,
)
from harnessc.runtime.providers.base import (
    Context,
    Provider,
    ProviderRequest,
    ProviderRetry,
    ToolSpec,
)
from harnessc.runtime.resources.types import AgentHarnessResources
from harnessc.runtime.session.session import Session
from harnessc.runtime.signal import AbortSignal
from harnessc.runtime.tools.base import AgentTool, ToolResult
from harnessc.runtime.validation import validate_arguments

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "AgentHarness",
    "HarnessBusyError",
    "RunResult",
    "RunStatus",
]

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."

RunStatus = Literal["done", "paused", "awaiting_tool", "aborted", "error"]


class HarnessBusyError(RuntimeError):
    """A run method was called while another run is in progress."""


@dataclass(slots=True)
class RunResult:
    """What ``prompt`` / ``resume`` return. A pause is a value, never an exception."""

    status: RunStatus
    reason: str = ""
    pending_tool_calls: list[ToolCall] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    reply: str | None = None  # a /command's answer (no model call was made)

    @property
    def text(self) -> str:
        """The text of the last assistant message of the run (or the command reply)."""
        if self.reply is not None:
            return self.reply
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message.text
        return ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reason": self.reason,
            "pending_tool_calls": [c.to_dict() for c in self.pending_tool_calls],
            "reply": self.reply,
        }


@dataclass(slots=True)
class _Handler:
    fn: Callable[..., Any]
    takes_harness: bool
    spec: HookSpec | None = None
    filter: Callable[[Any], bool] | None = None


@dataclass(slots=True)
class _Run:
    """The state of one run between its start and DONE (kept across a pause)."""

    id: str
    system_prompt: str | None = None
    new_messages: list[Message] = field(default_factory=list)
    assistant: AssistantMessage | None = None
    calls: list[ToolCall] = field(default_factory=list)
    results: dict[str, ToolResultMessage] = field(default_factory=dict)
    terminate: dict[str, bool] = field(default_factory=dict)
    pending_external: list[ToolCall] = field(default_factory=list)
    turn: int = 0
    turn_open: bool = False
    overflow_retried: bool = False
    pause_requested: str | None = None
    committed: set[str] = field(default_factory=set)


_STATUS_FIELDS = ("headers", "metadata")


class AgentHarness:
    """The agent: options + session + resources + hooks, one run at a time."""

    def __init__(self, options: AgentHarnessOptions) -> None:
        self.options = options
        self.session: Session = options.session if options.session is not None else Session()
        self.models: dict[str, Model] = dict(options.models)
        self.commands = CommandRegistry()
        self._tools: dict[str, AgentTool] = {}
        for tool in options.tools:
            self._tools[tool.name] = tool
        self._active_tool_names: list[str] = (
            list(options.active_tool_names)
            if options.active_tool_names is not None
            else list(self._tools)
        )
        self._model = self._resolve_model(options.model)
        self._thinking_level = options.thinking_level or ThinkingLevel.OFF
        self._resources = options.resources or AgentHarnessResources()
        self._pending_resources: AgentHarnessResources | None = None
        self._stream_options = options.stream_options or AgentHarnessStreamOptions()
        self._tool_context = options.tool_context or ToolContextSource(None)
        self._steering_mode = options.steering_mode or QueueMode.ONE_AT_A_TIME
        self._follow_up_mode = options.follow_up_mode or QueueMode.ONE_AT_A_TIME
        self._steering: deque[UserMessage] = deque()
        self._follow_up: deque[UserMessage] = deque()
        self.budget = BudgetTracker(options.budget or Budget())
        self._listeners: list[Callable[[Event], Any]] = []
        self._handlers: dict[str, list[_Handler]] = {}
        self._seq = 0
        self._machine = StateMachine(self._on_state_change)
        self._run: _Run | None = None
        self._task: asyncio.Task[RunResult] | None = None
        self._signal: AbortSignal | None = None
        self._busy = False
        self._watcher: Any = None
        # Set by the compaction extension; None means CompactionSettings() defaults.
        self.compaction_settings: Any = None
        self._pending_events: list[Event] = []
        self._messages: list[Message] = []
        self._message_entry_ids: list[str | None] = []
        self._estimates: list[int] = []  # chars/4 estimate of each message, kept incrementally
        for spec in options.hooks:
            self._add_handler(spec.moment, spec.handler, spec)
        self._restore_from_session()
        for extension in options.extensions:
            extension.install(self)

    # -- properties ---------------------------------------------------------------

    @property
    def state(self) -> LoopState:
        return self._machine.state

    @property
    def is_busy(self) -> bool:
        return self._busy

    @property
    def messages(self) -> list[Message]:
        """The model context as it stands (compaction summary first when compacted)."""
        return list(self._messages)

    @property
    def model(self) -> Model:
        return self._model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self._thinking_level

    @property
    def resources(self) -> AgentHarnessResources:
        return self._resources

    @property
    def tools(self) -> dict[str, AgentTool]:
        return dict(self._tools)

    @property
    def active_tool_names(self) -> list[str]:
        return list(self._active_tool_names)

    @property
    def stream_options(self) -> AgentHarnessStreamOptions:
        return self._stream_options

    @property
    def pending_tool_calls(self) -> list[ToolCall]:
        """Calls without a result in a paused run (external ones when awaiting a tool)."""
        run = self._run
        if run is None or self._busy:
            return []
        if self.state is LoopState.AWAITING_TOOL:
            return list(run.pending_external)
        return [c for c in run.calls if c.id not in run.results]

    @property
    def paused_reason(self) -> str | None:
        if (
            self._run is not None
            and not self._busy
            and self.state
            in (
                LoopState.IDLE,
                LoopState.AWAITING_TOOL,
            )
        ):
            return "awaiting_tool" if self.state is LoopState.AWAITING_TOOL else "paused"
        return None

    # -- subscriptions and hooks -------------------------------------------------

    def subscribe(self, listener: Callable[[Event], Any]) -> Callable[[], None]:
        """Call ``listener`` with every event; returns an unsubscribe callable."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def on(self, name: str, handler: Callable[..., Any]) -> Callable[[], None]:
        """Register ``handler`` on a hook moment or event (any name of any of the designs)."""
        return self._add_handler(name, handler, None)

    def _add_handler(
        self, name: str, handler: Callable[..., Any], spec: HookSpec | None
    ) -> Callable[[], None]:
        canonical = canonical_hook_name(name)
        alias = EVENT_ALIASES.get(name)
        event_filter: Callable[[Any], bool] | None = None
        if alias is not None and alias[1] is not None:
            event_filter = functools.partial(event_matches, name)
        entry = _Handler(
            fn=handler,
            takes_harness=accepts_context(handler),
            spec=spec,
            filter=event_filter,
        )
        self._handlers.setdefault(canonical, []).append(entry)

        def remove() -> None:
            handlers = self._handlers.get(canonical, [])
            if entry in handlers:
                handlers.remove(entry)

        return remove

    async def call_hooks(self, moment: str, event: Any, tool_name: str | None = None) -> list[Any]:
        """Run the handlers of a moment (for parts of the runtime that own a moment)."""
        return await self._call_hooks(moment, event, tool_name)

    def has_handlers(self, moment: str) -> bool:
        return bool(self._handlers.get(moment))

    async def emit(self, event: Event) -> list[Any]:
        """Number ``event``, hand it to every subscriber, then to ``on`` handlers of its type."""
        if self._pending_events:
            await self._flush_pending_events()
        self._seq += 1
        event.seq = self._seq
        for listener in list(self._listeners):
            try:
                outcome = listener(event)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception as exc:  # a subscriber never breaks the run
                if not isinstance(event, ErrorEvent):
                    await self._report_error(f"subscriber:{event.type}", exc)
        if event.type in self._handlers:
            results = await self._call_hooks(event.type, event, getattr(event, "tool_name", None))
            for result in results:
                if isinstance(result, PauseRequest) and self._run is not None:
                    self._run.pause_requested = result.reason
            return results
        return []

    async def _call_hooks(
        self,
        moment: str,
        event: Any,
        tool_name: str | None = None,
        *,
        fail: list[str] | None = None,
        on_result: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        """Run the handlers of ``moment`` in order; a raising handler is reported as an error.

        When ``fail`` is given, the message of each failure is appended to it (so the
        caller can fail closed).
        """
        out: list[Any] = []
        for handler in list(self._handlers.get(moment, ())):
            spec = handler.spec
            if spec is not None and tool_name is not None and not spec.matches_tool(tool_name):
                continue
            if handler.filter is not None and not handler.filter(event):
                continue
            try:
                result = handler.fn(event, self) if handler.takes_harness else handler.fn(event)
                if inspect.isawaitable(result):
                    timeout = spec.timeout_s if spec is not None else None
                    result = await (asyncio.wait_for(result, timeout) if timeout else result)
            except asyncio.CancelledError:
                raise
            except (Exception, SystemExit) as exc:  # a hook's sys.exit() must not end the agent
                await self._hook_failed(moment, handler, exc, "failed", fail)
                continue
            if result is not None:
                if on_result is not None:
                    try:
                        on_result(result)  # chained moments: the next handler sees the change
                    except Exception as exc:
                        await self._hook_failed(moment, handler, exc, "returned", fail)
                        continue
                out.append(result)
        return out

    async def _hook_failed(
        self, moment: str, handler: _Handler, exc: BaseException, what: str, fail: Any
    ) -> None:
        spec = handler.spec
        label = (spec.name if spec and spec.name else None) or getattr(
            handler.fn, "__qualname__", "handler"
        )
        if what == "returned":
            message = f"hook {moment} ({label}) returned an unusable result: "
        else:
            message = f"hook {moment} ({label}) failed: "
        message += _describe_exception(exc)
        if fail is not None:
            fail.append(message)
        if moment != "error":
            await self._report_error(f"hook:{moment}", exc, message=message)

    async def _report_error(
        self, source: str, exc: BaseException | None, *, message: str = ""
    ) -> None:
        text = message or (f"{source}: {_describe_exception(exc)}" if exc else source)
        await self.emit(ErrorEvent(source=source, message=text))

    async def notice(self, source: str, message: str, level: str = "info") -> None:
        """Emit a notice event (extensions use it for non-fatal reports)."""
        await self.emit(NoticeEvent(source=source, level=level, message=message))

    # -- settings (take effect at the next turn) ---------------------------------

    def _resolve_model(self, model: str | Model | None) -> Model:
        if isinstance(model, Model):
            return model
        if model is None:
            if not self.models:
                raise ValueError("AgentHarnessOptions needs at least one model")
            return next(iter(self.models.values()))
        if model not in self.models:
            raise KeyError(f"unknown model {model!r}; known: {', '.join(self.models) or 'none'}")
        return self.models[model]

    def model_key(self) -> str:
        for key, model in self.models.items():
            if model is self._model:
                return key
        return self._model.id

    async def set_model(self, model: str | Model) -> None:
        self._model = self._resolve_model(model)
        self.session.append_model_change(self._model.provider or self._model.api, self._model.id)
        await self.emit(
            ModelUpdateEvent(
                key=self.model_key(), provider=self._model.provider, model_id=self._model.id
            )
        )

    async def set_thinking_level(self, level: ThinkingLevel | str) -> None:
        self._thinking_level = ThinkingLevel(level)
        self.session.append_thinking_level_change(self._thinking_level.value)
        await self.emit(ThinkingLevelUpdateEvent(level=self._thinking_level.value))

    async def set_active_tools(self, names: Sequence[str]) -> None:
        unknown = [n for n in names if n not in self._tools]
        if unknown:
            raise KeyError(f"unknown tools: {', '.join(unknown)}; known: {', '.join(self._tools)}")
        self._active_tool_names = list(names)
        self.session.append_active_tools_change(self._active_tool_names)
        await self.emit(ToolsUpdateEvent(active_tool_names=list(self._active_tool_names)))

    def add_tools(self, tools: Iterable[AgentTool], *, activate: bool = True) -> None:
        """Add tools (extensions contribute theirs at install time)."""
        for tool in tools:
            self._tools[tool.name] = tool
            if activate and tool.name not in self._active_tool_names:
                self._active_tool_names.append(tool.name)

    async def set_resources(self, resources: AgentHarnessResources) -> None:
        """New skills and templates; applied now when idle, else at the next turn."""
        if self._busy:
            self._pending_resources = resources
            return
        await self._apply_resources(resources)

    async def _apply_resources(self, resources: AgentHarnessResources) -> None:
        self._resources = resources
        self._pending_resources = None
        await self.emit(
            ResourcesUpdateEvent(
                skills=[s.name for s in resources.skills],
                prompt_templates=[t.name for t in resources.prompt_templates],
                diagnostics=[f"{d.path}: {d.message}" for d in resources.diagnostics],
            )
        )

    def set_tool_context(self, source: ToolContextSource) -> None:
        self._tool_context = source

    def set_budget(self, budget: Budget) -> None:
        self.budget.raise_limits(budget)

    # -- queues ------------------------------------------------------------------

    def steer(self, message: str | UserMessage) -> None:
        """Queue a message delivered after the current tool batch."""
        self._steering.append(_user_message(message))
        self._queue_changed()

    def follow_up(self, message: str | UserMessage) -> None:
        """Queue a message delivered when the agent would otherwise stop."""
        self._follow_up.append(_user_message(message))
        self._queue_changed()

    def _queue_changed(self) -> None:
        event = QueueUpdateEvent(
            steering=[_text_of(m) for m in self._steering],
            follow_up=[_text_of(m) for m in self._follow_up],
        )
        self._pending_events.append(event)

    def _dequeue(self, queue: deque[UserMessage], mode: QueueMode) -> list[UserMessage]:
        if not queue:
            return []
        if mode is QueueMode.ALL:
            out = list(queue)
            queue.clear()
        else:
            out = [queue.popleft()]
        self._queue_changed()
        return out

    # -- running ---------------------------------------------------------------

    async def prompt(
        self, text: str | Message, images: Sequence[ImageContent] | None = None
    ) -> RunResult:
        """Run the agent on a prompt until it is done, paused or awaiting a tool result."""
        self._check_idle()
        if self.state is LoopState.AWAITING_TOOL:
            ids = ", ".join(c.id for c in self.pending_tool_calls)
            raise HarnessBusyError(
                f"the agent is waiting for external tool results ({ids}); call resume() with them"
            )
        if not isinstance(text, str):
            return await self._start(self._begin_run(text, _text_of(text), list(images or [])))
        prompt_text = text
        if (command := split_command(text)) is not None:
            outcome = await self.dispatch_command(*command)
            if outcome.kind == "reply":
                return RunResult(status="done", reply=outcome.text)
            if outcome.kind == "unknown":
                return RunResult(status="error", reason="unknown_command", reply=outcome.text)
            prompt_text = outcome.text
        content: str | list[UserContent] = prompt_text
        if images:
            content = [TextContent(prompt_text), *images]
        message = UserMessage(content=content)
        return await self._start(self._begin_run(message, prompt_text, list(images or [])))

    async def resume(
        self,
        results: dict[str, Any] | None = None,
        *,
        budget: Budget | None = None,
    ) -> RunResult:
        """Continue after a pull point: tool results for AWAITING_TOOL, or after a pause."""
        self._check_idle()
        run = self._run
        if run is None:
            raise RuntimeError("nothing to resume: the agent is not paused")
        if budget is not None:
            self.budget.raise_limits(budget)
        if self.state is LoopState.AWAITING_TOOL:
            missing = [c.id for c in run.pending_external if not results or c.id not in results]
            if missing:
                raise ValueError(
                    "resume() at a tool pull point needs a result for every pending call; "
                    f"missing: {', '.join(missing)}"
                )
            assert results is not None
            return await self._start(self._resume_tools(run, results))
        if self.state is LoopState.IDLE:
            return await self._start(self._resume_paused(run))
        raise RuntimeError(f"cannot resume from state {self.state.value}")

    def prompt_sync(self, text: str, images: Sequence[ImageContent] | None = None) -> RunResult:
        """``prompt`` for scripts without an event loop."""
        return asyncio.run(self.prompt(text, images))

    def resume_sync(
        self, results: dict[str, Any] | None = None, *, budget: Budget | None = None
    ) -> RunResult:
        return asyncio.run(self.resume(results, budget=budget))

    def abort(self, reason: str = "aborted") -> None:
        """Cancel the running provider request and tools; the run ends as ``aborted``."""
        if self._signal is not None:
            self._signal.abort(reason)
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def wait_for_idle(self) -> None:
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                pass

    def _check_idle(self) -> None:
        if self._busy:
            raise HarnessBusyError("the agent is busy with another run; wait for it or abort it")

    async def _start(self, body: Awaitable[RunResult]) -> RunResult:
        self._busy = True
        self._signal = AbortSignal()
        self.budget.start_clock()
        task = asyncio.ensure_future(body)
        self._task = task
        try:
            return await task
        except asyncio.CancelledError:
            # The caller was cancelled (Ctrl-C): abort the run, let it clean up, re-raise.
            self.abort("cancelled")
            if not task.done():
                with contextlib.suppress(BaseException):
                    await task
            raise
        finally:
            self.budget.stop_clock()
            self._busy = False
            self._task = None
            if self._pending_resources is not None:
                await self._apply_resources(self._pending_resources)

    # -- the run body -----------------------------------------------------------

    async def _begin_run(
        self, message: Message, prompt_text: str, images: list[UserContent]
    ) -> RunResult:
        previous = self._run
        run = _Run(id=uuid.uuid4().hex[:12])
        if previous is not None:  # a new prompt abandons a paused run
            await self._abandon(previous, run)
        self._run = run
        self._machine = StateMachine(self._on_state_change)
        self.budget.usage = BudgetUsage()
        self.budget.raise_limits(self.budget.budget)
        try:
            await self._flush_pending_events()
            self._transition(LoopState.PLANNING)
            system_prompt = await self.system_prompt()
            extra: list[Message] = []
            start_event = BeforeAgentStartEvent(
                prompt=prompt_text,
                images=list(images) or None,
                system_prompt=system_prompt,
                resources=self._resources,
            )

            def take_start(result: Any) -> None:  # checked whole, then applied
                result = _coerce(result, BeforeAgentStartResult)
                added = _checked_messages(result.messages) if result.messages else []
                if result.system_prompt and not isinstance(result.system_prompt, str):
                    raise TypeError("system_prompt must be a string")
                extra.extend(added)
                if result.system_prompt:
                    start_event.system_prompt = result.system_prompt  # the next handler sees it
                    run.system_prompt = result.system_prompt  # this run only

            await self._call_hooks("before_agent_start", start_event, on_result=take_start)
            self._record_settings_if_new()
            await self.emit(
                AgentStartEvent(
                    prompt=prompt_text,
                    run_id=run.id,
                    model=self._model.id,
                    thinking_level=self._thinking_level.value,
                    active_tools=list(self._active_tool_names),
                )
            )
            paused = await self._open_turn(run)
            await self._append(message, run)
            for item in extra:
                await self._append(item, run)
            if paused is not None:
                return paused
            return await self._drive(run)
        except asyncio.CancelledError:
            return await self._aborted(run)
        except Exception as exc:
            return await self._crashed(run, exc)

    async def _abandon(self, previous: _Run, run: _Run) -> None:
        """Give every call of a paused run that never ran an error result."""
        _session_records().record_resume(self.session, run_id=previous.id, abandoned=True)
        for call in previous.calls:
            if call.id not in previous.results:
                previous.results[call.id] = ToolResultMessage(
                    call.id,
                    call.name,
                    [
                        TextContent(
                            "No result provided: the paused run was abandoned for a new prompt."
                        )
                    ],
                    is_error=True,
                )
        previous.new_messages = run.new_messages
        await self._commit_results(previous)

    async def _resume_tools(self, run: _Run, results: dict[str, Any]) -> RunResult:
        try:
            await self.emit(AgentResumeEvent(run_id=run.id, reason="tool_results"))
            _session_records().record_resume(self.session, run_id=run.id)
            for call in run.pending_external:
                result = _external_result(results[call.id])
                message = await self._finish_tool_call(run, call, result, 0.0)
                run.results[call.id] = message
            run.pending_external = []
            await self._commit_results(run)
            self._transition(LoopState.REFLECTING)
            await self._end_turn(run)
            return await self._drive(run)
        except asyncio.CancelledError:
            return await self._aborted(run)
        except Exception as exc:
            return await self._crashed(run, exc)

    async def _resume_paused(self, run: _Run) -> RunResult:
        try:
            await self.emit(AgentResumeEvent(run_id=run.id, reason="paused"))
            _session_records().record_resume(self.session, run_id=run.id)
            run.pause_requested = None
            self._transition(LoopState.PLANNING)
            return await self._drive(run)
        except asyncio.CancelledError:
            return await self._aborted(run)
        except Exception as exc:
            return await self._crashed(run, exc)

    async def _drive(self, run: _Run) -> RunResult:
        """Walk the state machine from PLANNING or REFLECTING until DONE or a pause."""
        while True:
            state = self.state
            if state is LoopState.PLANNING:
                outcome = await self._plan(run)
                if outcome is not None:
                    return outcome
            elif state is LoopState.EXECUTING:
                outcome = await self._execute(run)
                if outcome is not None:
                    return outcome
            elif state is LoopState.REFLECTING:
                outcome = await self._reflect(run)
                if outcome is not None:
                    return outcome
            else:  # pragma: no cover - the transitions above never leave us elsewhere
                raise RuntimeError(f"unexpected state {state.value}")

    async def _plan(self, run: _Run) -> RunResult | None:
        """PLANNING: one model call (or the calls left over from a pause)."""
        unfinished = [c for c in run.calls if c.id not in run.results]
        if unfinished and run.assistant is not None:
            self._transition(LoopState.EXECUTING)
            return None
        if (paused := await self._check_budget(("wall_clock_s", "tokens", "cost_usd"))) is not None:
            return await self._pause(run, paused)
        if self._pending_resources is not None:
            await self._apply_resources(self._pending_resources)
        await self._flush_pending_events()
        if not run.turn_open and (held := await self._open_turn(run)) is not None:
            return held
        await self._auto_compact()
        assistant = await self._call_model(run)
        self.budget.usage.tokens += assistant.usage.input + assistant.usage.output
        self.budget.usage.cost_usd += assistant.usage.cost.total
        run.assistant = assistant
        run.calls = list(assistant.tool_calls)
        run.results = {}
        run.terminate = {}
        run.committed = set()
        if assistant.stop_reason in ("error", "aborted"):
            if (
                assistant.context_overflow
                and not run.overflow_retried
                and await self._recover_overflow()
            ):
                run.overflow_retried = True
                run.turn_open = False
                return None
            if assistant.stop_reason == "aborted":
                raise asyncio.CancelledError()
            for call in run.calls:
                run.results[call.id] = await self._finish_tool_call(
                    run,
                    call,
                    _error("Tool call was not executed: the model reply failed."),
                    0.0,
                    started=False,
                )
            await self._commit_results(run)
            await self._end_turn(run)
            reason = assistant.error_message or "model call failed"
            await self.emit(ErrorEvent(source="provider", message=reason, fatal=True))  # on_error
            return await self._finish(run, "error", reason)
        if assistant.stop_reason == "length" and run.calls:
            for call in run.calls:
                result = ToolResult(
                    content=[
                        TextContent(
                            "Tool call was not executed: the reply hit the output token limit "
                            "(stop reason 'length'), so its arguments may be incomplete."
                        )
                    ],
                    is_error=True,
                )
                run.results[call.id] = await self._finish_tool_call(
                    run, call, result, 0.0, started=False
                )
        self._transition(LoopState.EXECUTING)
        return None

    async def _open_turn(self, run: _Run) -> RunResult | None:
        """Start a turn (turn_start), unless the turn budget is spent (then pause)."""
        if (paused := await self._check_budget(("turns",), pending=1)) is not None:
            return await self._pause(run, paused)
        run.turn += 1
        run.turn_open = True
        self.budget.usage.turns += 1
        await self.emit(TurnStartEvent(turn=run.turn))
        return None

    async def _execute(self, run: _Run) -> RunResult | None:
        """EXECUTING: run the tool calls the model asked for."""
        todo = [c for c in run.calls if c.id not in run.results]
        if todo:
            plan = await self._call_hooks(
                "after_plan", AfterPlanEvent(tool_calls=list(todo), message=run.assistant)
            )
            for result in plan:
                result = _coerce(result, AfterPlanResult)
                if result.tool_calls is not None:
                    todo = list(result.tool_calls)
            known = {c.id for c in run.calls}
            todo = [
                c for c in todo if c.id in known
            ]  # a hook may drop or rewrite calls, not invent them
            planned = {c.id: c for c in todo}
            for call in run.calls:
                if call.id not in planned and call.id not in run.results:
                    run.results[call.id] = await self._finish_tool_call(
                        run,
                        call,
                        _error("Tool call was skipped by an after_plan hook."),
                        0.0,
                        started=False,
                    )
            await self.emit(PlanCommitEvent(tool_calls=list(todo)))
            budget_reason = await self._run_batch(run, todo)
            if budget_reason is not None:
                return await self._pause(run, budget_reason, from_state=LoopState.EXECUTING)
        if run.pending_external:
            await self._commit_results(run, partial=True)
            return await self._await_tools(run)
        await self._commit_results(run)
        self._transition(LoopState.REFLECTING)
        await self._end_turn(run)
        return None

    async def _reflect(self, run: _Run) -> RunResult | None:
        """REFLECTING: decide between another model call, a pause, and DONE."""
        if run.pause_requested:
            reason = run.pause_requested
            return await self._pause(run, reason)
        had_calls = bool(run.calls)
        if had_calls and run.terminate and all(run.terminate.get(c.id, False) for c in run.calls):
            return await self._finish(run, "done", "terminated by tool")
        steering = self._dequeue(self._steering, self._steering_mode)
        if steering:
            for message in steering:
                await self._append(message, run)
            self._transition(LoopState.PLANNING)
            return None
        if had_calls:
            self._transition(LoopState.PLANNING)
            return None
        follow = self._dequeue(self._follow_up, self._follow_up_mode)
        if follow:
            for message in follow:
                await self._append(message, run)
            self._transition(LoopState.PLANNING)
            return None
        for decision in await self._call_hooks(
            "before_stop", BeforeStopEvent(message=run.assistant, messages=list(self._messages))
        ):
            if isinstance(decision, PauseRequest):
                return await self._pause(run, decision.reason)
            decision = _coerce(decision, StopDecision)
            if decision.continue_:
                for message in decision.messages:
                    await self._append(message, run)
                self._transition(LoopState.PLANNING)
                return None
        if run.pause_requested:
            return await self._pause(run, run.pause_requested)
        return await self._finish(run, "done", "")

    # -- model call -----------------------------------------------------------

    async def system_prompt(self) -> str:
        """The system prompt for the next turn, with the model-invocable skills listed."""
        source = self.options.system_prompt
        if callable(source):
            value = source(self)
            if inspect.isawaitable(value):
                value = await value
            text = str(value)
        else:
            text = source or DEFAULT_SYSTEM_PROMPT
        skills_block = _skills_block(self._resources)
        return f"{text}\n\n{skills_block}" if skills_block else text

    def tool_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
            for name in self._active_tool_names
            if (t := self._tools.get(name)) is not None
        ]

    def provider_for(self, model: Model) -> Provider:
        if self.options.provider is not None:
            return self.options.provider
        from harnessc.runtime.providers.pool import pool_of  # one pool per harness

        return pool_of(self).get(model.api)

    async def _call_model(self, run: _Run) -> AssistantMessage:
        model = self._model
        context_event = ContextEvent(messages=list(self._messages), turn=run.turn)

        def take_context(result: Any) -> None:  # chained: the next handler sees the result
            result = _coerce(result, ContextResult)
            if result.messages is not None:
                context_event.messages = _checked_messages(result.messages)

        await self._call_hooks("context", context_event, on_result=take_context)
        messages = context_event.messages
        request_event = BeforeProviderRequestEvent(
            model=model, session_id=self.session.id, stream_options=self._stream_options
        )

        def patch_options(result: Any) -> None:  # chained: the next handler sees the patch
            result = _coerce(result, BeforeProviderRequestResult)
            if result.stream_options:
                request_event.stream_options = _patch_stream_options(
                    request_event.stream_options, result.stream_options
                )

        await self._call_hooks("before_provider_request", request_event, on_result=patch_options)
        options = request_event.stream_options
        assert self._signal is not None
        request = ProviderRequest(
            model=model,
            context=Context(
                system_prompt=run.system_prompt
                if run.system_prompt is not None
                else await self.system_prompt(),
                messages=messages,
                tools=self.tool_specs(),
            ),
            stream_options=options,
            thinking_level=self._thinking_level,
            signal=self._signal,
            session_id=self.session.id,
            retry=self.options.retry or RetryOptions(),
            on_payload=self._on_payload if self.has_handlers("before_provider_payload") else None,
            on_response=self._on_response,
            on_retry=self._on_retry,
        )
        try:
            provider = self.provider_for(model)
        except KeyError as exc:
            final = AssistantMessage(
                api=model.api,
                provider=model.provider,
                model=model.id,
                stop_reason="error",
                error_message=str(exc.args[0]),
            )
            await self.emit(MessageStartEvent(message=final))
            await self._append(final, run, started=True)
            return final
        final = await self._stream(provider, request, run)
        return final

    async def _stream(
        self, provider: Provider, request: ProviderRequest, run: _Run
    ) -> AssistantMessage:
        partial: AssistantMessage | None = None
        final: AssistantMessage | None = None
        stream = provider.stream(request)
        try:
            async for event in stream:
                kind = event.type
                if kind == "start":
                    partial = event.partial
                    await self.emit(MessageStartEvent(message=partial))
                elif kind in ("done", "error"):
                    final = event.partial
                else:
                    partial = event.partial
                    if self._listeners or "message_update" in self._handlers:
                        await self.emit(
                            MessageUpdateEvent(
                                delta_type=kind,
                                delta=event.delta,
                                content_index=event.content_index,
                                message=partial,
                            )
                        )
        except asyncio.CancelledError:
            message = partial or AssistantMessage(
                api=request.model.api, provider=request.model.provider, model=request.model.id
            )
            message.stop_reason = "aborted"
            message.error_message = "aborted"
            run.assistant = message
            run.calls = list(message.tool_calls)
            run.results = {}
            run.committed = set()
            if partial is None:
                await self.emit(MessageStartEvent(message=message))
            await self._append(message, run, started=True)
            raise
        except Exception as exc:
            final = AssistantMessage(
                api=request.model.api,
                provider=request.model.provider,
                model=request.model.id,
                stop_reason="error",
                error_message=f"provider failed: {_describe_exception(exc)}",
            )
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:
                    pass
        if final is None:
            final = partial or AssistantMessage(
                api=request.model.api, provider=request.model.provider, model=request.model.id
            )
            final.stop_reason = "error"
            final.error_message = (
                final.error_message or "the provider stream ended without a final event"
            )
        if partial is None:
            await self.emit(MessageStartEvent(message=final))
        _unique_call_ids(final.tool_calls)  # before it is recorded: each result answers one call
        await self._append(final, run, started=True)
        return final

    async def _on_payload(self, payload: Any) -> Any:
        event = BeforeProviderPayloadEvent(model=self._model, payload=payload)

        def replace_payload(result: Any) -> None:  # chained: the next handler sees it
            if isinstance(result, BeforeProviderPayloadResult):
                if result.payload is not None:
                    event.payload = result.payload
            elif isinstance(result, dict) and set(result) == {"payload"}:
                event.payload = result["payload"]
            else:
                event.payload = result

        await self._call_hooks("before_provider_payload", event, on_result=replace_payload)
        return event.payload

    async def _on_response(self, status: int, headers: dict[str, str]) -> None:
        await self.emit(ProviderResponseEvent(status=status))
        if self.has_handlers("after_provider_response"):
            await self._call_hooks(
                "after_provider_response",
                AfterProviderResponseEvent(status=status, headers=headers),
            )

    async def _on_retry(self, retry: ProviderRetry) -> None:
        await self.emit(
            RetryEvent(
                attempt=retry.attempt,
                max_retries=retry.max_retries,
                delay_ms=retry.delay_ms,
                status=retry.status,
                error=retry.error,
            )
        )

    async def _recover_overflow(self) -> bool:
        """Compact after a context overflow; True when the turn should be retried."""
        try:
            outcome = await self.compact(reason="overflow")
        except Exception as exc:
            await self._report_error("compaction", exc)
            return False
        return bool(outcome)

    async def compact(
        self, custom_instructions: str | None = None, *, reason: str = "manual"
    ) -> Any:
        """Compact the session (summary of old entries); returns the outcome or None.

        The compaction machinery lives in ``harnessc.runtime.session.compaction``; an
        extension may replace it through ``self.compactor``.
        """
        if reason == "manual" and self._busy:  # the loop compacts by itself mid-run
            raise HarnessBusyError("the agent is busy with a run; compact when it is idle")
        compactor = getattr(self, "compactor", None)
        if compactor is None:
            try:
                from harnessc.runtime.session import compaction
            except ImportError:
                return None
            compactor = getattr(compaction, "compact_harness", None)
            if compactor is None:
                return None
        result = compactor(self, custom_instructions=custom_instructions, reason=reason)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def _auto_compact(self) -> None:
        """Compact before a model call once the context passes window - reserve tokens."""
        from harnessc.runtime.session.compaction import needs_compaction

        if needs_compaction(self):
            try:
                await self.compact(reason="threshold")
            except Exception as exc:
                await self._report_error("compaction", exc)

    def _set_context(self, messages: Sequence[Message], entry_ids: Sequence[str | None]) -> None:
        self._messages = list(messages)
        self._message_entry_ids = list(entry_ids)
        self._estimates = [estimate_tokens(m) for m in self._messages]

    def context_tokens(self, use_usage: bool = True) -> int:
        """The context size: the last reply's reported usage plus estimates after it.

        Uses the per-message estimates kept incrementally, so no message is measured twice.
        """
        return estimate_context_tokens(self._messages, use_usage, self._estimates)

    async def navigate_tree(
        self,
        target_id: str | None,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> Any:
        """Move the session leaf to ``target_id`` (session_before_tree / session_tree hooks)."""
        self._check_idle()
        from harnessc.runtime.session.tree import navigate_tree

        return await navigate_tree(
            self,
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )

    def reload_messages(self) -> None:
        """Rebuild the model context from the session (after compaction or a tree move)."""
        ctx = self.session.context()
        self._set_context(ctx.messages, ctx.entry_ids)

    # -- tools --------------------------------------------------------------

    async def _run_batch(self, run: _Run, calls: list[ToolCall]) -> str | None:
        """Run ``calls``; returns a budget pause reason when the tool-call limit stops it."""
        context = await self._tool_context.resolve()
        local: list[ToolCall] = []
        for call in calls:
            tool = self._active_tool(call.name)
            if tool is not None and tool.external and call.parse_error is None:
                if call not in run.pending_external:
                    run.pending_external.append(call)
            else:
                local.append(call)
        limited_reason: str | None = None
        while (limit := self.budget.budget.tool_calls) is not None:
            used = self.budget.usage.tool_calls
            if used + len(local) <= limit:
                break
            limited_reason = await self._budget_exceeded(
                [BudgetWarning("tool_calls", used, limit, "hard")]
            )
            if limited_reason is not None:
                local = local[: max(0, limit - used)]
                break
        for warning in self.budget.check(("tool_calls",), pending=len(local)):
            if warning.level == "soft":
                await self._budget_warn(warning)
        sequential = self.options.sequential_tools or any(
            (t := self._active_tool(c.name)) is not None and t.execution_mode == "sequential"
            for c in local
        )
        if sequential:
            for index, call in enumerate(local):
                # Between two calls the clock, token and cost limits are checked again, so a
                # long sequential batch pauses with the rest of its calls still pending.
                if index:
                    spent = await self._check_budget(("wall_clock_s", "tokens", "cost_usd"))
                    if spent is not None:
                        limited_reason = spent
                        break
                run.results[call.id] = await self._run_tool_call(run, call, context)
        else:
            done = await asyncio.gather(*(self._run_tool_call(run, c, context) for c in local))
            for call, message in zip(local, done, strict=True):
                run.results[call.id] = message
        return limited_reason

    def _active_tool(self, name: str) -> AgentTool | None:
        if name not in self._active_tool_names:
            return None
        return self._tools.get(name)

    async def _run_tool_call(self, run: _Run, call: ToolCall, context: Any) -> ToolResultMessage:
        self.budget.usage.tool_calls += 1
        started = time.perf_counter()
        await self.emit(
            ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments)
        )
        result = await self._execute_tool(call, context)
        return await self._finish_tool_call(
            run, call, result, time.perf_counter() - started, started=True
        )

    async def _execute_tool(self, call: ToolCall, context: Any) -> ToolResult:
        tool = self._active_tool(call.name)
        if tool is None:
            return _error(f"Tool {call.name} not found")
        if call.parse_error is not None:
            return _error(
                f"The arguments of this {call.name} call are not valid JSON ({call.parse_error}). "
                "Call the tool again with a JSON object matching its schema."
            )
        args, errors = validate_arguments(call.arguments, tool.parameters)
        if errors:
            listed = "\n".join(f"  - {e}" for e in errors)
            return _error(
                f"Validation failed for tool {call.name}:\n{listed}\nReceived arguments: {_short_json(call.arguments)}"
            )
        failures: list[str] = []
        event = ToolCallEvent(tool_call_id=call.id, tool_name=call.name, input=args)

        def chain_input(result: Any) -> None:  # later handlers see a rewritten input
            if not isinstance(result, PauseRequest):
                patch = _coerce(result, ToolCallResult)
                if patch.input is not None and not patch.block:
                    event.input = patch.input

        for result in await self._call_hooks(
            "tool_call", event, tool_name=call.name, fail=failures, on_result=chain_input
        ):
            if isinstance(result, PauseRequest):
                if self._run is not None:
                    self._run.pause_requested = result.reason
                return _error(f"Tool call held for review: {result.reason}")
            result = _coerce(result, ToolCallResult)
            if result.block:
                return _error(f"Tool call blocked: {result.reason or 'blocked by a hook'}")
        if failures:  # fail closed: a tool_call hook that raised blocks the call
            return _error(f"Tool call blocked: {failures[0]}")
        if event.input is not args:  # a rewritten input meets the schema too
            args, errors = validate_arguments(event.input, tool.parameters)
            if errors:
                listed = "\n".join(f"  - {e}" for e in errors)
                return _error(
                    f"Tool call blocked: a tool_call hook rewrote the {call.name} arguments "
                    f"into an invalid call:\n{listed}"
                )
        assert self._signal is not None

        def on_update(partial: ToolResult) -> None:
            self._pending_events.append(
                ToolExecutionUpdateEvent(
                    tool_call_id=call.id, tool_name=call.name, partial_result=partial
                )
            )

        try:
            result = await tool.execute(call.id, args, self._signal, on_update, context)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return _error(f"Tool {call.name} failed: {_describe_exception(exc)}")
        if not isinstance(result, ToolResult):
            return _error(f"Tool {call.name} returned {type(result).__name__}, not a ToolResult")
        return result

    async def _finish_tool_call(
        self, run: _Run, call: ToolCall, result: ToolResult, seconds: float, *, started: bool = True
    ) -> ToolResultMessage:
        await self._flush_pending_events()
        if self.has_handlers("tool_result"):
            event = ToolResultEvent(
                tool_call_id=call.id,
                tool_name=call.name,
                input=call.arguments,
                content=list(result.content),
                details=result.details,
                is_error=result.is_error,
            )
            terminate = result.terminate

            def apply(patch: Any) -> None:
                nonlocal terminate
                if isinstance(patch, PauseRequest):
                    run.pause_requested = patch.reason
                    return
                patch = _coerce(patch, ToolResultPatch)
                if patch.content is not None:
                    event.content = list(patch.content)
                if patch.details is not None:
                    event.details = patch.details
                if patch.is_error is not None:
                    event.is_error = patch.is_error
                if patch.terminate is not None:
                    terminate = patch.terminate

            await self._call_hooks("tool_result", event, tool_name=call.name, on_result=apply)
            result = ToolResult(event.content, event.details, event.is_error, terminate)
        run.terminate[call.id] = result.terminate
        message = ToolResultMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=list(result.content),
            details=result.details,
            is_error=result.is_error,
        )
        if not started:
            await self.emit(
                ToolExecutionStartEvent(
                    tool_call_id=call.id, tool_name=call.name, args=call.arguments
                )
            )
        await self.emit(
            ToolExecutionEndEvent(
                tool_call_id=call.id,
                tool_name=call.name,
                result=message,
                is_error=message.is_error,
                duration_ms=round(seconds * 1000, 3),
            )
        )
        return message

    async def _commit_results(self, run: _Run, *, partial: bool = False) -> None:
        """Append the batch's results to the context in the order of the calls."""
        for call in run.calls:
            if call.id in run.committed:
                continue
            message = run.results.get(call.id)
            if message is None:
                if partial:
                    break
                continue
            run.committed.add(call.id)
            await self._append(message, run)

    async def _await_tools(self, run: _Run) -> RunResult:
        self._transition(LoopState.AWAITING_TOOL)
        pending = list(run.pending_external)
        await self._record_pause(run, "awaiting_tool", pending)
        await self.emit(
            AgentPauseEvent(run_id=run.id, reason="awaiting_tool", pending_tool_calls=pending)
        )
        return RunResult(
            status="awaiting_tool",
            reason="awaiting_tool",
            pending_tool_calls=pending,
            messages=list(run.new_messages),
        )

    # -- budget, pause, end ----------------------------------------------------

    async def _check_budget(self, limits: tuple[str, ...], pending: int = 0) -> str | None:
        warnings = self.budget.check(limits, pending=pending)
        hard = [w for w in warnings if w.level == "hard"]
        for warning in warnings:
            if warning.level == "soft":
                await self._budget_warn(warning)
        if not hard:
            return None
        reason = await self._budget_exceeded(hard)
        if reason is None:
            return await self._check_budget(limits, pending)
        return reason

    async def _budget_warn(self, warning: Any) -> None:
        await self.emit(
            BudgetWarnEvent(
                limit=warning.limit, used=warning.used, maximum=warning.maximum, level=warning.level
            )
        )

    async def _budget_exceeded(self, warnings: list[Any]) -> str | None:
        """Fire on_budget_exceeded; a handler returning a Budget raises the limits (None)."""
        hard = [w for w in warnings if w.level == "hard"] or warnings
        first = hard[0]
        event = BudgetWarnEvent(
            limit=first.limit, used=first.used, maximum=first.maximum, level="hard"
        )
        for result in await self._call_hooks("on_budget_exceeded", event):
            if isinstance(result, Budget):
                self.budget.raise_limits(result)
                if not [
                    w for w in self.budget.check((first.limit,), pending=0) if w.level == "hard"
                ]:
                    return None
        await self.emit(event)
        return f"budget_exceeded:{first.limit}"

    async def _pause(
        self, run: _Run, reason: str, *, from_state: LoopState | None = None
    ) -> RunResult:
        if run.turn_open and self.state is not LoopState.REFLECTING:
            await self._commit_results(run, partial=True)
        self._transition(LoopState.IDLE)
        pending = [c for c in run.calls if c.id not in run.results]
        await self._record_pause(run, reason, pending)
        await self.emit(AgentPauseEvent(run_id=run.id, reason=reason, pending_tool_calls=pending))
        return RunResult(
            status="paused",
            reason=reason,
            pending_tool_calls=pending,
            messages=list(run.new_messages),
        )

    async def _record_pause(self, run: _Run, reason: str, pending: list[ToolCall]) -> None:
        _session_records().record_pause(
            self.session,
            reason,
            pending,
            run_id=run.id,
            state=self.state.value,
            external_tool_calls=[c.id for c in run.pending_external],
            usage=self.budget.usage.to_dict(),
        )
        self.session.sync()

    async def _end_turn(self, run: _Run) -> None:
        if not run.turn_open:
            return
        run.turn_open = False
        results = [run.results[c.id] for c in run.calls if c.id in run.results]
        await self.emit(TurnEndEvent(turn=run.turn, message=run.assistant, tool_results=results))
        self.session.sync()

    async def _finish(self, run: _Run, status: RunStatus, reason: str) -> RunResult:
        self._transition(LoopState.DONE)
        await self.emit(
            AgentEndEvent(
                run_id=run.id, status=status, reason=reason, messages=list(run.new_messages)
            )
        )
        self.session.sync()
        self._run = None
        return RunResult(status=status, reason=reason, messages=list(run.new_messages))

    async def _aborted(self, run: _Run) -> RunResult:
        """Clean up after an abort: every call left without a result gets an error result."""
        if self._task is not None:
            self._task.uncancel()
        for call in run.calls:
            if call.id not in run.results:
                run.results[call.id] = await self._finish_tool_call(
                    run,
                    call,
                    ToolResult(
                        [TextContent("No result provided: the run was aborted.")], is_error=True
                    ),
                    0.0,
                    started=True,
                )
        for call in run.pending_external:
            run.results.setdefault(
                call.id,
                ToolResultMessage(
                    call.id,
                    call.name,
                    [TextContent("No result provided: the run was aborted.")],
                    is_error=True,
                ),
            )
        run.pending_external = []
        await self._commit_results(run)
        reason = (
            self._signal.reason if self._signal is not None and self._signal.aborted else "aborted"
        )
        await self.emit(AbortEvent(reason=reason))
        if self.state not in (LoopState.IDLE, LoopState.DONE):
            self._transition(LoopState.IDLE)
        await self.emit(
            AgentEndEvent(
                run_id=run.id, status="aborted", reason=reason, messages=list(run.new_messages)
            )
        )
        self.session.sync()
        self._run = None
        return RunResult(status="aborted", reason=reason, messages=list(run.new_messages))

    async def _crashed(self, run: _Run, exc: Exception) -> RunResult:
        message = f"internal error: {_describe_exception(exc)}"
        await self.emit(ErrorEvent(source="harness", message=message, fatal=True))
        for call in run.calls:
            if call.id not in run.results:
                run.results[call.id] = ToolResultMessage(
                    call.id,
                    call.name,
                    [TextContent(f"No result provided: {message}")],
                    is_error=True,
                )
        try:
            await self._commit_results(run)
        except Exception:
            pass
        if self.state not in (LoopState.IDLE, LoopState.DONE):
            self._transition(LoopState.IDLE)
        await self.emit(
            AgentEndEvent(
                run_id=run.id, status="error", reason=message, messages=list(run.new_messages)
            )
        )
        self.session.sync()
        self._run = None
        return RunResult(status="error", reason=message, messages=list(run.new_messages))

    # -- plumbing -------------------------------------------------------------

    def _transition(self, target: LoopState) -> None:
        self._machine.transition(target)

    def _on_state_change(self, source: LoopState, target: LoopState) -> None:
        self._pending_events.append(
            StateChangeEvent(from_state=source.value, to_state=target.value)
        )

    async def _flush_pending_events(self) -> None:
        while self._pending_events:
            events, self._pending_events = self._pending_events, []
            for event in events:
                await self.emit(event)

    async def _append(self, message: Message, run: _Run, *, started: bool = False) -> None:
        """Add a message to the context and the session, with message_start/end events."""
        await self._flush_pending_events()
        if not started:
            await self.emit(MessageStartEvent(message=message))
        entry = self.session.append_message(message)
        self._messages.append(message)
        self._message_entry_ids.append(entry.id)
        self._estimates.append(estimate_tokens(message))
        run.new_messages.append(message)
        await self.emit(MessageEndEvent(message=message, entry_id=entry.id))

    def _record_settings_if_new(self) -> None:
        ctx_model = self._session_settings
        if ctx_model.get("model") is None:
            self.session.append_model_change(
                self._model.provider or self._model.api, self._model.id
            )
            ctx_model["model"] = True
        if ctx_model.get("thinking_level") is None:
            self.session.append_thinking_level_change(self._thinking_level.value)
            ctx_model["thinking_level"] = True

    def _restore_from_session(self) -> None:
        """Continue an existing session: context, settings and a pending pause."""
        ctx = self.session.context()
        self._set_context(ctx.messages, ctx.entry_ids)
        self._session_settings: dict[str, Any] = {
            "model": ctx.model,
            "thinking_level": ctx.thinking_level,
        }
        if ctx.model is not None:
            for model in self.models.values():
                if model.id == ctx.model[1] and (model.provider or model.api) == ctx.model[0]:
                    self._model = model
                    break
        if ctx.thinking_level:
            try:
                self._thinking_level = ThinkingLevel(ctx.thinking_level)
            except ValueError:
                pass
        if ctx.active_tool_names is not None:
            self._active_tool_names = [n for n in ctx.active_tool_names if n in self._tools]
        self._restore_pause()

    def _restore_pause(self) -> None:
        open_pause = _session_records().pending_state(self.session)
        if open_pause is None:
            return
        pause = open_pause.data
        last_assistant = next(
            (m for m in reversed(self._messages) if isinstance(m, AssistantMessage)), None
        )
        if last_assistant is None:
            return
        answered = {m.tool_call_id for m in self._messages if isinstance(m, ToolResultMessage)}
        run = _Run(id=str(pause.get("run_id") or uuid.uuid4().hex[:12]))
        run.assistant = last_assistant
        run.calls = list(last_assistant.tool_calls)
        for message in self._messages:
            if isinstance(message, ToolResultMessage) and message.tool_call_id in {
                c.id for c in run.calls
            }:
                run.results[message.tool_call_id] = message
                run.committed.add(message.tool_call_id)
        external_ids = set(pause.get("external_tool_calls") or [])
        run.pending_external = [
            c for c in run.calls if c.id in external_ids and c.id not in answered
        ]
        run.turn_open = True
        self.budget.usage = BudgetUsage.from_dict(pause.get("usage"))
        self._run = run
        state = LoopState.AWAITING_TOOL if run.pending_external else LoopState.IDLE
        self._machine = StateMachine(self._on_state_change, state=state)

    def snapshot(self) -> dict[str, Any]:
        """The observable state, for determinism and replay checks."""
        return {
            "state": self.state.value,
            "messages": [_strip_timestamps(m.to_dict()) for m in self._messages],
            "model": self._model.id,
            "thinking_level": self._thinking_level.value,
            "active_tools": list(self._active_tool_names),
            "pending_tool_calls": [c.id for c in self.pending_tool_calls],
            "usage": {k: v for k, v in self.budget.usage.to_dict().items() if k != "wall_clock_s"},
        }

    async def dispatch_command(self, name: str, args: str) -> CommandOutcome:
        """Resolve ``/name args`` through the one command registry (skills, commands, templates)."""
        return await self.commands.dispatch(name, args, self._pending_resources or self._resources)

    async def watch_resources(
        self, skill_dirs: Sequence[str] = (), template_dirs: Sequence[str] = ()
    ) -> None:
        """Reload skills and templates when their files change (applied between turns)."""
        from harnessc.runtime.resources.watch import ResourceWatcher

        if self._watcher is not None:
            return
        skills = list(skill_dirs) or list(getattr(self._resources, "skill_dirs", []) or [])
        templates = list(template_dirs) or list(getattr(self._resources, "template_dirs", []) or [])

        async def on_change(resources: AgentHarnessResources, diagnostics: Any = None) -> None:
            await self.set_resources(resources)

        self._watcher = ResourceWatcher(skills, templates, on_change)
        await self._watcher.start()

    async def close(self) -> None:
        """Stop the resource watcher and release the session."""
        if self._watcher is not None:
            await self._watcher.stop()
            self._watcher = None
        from harnessc.runtime.providers.pool import close_pool_of  # this harness's clients only

        await close_pool_of(self)
        self.session.close()


# -- helpers -------------------------------------------------------------------


def _user_message(message: str | UserMessage) -> UserMessage:
    return UserMessage(content=message) if isinstance(message, str) else message


def _text_of(message: Message) -> str:
    from harnessc.runtime.messages import message_text

    return message_text(message)


def _error(text: str) -> ToolResult:
    return ToolResult(content=[TextContent(text)], is_error=True)


def _describe_exception(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _short_json(value: Any, limit: int = 500) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _coerce(result: Any, cls: type[Any]) -> Any:
    """A hook result as ``cls``: passes instances through, builds from dicts."""
    if isinstance(result, cls):
        return result
    if isinstance(result, dict):
        fields = getattr(cls, "__dataclass_fields__", {})
        data = {k: v for k, v in result.items() if k in fields}
        if cls is StopDecision and "continue" in result:
            data["continue_"] = bool(result["continue"])
            messages = result.get("messages") or []
            if isinstance(result.get("message"), str):
                messages = [UserMessage(result["message"])]
            data["messages"] = [UserMessage(m) if isinstance(m, str) else m for m in messages]
        return cls(**data)
    if isinstance(result, bool) and cls is ToolCallResult:
        return ToolCallResult(block=not result)
    return cls()


def _checked_messages(value: Any) -> list[Message]:
    """Messages a hook returned, or TypeError (a hook result never breaks the run)."""
    kinds = (UserMessage, AssistantMessage, ToolResultMessage, CustomMessage)
    if not isinstance(value, list | tuple) or not all(isinstance(m, kinds) for m in value):
        raise TypeError(f"messages must be a list of messages, not {_short_json(value, 80)}")
    return list(value)


def _patch_stream_options(
    options: AgentHarnessStreamOptions, patch: dict[str, Any]
) -> AgentHarnessStreamOptions:
    if not isinstance(patch, dict):
        raise TypeError(f"stream_options must be a mapping, not {type(patch).__name__}")
    changes: dict[str, Any] = {}
    for key, value in patch.items():
        if key in _STATUS_FIELDS and isinstance(value, dict):
            merged = dict(getattr(options, key) or {})
            merged.update(value)
            changes[key] = merged
        elif key in AgentHarnessStreamOptions.__dataclass_fields__:
            changes[key] = value
    return replace(options, **changes)


def _external_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, dict) and "error" in value:
        return ToolResult([TextContent(str(value["error"]))], is_error=True)
    if isinstance(value, dict) and "content" in value:
        return ToolResult(
            [TextContent(str(value["content"]))],
            details=value.get("details"),
            is_error=bool(value.get("is_error")),
        )
    if isinstance(value, str):
        return ToolResult([TextContent(value)])
    return ToolResult([TextContent(_short_json(value, 100_000))])


def _strip_timestamps(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "timestamp"}


def _skills_block(resources: AgentHarnessResources) -> str:
    if not resources.skills:
        return ""
    from harnessc.runtime.resources import format_skills_for_prompt

    return format_skills_for_prompt(resources.skills)


def _unique_call_ids(calls: list[ToolCall]) -> None:
    """Make empty or repeated call ids unique, in place (each result must find its call)."""
    seen: set[str] = set()
    for index, call in enumerate(calls):
        if not call.id or call.id in seen:
            base = call.id or "call"
            candidate = f"{base}_{index}"
            while candidate in seen:
                candidate += "_"
            call.id = candidate
        seen.add(call.id)


def _session_records() -> Any:
    """The session's pause/resume records (imported on first use: start-up stays lean)."""
    from harnessc.runtime.session import replay

    return replay

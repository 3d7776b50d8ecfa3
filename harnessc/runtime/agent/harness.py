"""AgentHarness: the public facade over the agent loop: running, settings (model,
thinking level, tools, resources, budget, message queues), events and hooks,
compaction and tree moves.

One run (``prompt`` or ``resume``) walks IDLE -> PLANNING -> EXECUTING -> REFLECTING ...
until DONE, or back to IDLE on a pause (see ``loop``). The run's state is one
``RunState`` record, persisted with every pause and rebuilt when a session is opened.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent import checkpoints, loop
from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.results import HarnessBusyError, RunResult
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.agent.settings import DEFAULT_SYSTEM_PROMPT
from harnessc.runtime.core.budget import Budget, BudgetTracker
from harnessc.runtime.core.commands import CommandOutcome, CommandRegistry, split_command
from harnessc.runtime.core.events import Event, NoticeEvent
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import (
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    UserContent,
    UserMessage,
    message_text,
)
from harnessc.runtime.core.options import (
    AgentHarnessStreamOptions,
    Model,
    ThinkingLevel,
    ToolContextSource,
)
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.providers.base import Provider, ToolSpec
from harnessc.runtime.resources.types import AgentHarnessResources
from harnessc.runtime.session.session import Session
from harnessc.runtime.support.start_gate import admit
from harnessc.runtime.tools.base import AgentTool

if TYPE_CHECKING:
    from harnessc.runtime.compaction.trigger import CompactionSettings
    from harnessc.runtime.options.harness_context import CompactionPipeline, HarnessContext

__all__ = ["DEFAULT_SYSTEM_PROMPT", "AgentHarness"]


# Any of these set: telemetry may be on without a spec section (the OTEL_* standard).
_OTEL_SWITCHES = (
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
)


class AgentHarness:
    """The agent: options + session + resources + hooks, one run at a time."""

    # Slots: a process may hold a thousand harnesses (an instance dictionary is about
    # 300 bytes); extensions keep what they add per harness in weak-keyed maps.
    __slots__ = (
        "options",
        "session",
        "commands",
        "_agent",
        "_task",
        "_idle",
        "_watcher",
        "_closers",
        "_unchecked",
        "__weakref__",
    )

    def __init__(self, options: AgentHarnessOptions) -> None:
        # A required sandbox this machine lacks: no start. ``auto`` is probed (and warns)
        # only for an agent with something it wraps (tools, hooks, extensions).
        sandbox = options.sandbox
        if sandbox is not None and (
            sandbox.mode == "on" or options.tools or options.hooks or options.extensions
        ):
            from harnessc.runtime.sandbox.spawn import check_at_start

            check_at_start(sandbox)
        self.options = options
        self.session: Session = options.session if options.session is not None else Session()
        self.commands = CommandRegistry()
        self._agent = AgentParts(options, self.session, self)
        self._task: asyncio.Task[Any] | None = None  # the task a run's body is on
        self._idle: asyncio.Future[None] | None = None  # made by wait_for_idle
        self._watcher: Any = None
        self._closers: list[Callable[[], Awaitable[None]]] | None = None  # by on_close
        for spec in options.hooks:
            self._agent.hooks.add(spec.moment, spec.handler, spec)
        session = self.session
        # A new session (no entries, not a fork) has nothing to restore, and its
        # workspace's check for a checkpoint or rewind cut short waits for the first
        # thing that needs it (a run, once admitted): a harness built and never used
        # touches no file, and a thousand built at once do not stall the loop.
        fresh = not len(session) and session.header.parent_session is None
        self._unchecked = fresh and options.checkpoints is not None
        if not fresh:
            if options.checkpoints is not None:  # a rewind cut short is finished first
                checkpoints.attach(self._agent)
            from harnessc.runtime.agent import restore

            restore.from_session(self._agent)
        context: HarnessContext = self  # the typed seam extensions see (checked by mypy)
        for extension in options.extensions:
            extension.install(context)
        if any(name in os.environ for name in _OTEL_SWITCHES):  # no spec section needed
            from harnessc.runtime.telemetry.extension import install_telemetry

            install_telemetry(self, None)  # reads the variables; imports OpenTelemetry if on

    # -- what the harness is ------------------------------------------------------

    @property
    def state(self) -> LoopState:
        return self._agent.state

    @property
    def run_state(self) -> RunState | None:
        """The record of the open run (None when no run is open)."""
        return self._agent.run

    @property
    def is_busy(self) -> bool:
        return self._agent.busy

    @property
    def budget(self) -> BudgetTracker:
        return self._agent.budget

    @property
    def messages(self) -> list[Message]:
        """The model context as it stands (compaction summary first when compacted)."""
        return list(self._agent.context.messages)

    @property
    def signal(self) -> AbortSignal | None:
        """The abort signal of the running run (None when idle)."""
        return self._agent.signal

    @property
    def pending_tool_calls(self) -> list[ToolCall]:
        """Calls without a result in a paused run (external ones when awaiting a tool)."""
        run = self._agent.run
        if run is None or self._agent.busy:
            return []
        if run.state is LoopState.AWAITING_TOOL:
            return [r.call for r in run.awaiting]
        return run.unanswered

    @property
    def held_tool_calls(self) -> list[ToolCall]:
        """Calls of a paused run held for approval (a permission ``ask``, a hook's pause):
        what ``resume(approvals=...)`` answers. In a sequential batch the calls after a
        held one are pending but not held until they are reached."""
        run = self._agent.run
        if run is None or self._agent.busy:
            return []
        return [r.shown for r in run.held]

    @property
    def paused_reason(self) -> str | None:
        run = self._agent.run
        if run is None or self._agent.busy:
            return None
        if run.state is LoopState.AWAITING_TOOL:
            return "awaiting_tool"
        if run.state is not LoopState.IDLE:
            return None
        # a sub-agent paused inside a call waits for external tool results
        nested = [kind for r in run.calls if r.result is None for _, kind, _ in r.nested_calls()]
        return "awaiting_tool" if "tool" in nested else "paused"

    # -- settings (each change takes effect at the next turn) ---------------------------

    @property
    def models(self) -> dict[str, Model]:
        return dict(self._agent.settings.models)  # a copy: the options' may be shared

    @property
    def model(self) -> Model:
        return self._agent.settings.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self._agent.settings.thinking_level

    @property
    def resources(self) -> AgentHarnessResources:
        return self._agent.settings.resources

    @property
    def pending_resources(self) -> AgentHarnessResources | None:
        """Resources waiting for the next turn (set while a run was busy)."""
        return self._agent.settings.pending_resources

    @property
    def tools(self) -> dict[str, AgentTool]:
        return dict(self._agent.settings.tools)

    @property
    def active_tool_names(self) -> list[str]:
        return list(self._agent.settings.active_tool_names)

    @property
    def stream_options(self) -> AgentHarnessStreamOptions:
        return self._agent.settings.stream_options

    def model_key(self) -> str:
        return self._agent.settings.model_key()

    async def set_model(self, model: str | Model) -> None:
        await self._agent.settings.set_model(model)

    async def set_thinking_level(self, level: ThinkingLevel | str) -> None:
        await self._agent.settings.set_thinking_level(level)

    async def set_active_tools(self, names: Sequence[str]) -> None:
        await self._agent.settings.set_active_tools(names)

    def add_tools(self, tools: Iterable[AgentTool], *, activate: bool = True) -> None:
        """Add tools (extensions contribute theirs at install time)."""
        self._agent.settings.add_tools(tools, activate=activate)

    def remove_tools(self, names: Iterable[str]) -> list[str]:
        """Remove tools (an MCP server stopped offering them); takes effect at the next
        model call. Returns the names that were there."""
        return self._agent.settings.remove_tools(names)

    async def set_resources(self, resources: AgentHarnessResources) -> None:
        """New skills and templates; applied now when idle, else at the next turn."""
        if self._agent.busy:
            self._agent.settings.pending_resources = resources
            return
        await self._agent.settings.apply_resources(resources)

    @property
    def tool_context(self) -> ToolContextSource:
        """Where the tools' context comes from (the permission gate resolves paths in it)."""
        return self._agent.settings.tool_context

    def set_tool_context(self, source: ToolContextSource) -> None:
        self._agent.settings.tool_context = source

    def set_budget(self, budget: Budget) -> None:
        self._agent.budget.raise_limits(budget)

    def steer(self, message: str | UserMessage) -> None:
        """Queue a message delivered after the current tool batch."""
        self._agent.enqueue("steering", _user_message(message))

    def follow_up(self, message: str | UserMessage) -> None:
        """Queue a message delivered when the agent would otherwise stop."""
        self._agent.enqueue("follow_up", _user_message(message))

    def clear_queues(self) -> list[UserMessage]:
        """Drop the queued steering and follow-up messages (an aborted run's); returns them."""
        return self._agent.clear_queues()

    def tool_specs(self) -> list[ToolSpec]:
        return self._agent.settings.tool_specs()

    # -- events and hooks -----------------------------------------------------------

    def subscribe(self, listener: Callable[[Event], Any]) -> Callable[[], None]:
        """Call ``listener`` with every event; returns an unsubscribe callable."""
        return self._agent.bus.subscribe(listener)

    def on(self, name: str, handler: Callable[..., Any]) -> Callable[[], None]:
        """Register ``handler`` on a hook moment or event (any name of any of the designs)."""
        return self._agent.hooks.add(name, handler)

    async def call_hooks(self, moment: str, event: Any, tool_name: str | None = None) -> list[Any]:
        """Run the handlers of a moment (for parts of the runtime that own a moment)."""
        return await self._agent.hooks.run(moment, event, tool_name)

    def has_handlers(self, moment: str) -> bool:
        return self._agent.hooks.has(moment)

    async def emit(self, event: Event) -> list[Any]:
        """Number ``event``, hand it to every subscriber, then to ``on`` handlers of its type."""
        return await self._agent.bus.emit(event)

    async def notice(self, source: str, message: str, level: str = "info") -> None:
        """Emit a notice event (extensions use it for non-fatal reports)."""
        await self.emit(NoticeEvent(source=source, level=level, message=message))

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` (async) when the harness closes (e.g. to stop a server)."""
        if self._closers is None:
            self._closers = []
        self._closers.append(callback)

    # -- running ----------------------------------------------------------------------

    async def prompt(
        self, text: str | Message, images: Sequence[ImageContent] | None = None
    ) -> RunResult:
        """Run the agent on a prompt until it is done, paused or awaiting a tool result."""
        self._check_idle()
        if self._unchecked:  # the start's file work waits for the run's admission
            await admit(hold=True)
            self._check_idle()  # another call may have begun a run meanwhile
            self._check_workspace()
        if self.state is LoopState.AWAITING_TOOL:
            ids = ", ".join(c.id for c in self.pending_tool_calls)
            raise HarnessBusyError(
                f"the agent is waiting for external tool results ({ids}); call resume() with them"
            )
        if not isinstance(text, str):
            body = self._begin(text, message_text(text), images)
        else:
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
            body = self._begin(message, prompt_text, images)
        self._enter()  # the run's body is awaited here: no frame between it and the caller
        try:
            return await body
        finally:
            await self._leave()

    def _begin(
        self, message: Message, text: str, images: Sequence[ImageContent] | None
    ) -> Coroutine[Any, Any, RunResult]:
        return loop.begin(self._agent, message, text, list(images or []))

    async def resume(
        self,
        results: dict[str, Any] | None = None,
        *,
        budget: Budget | None = None,
        approvals: Mapping[str, bool] | None = None,
    ) -> RunResult:
        """Continue after a pull point: tool results for AWAITING_TOOL, or after a pause.

        ``approvals`` answers calls a tool_call hook held for approval (a permission
        ``ask``): call id -> True (run it) or False (refuse it).
        """
        self._check_idle()
        self._check_workspace()
        run = self._agent.run
        if run is None:
            raise RuntimeError("nothing to resume: the agent is not paused")
        # answers to calls a paused sub-agent waits on go to the call holding it
        results, approvals = run.take_nested_answers(results, approvals)
        if approvals:
            held = {r.id: r for r in run.held}
            unknown = [i for i in approvals if i not in held]
            if unknown:
                raise ValueError(
                    f"no held call {', '.join(unknown)}; held: {', '.join(held) or 'none'}"
                )
            for call_id, allow in approvals.items():
                held[call_id].approval = "allow" if allow else "deny"
        if budget is not None:
            self._agent.budget.raise_limits(budget)
        if run.state is LoopState.AWAITING_TOOL:
            missing = [r.id for r in run.awaiting if not results or r.id not in results]
            if missing:
                raise ValueError(
                    "resume() at a tool pull point needs a result for every pending call; "
                    f"missing: {', '.join(missing)}"
                )
            assert results is not None
            body = loop.resume_tools(self._agent, run, results)
        elif run.state is LoopState.IDLE:
            body = loop.resume_paused(self._agent, run)
        else:
            raise RuntimeError(f"cannot resume from state {run.state.value}")
        self._enter()
        try:
            return await body
        finally:
            await self._leave()

    async def abort_paused(self, reason: str = "aborted") -> RunResult:
        """End a paused run (a pull point, a budget or hook pause) as ``aborted``: its
        unanswered calls get error results, recorded in the session, so a new prompt goes
        on from there. RuntimeError when nothing is paused."""
        self._check_idle()
        self._check_workspace()
        run = self._agent.run
        if run is None or self.paused_reason is None:
            raise RuntimeError("nothing to abort: the agent is not paused")
        body = loop.abort_paused(self._agent, run, reason)
        self._enter()
        try:
            return await body
        finally:
            await self._leave()

    def prompt_sync(self, text: str, images: Sequence[ImageContent] | None = None) -> RunResult:
        """``prompt`` for scripts without an event loop."""
        return asyncio.run(self.prompt(text, images))

    def resume_sync(
        self,
        results: dict[str, Any] | None = None,
        *,
        budget: Budget | None = None,
        approvals: Mapping[str, bool] | None = None,
    ) -> RunResult:
        return asyncio.run(self.resume(results, budget=budget, approvals=approvals))

    def abort(self, reason: str = "aborted") -> None:
        """Cancel the running provider request and tools; the run ends as ``aborted``."""
        if self._agent.signal is not None:
            self._agent.signal.abort(reason)
        task, self._task = self._task, None
        if task is not None:  # once per run; the run ends as aborted (RunLoop.drive)
            task.cancel()

    async def wait_for_idle(self) -> None:
        if not self._agent.busy:
            return
        if self._idle is None:
            self._idle = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._idle)

    def _check_workspace(self) -> None:
        """The start's check of the workspace for a checkpoint or a rewind cut short,
        left by ``__init__`` for a new session: done once, before anything needs it."""
        if self._unchecked:
            self._unchecked = False
            checkpoints.attach(self._agent)

    def _check_idle(self) -> None:
        if self._agent.busy:
            raise HarnessBusyError("the agent is busy with another run; wait for it or abort it")

    def _enter(self) -> None:
        """A run's body is about to be awaited on the caller's task (no task of its own:
        a thousand harnesses of one process each save one). ``abort`` cancels that task
        while the body runs; ``RunLoop.drive`` turns its own cancellation into the run's
        ending, and re-raises any other (the caller was cancelled) once the run is
        recorded as aborted. ``_leave`` follows, whatever the body did."""
        agent = self._agent
        agent.busy = True
        agent.signal = AbortSignal()
        agent.new_messages = []
        agent.budget.start_clock()
        self._task = asyncio.current_task()

    async def _leave(self) -> None:
        agent = self._agent
        self._task = None
        agent.budget.stop_clock()
        agent.busy = False
        idle, self._idle = self._idle, None
        if idle is not None and not idle.done():
            idle.set_result(None)
        if agent.settings.pending_resources is not None:
            await agent.settings.apply_resources()

    # -- the model side ---------------------------------------------------------------

    async def system_prompt(self) -> str:
        """The system prompt for the next turn, with the model-invocable skills listed."""
        return await self._agent.system_prompt()

    def provider_for(self, model: Model) -> Provider:
        """The provider serving ``model`` (the options' provider when one is given)."""
        return self._agent.provider_for(model)

    # -- context, compaction, tree ------------------------------------------------------

    @property
    def compaction_settings(self) -> CompactionSettings | None:
        """Set by the compaction extension; None means CompactionSettings() defaults."""
        return self._agent.compaction_settings

    @compaction_settings.setter
    def compaction_settings(self, settings: CompactionSettings | None) -> None:
        self._agent.compaction_settings = settings

    @property
    def compactor(self) -> Any:
        """An extension's compaction (called with the harness), else None."""
        return self._agent.compactor

    @compactor.setter
    def compactor(self, compactor: Any) -> None:
        self._agent.compactor = compactor

    @property
    def compaction_pipeline(self) -> CompactionPipeline | None:
        """Set by the compaction extension: owns the trigger, runs on overflow."""
        return self._agent.compaction_pipeline

    @compaction_pipeline.setter
    def compaction_pipeline(self, pipeline: CompactionPipeline | None) -> None:
        self._agent.compaction_pipeline = pipeline

    def context_tokens(self, use_usage: bool = True) -> int:
        """The context size: the last reply's reported usage plus estimates after it."""
        return self._agent.context_tokens(use_usage)

    def reload_messages(self) -> None:
        """Rebuild the model context from the session (after compaction or a tree move)."""
        self._agent.reload_messages()

    async def compact(
        self, custom_instructions: str | None = None, *, reason: str = "manual"
    ) -> Any:
        """Compact the session (summary of old entries); returns the outcome or None.

        The compaction machinery lives in ``harnessc.runtime.compaction``; an
        extension may replace it through ``self.compactor``.
        """
        if reason == "manual" and self._agent.busy:  # the loop compacts by itself mid-run
            raise HarnessBusyError("the agent is busy with a run; compact when it is idle")
        return await self._agent.compact(custom_instructions, reason=reason)

    async def navigate_tree(
        self,
        target_id: str | None,
        *,
        summarize: bool = False,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> Any:
        """Move the session leaf to ``target_id`` (the one tree-move path).

        A paused run is settled first: it is left on the old branch and never resumed.
        """
        self._check_idle()
        self._check_workspace()
        from harnessc.runtime.agent import session_moves

        return await session_moves.navigate_tree(
            self,
            self._agent,
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )

    # -- workspace checkpoints ------------------------------------------------------

    async def rewind(
        self,
        entry_id: str,
        *,
        mode: str = "both",
        force: bool = False,
        dry_run: bool = False,
        summarize: bool = False,
        confirm: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Move to ``entry_id`` taking the conversation, the files or both along
        (``mode``); a ``RewindReport`` (``checkpoints.rewind``). ``confirm(plan)`` sees
        the changes before anything changes; ``dry_run`` only plans; ``force`` also
        overwrites files changed outside the agent since the checkpoint."""
        self._check_idle()
        self._check_workspace()
        return await checkpoints.rewind(
            self,
            self._agent,
            entry_id,
            mode=mode,
            force=force,
            dry_run=dry_run,
            summarize=summarize,
            confirm=confirm,
        )

    def rewind_points(self, limit: int = 10) -> list[Any]:
        """The latest checkpoints before tool batches on this branch, newest first, each
        with what restoring it would change now (``RewindPoint``)."""
        self._check_workspace()
        return checkpoints.rewind_points(self._agent, limit)

    def checkpoint_notes(self) -> list[str]:
        """What the start found of a checkpoint or rewind cut short by a killed process
        (each note once; the first tool batch shows those not taken here)."""
        self._check_workspace()
        return checkpoints.take_notes(self._agent)

    # -- the rest -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The observable state, for determinism and replay checks."""
        agent = self._agent
        usage = {k: v for k, v in agent.budget.usage.to_dict().items() if k != "wall_clock_s"}
        return {
            "state": self.state.value,
            "messages": [_without_timestamp(m.to_dict()) for m in agent.context.messages],
            **agent.settings.describe(),
            "pending_tool_calls": [c.id for c in self.pending_tool_calls],
            "usage": usage,
        }

    async def dispatch_command(self, name: str, args: str) -> CommandOutcome:
        """Resolve ``/name args`` through the one command registry (skills, commands, templates)."""
        settings = self._agent.settings
        return await self.commands.dispatch(
            name, args, settings.pending_resources or settings.resources
        )

    async def watch_resources(
        self, skill_dirs: Sequence[str] = (), template_dirs: Sequence[str] = ()
    ) -> None:
        """Reload skills and templates when their files change (applied between turns)."""
        if self._watcher is None:
            self._watcher = await self._agent.settings.watch(
                skill_dirs, template_dirs, self.set_resources
            )

    async def close(self) -> None:
        """Run the on-close callbacks, stop the resource watcher, release the session."""
        closers, self._closers = self._closers, None
        for callback in reversed(closers or ()):
            try:
                await callback()
            except Exception as exc:
                await self._agent.bus.error("close", exc)
        if self._watcher is not None:
            await self._watcher.stop()
            self._watcher = None
        pool, self._agent.pool = self._agent.pool, None
        if pool is not None:  # this harness's clients only
            await pool.aclose()
        checkpoints.close(self._agent)
        self.session.close()
        if not self._agent.busy:  # closed while a run goes on: its end still needs the harness
            self._agent.detach()


def _without_timestamp(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "timestamp"}


def _user_message(message: str | UserMessage) -> UserMessage:
    return UserMessage(content=message) if isinstance(message, str) else message

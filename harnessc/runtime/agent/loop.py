"""The loop: a run's entries and ``RunLoop``, which walks one run through its stages.

A turn is four stages: ``plan`` (PLANNING: open the turn, call the model through
``call_model.py``, commit its plan), ``run_tools.py`` (EXECUTING: the tool batch) and
``reflect`` (REFLECTING: decide what comes next). ``plan`` and ``reflect`` are methods of
``RunLoop``, the model call and the tool batch each in its own module. Each stage reads
the run state and returns the next state or where else the run goes (``Pause``,
``AwaitTools``, ``Finish``, ``Again``: run_state.py). ``RunLoop.drive`` is the only loop:
it calls the stage of the current state and applies what it returned, so every
transition goes through the run's ``StateMachine``; a run ends there too (a pause, the
pull point, DONE, an abort, a crash).

Reading order: the entries (``begin`` a prompt, ``resume_tools`` the caller's results at
a pull point, ``resume_paused`` after a pause; ``abandon`` settles a paused run a new
prompt replaces, ``abort_paused`` ends one), then ``RunLoop`` from top to bottom: drive,
the openings, plan, reflect, the endings.

Compaction inside a run (``auto_compact`` before a model call, ``recover_overflow``
after an overflow) carries the run's abort signal and is bounded by its wall-clock
deadline; when that passes the compaction is stopped and the run pauses on the budget,
as during a model call. A pause writes the run-state record into the session
(``harnessc.pause``) *before* it is reported, so local results finished before it are
never lost or run twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any

from harnessc.runtime.agent import call_model, run_tools
from harnessc.runtime.agent.budget_gate import SPEND_LIMITS, check, count_reply
from harnessc.runtime.agent.call_model import checked_messages
from harnessc.runtime.agent.hooks import coerce
from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.results import RunResult, RunStatus
from harnessc.runtime.agent.run_state import AGAIN, Again, AwaitTools, Finish, Next, Pause, RunState
from harnessc.runtime.agent.usage_tree import agent_path_of, usage_of_run
from harnessc.runtime.core.events import (
    AbortEvent,
    AgentEndEvent,
    AgentPauseEvent,
    AgentResumeEvent,
    AgentStartEvent,
    ErrorEvent,
    ToolExecutionEndEvent,
    TurnEndEvent,
    TurnStartEvent,
    describe_exception,
)
from harnessc.runtime.core.hooks import (
    BeforeAgentStartEvent,
    BeforeAgentStartResult,
    BeforeStopEvent,
    PauseRequest,
    PauseRun,
    StopDecision,
)
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    UserContent,
)
from harnessc.runtime.core.run_inputs import LIVE
from harnessc.runtime.support.start_gate import admit
from harnessc.runtime.support.timeouts import until

__all__ = [
    "RunLoop",
    "abandon",
    "abort_paused",
    "begin",
    "resume_paused",
    "resume_tools",
]


def begin(
    agent: AgentParts, message: Message, prompt_text: str, images: list[UserContent]
) -> Coroutine[Any, Any, RunResult]:
    """A new run on ``message`` (a paused run is abandoned first).

    With nothing to abandon the run is ``RunLoop.drive`` itself, so no coroutine of
    ``begin`` waits for it to end (a process running a thousand runs holds a thousand
    fewer).
    """
    run = RunState(run_id=(agent.options.run_inputs or LIVE).new_run_id())
    if agent.run is not None:
        return _abandon_first(agent, agent.run, run, message, prompt_text, images)
    return _drive_new(agent, run, message, prompt_text, images)


async def _abandon_first(
    agent: AgentParts,
    previous: RunState,
    run: RunState,
    message: Message,
    prompt_text: str,
    images: list[UserContent],
) -> RunResult:
    await abandon(agent, previous)
    return await _drive_new(agent, run, message, prompt_text, images)


def _drive_new(
    agent: AgentParts, run: RunState, message: Message, prompt_text: str, images: list[UserContent]
) -> Coroutine[Any, Any, RunResult]:
    agent.adopt(run)
    agent.budget.usage = run.usage
    agent.budget.raise_limits(agent.budget.budget)
    walk = RunLoop(agent, run)
    return walk.drive(walk.open(message, prompt_text, images))


def resume_tools(
    agent: AgentParts, run: RunState, results: dict[str, Any]
) -> Coroutine[Any, Any, RunResult]:
    """A run at its pull point, continued with the caller's results."""
    walk = RunLoop(agent, run)
    return walk.drive(walk.take_results(results))


def resume_paused(agent: AgentParts, run: RunState) -> Coroutine[Any, Any, RunResult]:
    """A paused run, continued."""
    walk = RunLoop(agent, run)
    return walk.drive(walk.resume())


async def abandon(agent: AgentParts, previous: RunState) -> None:
    """A new prompt abandons a paused run: every call without a result gets an error one."""
    _replay().record_resume(agent.session, run_id=previous.run_id, abandoned=True)
    text = "No result provided: the paused run was abandoned for a new prompt."
    for record in previous.calls:
        if record.result is None:
            record.result = ToolResultMessage(
                record.call.id, record.call.name, [TextContent(text)], is_error=True
            )
    await agent.commit(previous)
    agent.run = None


async def abort_paused(agent: AgentParts, run: RunState, reason: str) -> RunResult:
    """End a paused run as aborted, as ``abort`` ends a working one: every call without
    a result gets an error one (recorded, so the session goes on), then ``agent_end``."""
    _replay().record_resume(agent.session, run_id=run.run_id, aborted=reason)
    run.pause_reason = None
    run.pause_requested = None
    walk = RunLoop(agent, run)
    await walk.abort_unfinished(f"No result provided: the run was aborted ({reason}).")
    return await walk.aborted(reason)


def _replay() -> Any:
    from harnessc.runtime.session import replay  # on first use: start-up stays lean

    return replay


class RunLoop:
    """One run of an agent walked through its stages, from an entry to its ending.

    Read in this order: ``drive``; the openings an entry hands it (``open`` a prompt,
    ``take_results`` at the pull point, ``resume`` after a pause); the stages ``plan``
    and ``reflect`` (the tool batch is ``run_tools.step``); the endings.
    """

    __slots__ = ("agent", "run")

    def __init__(self, agent: AgentParts, run: RunState) -> None:
        self.agent = agent
        self.run = run

    async def drive(self, opening: Awaitable[str | Finish | None] | None = None) -> RunResult:
        """Walk the machine from the run's state until DONE or a pull point.

        ``opening`` (an entry's first part: hooks, the prompt's entries) runs first; the
        pause reason (or the ending) it returns ends the run there. A cancellation or a
        crash anywhere becomes the run's ending.
        """
        agent, run = self.agent, self.run
        try:
            if opening is not None:
                reason = await opening
                opening = None  # a finished coroutine keeps its memory while it is referenced
                if isinstance(reason, Finish):
                    return await self.finish(reason.status, reason.reason)
                if reason is not None:
                    return await self.pause(reason)
            while True:
                try:
                    if run.state is LoopState.PLANNING:
                        outcome = await self.plan()
                    elif run.state is LoopState.EXECUTING:
                        outcome = await run_tools.step(agent, run)
                    elif run.state is LoopState.REFLECTING:
                        outcome = await self.reflect()
                    else:  # pragma: no cover - the stages never leave the run elsewhere
                        raise RuntimeError(f"unexpected state {run.state.value}")
                except PauseRun as exc:  # a hook before the model request: the run waits there
                    outcome = Pause(exc.reason)
                if isinstance(outcome, LoopState):
                    run.machine.transition(outcome)
                elif isinstance(outcome, Again):
                    continue
                elif isinstance(outcome, Pause):
                    return await self.pause(outcome.reason)
                elif isinstance(outcome, AwaitTools):
                    return await self.await_tools()
                else:
                    return await self.finish(outcome.status, outcome.reason, outcome.output)
        except asyncio.CancelledError:
            # The run's own ending: ``abort`` (it aborts the signal, then cancels the task
            # the run is on) or a CancelledError raised inside the run (a blocked prompt, a
            # reply the provider ended as aborted). A cancellation someone else asked for
            # is the caller's: the run is recorded as aborted, then it is passed on.
            signal = agent.signal
            task = asyncio.current_task()
            requested = task is not None and task.cancelling() > 0
            own = (signal is not None and signal.aborted) or not requested
            if own and requested and task is not None:
                task.uncancel()
            if signal is not None and not own:
                signal.abort("cancelled")
            result = await self.aborted()
            if not own:
                raise
            return result
        except Exception as exc:
            return await self.crashed(exc)

    # The openings.

    async def open(
        self, message: Message, prompt_text: str, images: list[UserContent]
    ) -> str | None:
        """A new run's start: its hooks and events, the first turn, the prompt's entries."""
        agent, run = self.agent, self.run
        await admit()  # runs started together begin a few per turn of the event loop
        await agent.bus.flush()
        run.machine.transition(LoopState.PLANNING)
        settings = agent.settings
        start_event = BeforeAgentStartEvent(
            prompt=prompt_text,
            images=list(images) or None,
            system_prompt=await agent.system_prompt(),
            resources=settings.resources,
        )
        extra: list[Message] = []

        def take_start(result: Any) -> None:  # checked whole, then applied
            result = coerce(result, BeforeAgentStartResult)
            added = checked_messages(result.messages) if result.messages else []
            if result.system_prompt and not isinstance(result.system_prompt, str):
                raise TypeError("system_prompt must be a string")
            extra.extend(added)
            if result.system_prompt:
                start_event.system_prompt = result.system_prompt  # the next handler sees it
                run.system_prompt = result.system_prompt  # this run only

        await agent.hooks.run("before_agent_start", start_event, on_result=take_start)
        settings.record_if_new()
        await agent.bus.emit(
            AgentStartEvent(
                prompt=prompt_text,
                run_id=run.run_id,
                model=settings.model.id,
                thinking_level=settings.thinking_level.value,
                active_tools=list(settings.active_tool_names),
            )
        )
        reason = await self.open_turn()
        await agent.append(message)
        for item in extra:
            await agent.append(item)
        return reason

    async def take_results(self, results: dict[str, Any]) -> None:
        """At the pull point: the caller's results finish the calls that awaited them."""
        agent, run = self.agent, self.run
        await agent.bus.emit(AgentResumeEvent(run_id=run.run_id, reason="tool_results"))
        _replay().record_resume(agent.session, run_id=run.run_id)
        run.pause_reason = None
        for record in run.awaiting:
            result = run_tools.external_result(results[record.call.id])
            await run_tools.finalize(agent, run, record, result, 0.0)
        await agent.commit(run, partial=True)
        run.machine.transition(LoopState.REFLECTING)

    async def resume(self) -> Finish | None:
        """Continue a paused run. One paused after the model's last word (a review asked
        for at turn_end or before_stop) continues as pi's ``continue`` does: never with
        an assistant-last context; queued steering, else follow-up messages, are the next
        input, and without any the run ends there (done)."""
        agent, run = self.agent, self.run
        await agent.bus.emit(AgentResumeEvent(run_id=run.run_id, reason="paused"))
        _replay().record_resume(agent.session, run_id=run.run_id)
        run.pause_reason = None
        run.pause_requested = None
        run.machine.transition(LoopState.PLANNING)
        messages = agent.context.messages
        last = messages[-1] if messages else None
        if run.to_run or not isinstance(last, AssistantMessage):
            return None
        if last.stop_reason in ("error", "aborted"):  # never sent: the context ends before it
            return None
        queued = agent.dequeue("steering") or agent.dequeue("follow_up")
        for message in queued:
            await agent.append(message)
        if queued:
            return None
        return Finish("done", "goal_met" if last.text.strip() else "no_plan")

    # Plan: PLANNING, the first stage of a turn, up to the plan the model's reply
    # commits. It checks the budget, applies resources that arrived between turns, opens
    # the turn (``turn_start``, the turn budget), compacts the context once it passes the
    # threshold, then calls the model (call_model.py), counts the reply and commits its
    # tool calls (``run_tools.commit_plan``: the ``after_plan`` hooks). A failed reply is
    # handled here: a context overflow is compacted and the turn asked again once, a
    # wall-clock stop pauses the run, any other failure ends it.

    async def plan(self) -> Next:
        """PLANNING: one model call (or the calls left over from a pause)."""
        agent, run = self.agent, self.run
        if run.reply is not None and run.to_run:
            return LoopState.EXECUTING
        if (reason := await check(agent, SPEND_LIMITS)) is not None:
            return Pause(reason)
        if agent.settings.pending_resources is not None:
            await agent.settings.apply_resources()
        await agent.bus.flush()
        if not run.turn_open and (reason := await self.open_turn()) is not None:
            return Pause(reason)
        if (reason := await self.auto_compact()) is not None:
            return Pause(reason)
        request, deadline = await call_model.make_request(agent, run)
        reply = await call_model.stream_reply(agent, request, deadline)
        count_reply(agent, reply)
        run.set_reply(reply)
        if reply.stop_reason == "aborted":
            raise asyncio.CancelledError()
        if reply.stop_reason == "error":
            return await self._failed_reply()
        if reply.stop_reason == "length" and run.calls:
            await run_tools.commit_plan(agent, run, runnable=False)
            for record in run.planned:
                await run_tools.block(
                    agent,
                    run,
                    record,
                    "Tool call was not executed: the reply hit the output token limit "
                    "(stop reason 'length'), so its arguments may be incomplete.",
                )
            return LoopState.EXECUTING
        await run_tools.commit_plan(agent, run)
        return LoopState.EXECUTING

    async def open_turn(self) -> str | None:
        """Start a turn (turn_start), unless the turn budget is spent (the pause reason)."""
        agent, run = self.agent, self.run
        if (reason := await check(agent, ("turns",), pending=1)) is not None:
            return reason
        run.turn += 1
        run.turn_open = True
        agent.budget.usage.turns += 1
        await agent.bus.emit(TurnStartEvent(turn=run.turn))
        return None

    async def _failed_reply(self) -> Next:
        agent, run = self.agent, self.run
        reply = run.reply
        assert reply is not None
        recovered: bool | str = False
        if reply.context_overflow and not run.overflow_retried:
            recovered = await self.recover_overflow()
            if recovered is True:
                run.overflow_retried = True
                run.calls = []
                return AGAIN  # the same turn, once more after compaction
        await run_tools.commit_plan(agent, run, runnable=False)
        for record in run.planned:
            await run_tools.block(
                agent, run, record, "Tool call was not executed: the model reply failed."
            )
        await agent.commit(run)
        if isinstance(recovered, str):  # the time ran out while compacting
            await self.end_turn()
            return Pause(recovered)
        if reply.error_message == call_model.WALL_CLOCK_STOP:
            reason = await check(agent, ("wall_clock_s",))
            if reason is None:  # a handler extended the clock: ask again in the same turn
                return AGAIN
            await self.end_turn()
            return Pause(reason)
        await self.end_turn()
        message = reply.error_message or "model call failed"
        await agent.bus.emit(ErrorEvent(source="provider", message=message, fatal=True))
        return Finish("error", message)

    async def auto_compact(self) -> str | None:
        """Compact before a model call once the context passes the compaction threshold;
        the budget pause reason when the wall-clock deadline passed meanwhile.

        With a compaction pipeline installed, its own trigger (on the ``context`` moment)
        is the only one.
        """
        agent = self.agent
        if agent.compaction_pipeline is not None:
            return None
        from harnessc.runtime.compaction.trigger import needs_compaction

        if not needs_compaction(agent):
            return None
        scope = until(agent.budget.deadline())
        try:
            async with scope:
                await agent.compact(reason="threshold")
        except TimeoutError as exc:
            if scope.expired():
                return await check(agent, ("wall_clock_s",))
            await agent.bus.error("compaction", exc)
        except Exception as exc:
            await agent.bus.error("compaction", exc)
        return None

    async def recover_overflow(self) -> bool | str:
        """Compact after a context overflow (the installed pipeline, else the session
        summary); True when the turn should be retried, the budget pause reason when the
        wall-clock deadline passed meanwhile."""
        agent = self.agent
        pipeline = agent.compaction_pipeline
        scope = until(agent.budget.deadline())
        try:
            async with scope:
                if pipeline is not None:
                    return bool(await pipeline.recover(agent.callbacks_harness()))
                outcome = await agent.compact(reason="overflow")
        except TimeoutError as exc:
            if scope.expired():
                return await check(agent, ("wall_clock_s",)) or False
            await agent.bus.error("compaction", exc)
            return False
        except Exception as exc:
            await agent.bus.error("compaction", exc)
            return False
        return bool(outcome)

    # Reflect: REFLECTING, the last stage of a turn, which decides what comes next. More
    # tool calls left (a batch cut short) go back to EXECUTING; otherwise the turn ends
    # (``turn_end``) and, in order: a pause a hook asked for; a typed run's verdict on
    # the answer; every call asking to terminate; queued steering; another model call
    # after tool results; queued follow-ups; the ``before_stop`` hooks (continue, pause
    # or stop); DONE.

    async def reflect(self) -> Next:
        """REFLECTING: decide between more tool calls, another model call, a pause and DONE."""
        agent, run = self.agent, self.run
        if run.to_run:
            return LoopState.EXECUTING
        await self.end_turn()
        if run.pause_requested:
            return Pause(run.pause_requested)
        if agent.options.output is not None:  # a typed run ends with a valid answer
            from harnessc.runtime.agent import typed_result

            verdict = await typed_result.judge(agent, run)
            if verdict is not None:
                if verdict.retry:
                    return LoopState.PLANNING
                return Finish("done" if verdict.ok else "error", verdict.reason, verdict.value)
        had_calls = bool(run.calls)
        if had_calls and all(r.terminate for r in run.calls):
            return Finish("done", self._termination_reason())
        if steering := agent.dequeue("steering"):
            for message in steering:
                await agent.append(message)
            return LoopState.PLANNING
        if had_calls:
            return LoopState.PLANNING
        if follow := agent.dequeue("follow_up"):
            for message in follow:
                await agent.append(message)
            return LoopState.PLANNING
        stopped = False
        event = BeforeStopEvent(message=run.reply, messages=list(agent.context.messages))
        for decision in await agent.hooks.run("before_stop", event):
            if isinstance(decision, PauseRequest):
                return Pause(decision.reason)
            decision = coerce(decision, StopDecision)
            if decision.continue_:
                for message in decision.messages:
                    await agent.append(message)
                return LoopState.PLANNING
            stopped = True
        if run.pause_requested:
            return Pause(run.pause_requested)
        if stopped:
            return Finish("done", "turn_continue_stop")
        reply = run.reply
        answered = reply is not None and bool(reply.text.strip())
        return Finish("done", "goal_met" if answered else "no_plan")

    async def end_turn(self) -> None:
        """End the open turn (turn_end) and let the session catch up on disk."""
        agent, run = self.agent, self.run
        if not run.turn_open:
            return
        run.turn_open = False
        results = [r.result for r in run.calls if r.result is not None]
        await agent.bus.emit(TurnEndEvent(turn=run.turn, message=run.reply, tool_results=results))
        await agent.session.sync_off_loop()  # other sessions keep running meanwhile

    def _termination_reason(self) -> str:
        calls = self.run.calls
        if any(r.terminated_by == "hook" for r in calls):
            return "hook_terminated"
        if any(r.call.name == "finish" for r in calls):
            return "finish_tool"
        return "tool_terminated"

    # The endings: a pause, the pull point, DONE, an abort, a crash.

    async def pause(self, reason: str) -> RunResult:
        agent, run = self.agent, self.run
        if run.turn_open and run.state is not LoopState.REFLECTING:
            await agent.commit(run, partial=True)
        run.machine.transition(LoopState.IDLE)
        run.pause_reason = reason
        run.pause_requested = None
        self._sync_budget()
        from harnessc.runtime.agent import restore

        restore.record_pause(agent, run, reason)
        pending = run.unanswered
        await agent.bus.emit(
            AgentPauseEvent(run_id=run.run_id, reason=reason, pending_tool_calls=pending)
        )
        return RunResult(
            status="paused",
            reason=reason,
            pending_tool_calls=pending,
            messages=list(agent.new_messages),
        )

    async def await_tools(self) -> RunResult:
        agent, run = self.agent, self.run
        await agent.commit(run, partial=True)
        run.machine.transition(LoopState.AWAITING_TOOL)
        run.pause_reason = "awaiting_tool"
        self._sync_budget()
        from harnessc.runtime.agent import restore

        restore.record_pause(agent, run, "awaiting_tool")
        pending = [r.call for r in run.awaiting]
        await agent.bus.emit(
            AgentPauseEvent(run_id=run.run_id, reason="awaiting_tool", pending_tool_calls=pending)
        )
        return RunResult(
            status="awaiting_tool",
            reason="awaiting_tool",
            pending_tool_calls=pending,
            messages=list(agent.new_messages),
        )

    def _sync_budget(self) -> None:
        self.run.limits = self.agent.budget.budget
        self.run.warned = self.agent.budget.warned

    async def finish(self, status: RunStatus, reason: str, output: Any = None) -> RunResult:
        run = self.run
        run.machine.transition(LoopState.DONE)
        run.finish_reason = reason
        config = self.agent.options.output
        shown = config.to_json(output) if config is not None and status == "done" else None
        return await self._end(status, reason, LoopState.DONE, output, shown)

    async def aborted(self, why: str | None = None) -> RunResult:
        """After an abort: every call left without a result gets an error result (no
        hooks). ``why``: the reason of an abort of a paused run (else the signal's)."""
        await self.abort_unfinished("No result provided: the run was aborted.")
        signal = self.agent.signal
        reason = signal.reason if signal is not None and signal.aborted else "aborted"
        if why is not None:
            reason = why
        await self.agent.bus.emit(AbortEvent(reason=reason))
        return await self._stopped("aborted", reason)

    async def crashed(self, exc: Exception) -> RunResult:
        from harnessc.runtime.core.hooks import FailRun
        from harnessc.runtime.session.entries import SessionError

        if isinstance(exc, SessionError):  # disk full, a lock lost: expected, and named
            message = f"session error: {exc}"
        elif isinstance(exc, FailRun):  # a hook ended the run on purpose: its own words
            message = str(exc)
        else:
            message = f"internal error: {describe_exception(exc)}"
        await self.agent.bus.emit(ErrorEvent(source="harness", message=message, fatal=True))
        try:
            await self.abort_unfinished(f"No result provided: {message}")
        except Exception:
            pass
        return await self._stopped("error", message)

    async def _stopped(self, status: RunStatus, reason: str) -> RunResult:
        """The end of a run stopped short (aborted, crashed): back to IDLE."""
        if self.run.state not in (LoopState.IDLE, LoopState.DONE):
            self.run.machine.transition(LoopState.IDLE)
        return await self._end(status, reason, LoopState.IDLE)

    async def _end(
        self,
        status: RunStatus,
        reason: str,
        state: LoopState,
        output: Any = None,
        shown: Any = None,
    ) -> RunResult:
        """``agent_end`` with what the run's tree of agents used, then the run is closed
        (the session synced, the agent idle in ``state``)."""
        agent, run = self.agent, self.run
        messages = list(agent.new_messages)
        own = agent_path_of(agent.options.extensions, agent.session.header.metadata)
        await agent.bus.emit(
            AgentEndEvent(
                run_id=run.run_id,
                status=status,
                reason=reason,
                messages=messages,
                output=shown,
                usage=usage_of_run(messages, own),
            )
        )
        agent.session.sync()
        agent.run = None
        agent.last_state = state
        return RunResult(status=status, reason=reason, messages=messages, output=output)

    async def abort_unfinished(self, text: str) -> None:
        """Give every call without a result an error result; no hooks run.

        A call that started gets its ``tool_execution_end``; one that never started
        (still in the stream, or planned) gets only the result message its call needs.
        """
        agent, run = self.agent, self.run
        for record in run.calls:
            if record.result is not None:
                continue
            message = ToolResultMessage(
                record.call.id, record.call.name, [TextContent(text)], is_error=True
            )
            record.result = message
            if record.started:
                await agent.bus.emit(
                    ToolExecutionEndEvent(
                        tool_call_id=record.call.id,
                        tool_name=record.call.name,
                        result=message,
                        is_error=True,
                        duration_ms=0.0,
                    )
                )
        await agent.commit(run)

"""Run the tools: EXECUTING, the tool batch of one reply.

The batch goes as pi's does: prepare the calls in call order, run the prepared ones side
by side, finalize in call order (one call at a time, each to its end, when a tool or the
options ask for a sequential batch). In reading order:

- ``commit_plan``: the reply's calls after the ``after_plan`` hooks (the end of PLANNING);
- ``step``: the EXECUTING step: the batch, then the caller's results (``AwaitTools``),
  a pause, or REFLECTING;
- ``run_batch``: once *before the batch runs* (the wall clock, the tool-call limit
  that may cut it, the tools' context with the permission rules), then *for each
  call* ``_prepare`` -> ``_execute`` -> ``finalize``, side by side
  (``_side_by_side``) or one by one (``_one_by_one``).

Preparing a call emits ``tool_execution_start``, counts it against ``budget.tool_calls``,
validates its arguments and runs the ``tool_call`` hooks; the call is then ``prepared``
(local), ``awaiting`` (external: handed to the caller), ``held`` (a hook asks for an
approval: the run pauses; in a sequential batch no later call runs before it) or
``blocked`` (an error result). Prepared local calls execute each within its timeout and
all within the run's wall-clock deadline; finalizing runs the ``tool_result`` hooks and
emits ``tool_execution_end``. External calls go through the same preparation and, on
resume, the same finalization.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from harnessc.runtime.agent.budget_gate import SPEND_LIMITS, check
from harnessc.runtime.agent.call_model import short_json
from harnessc.runtime.agent.checkpoints import BatchGuard
from harnessc.runtime.agent.hooks import coerce
from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.run_state import AwaitTools, CallRecord, Next, Pause, RunState
from harnessc.runtime.core.events import (
    PlanCommitEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    describe_exception,
)
from harnessc.runtime.core.hooks import (
    PERMISSION_PAUSE,
    AfterPlanEvent,
    AfterPlanResult,
    PauseRequest,
    ToolCallEvent,
    ToolCallResult,
    ToolResultEvent,
    ToolResultPatch,
)
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import TextContent, ToolResultMessage
from harnessc.runtime.support.timeouts import until
from harnessc.runtime.tools.base import HoldCall, ToolResult, redacted

__all__ = [
    "block",
    "commit_plan",
    "error_result",
    "external_result",
    "finalize",
    "run_batch",
    "step",
]


async def commit_plan(agent: AgentParts, run: RunState, *, runnable: bool = True) -> None:
    """after_plan hooks and plan_commit for the reply (an empty plan for a text reply)."""
    todo = [r.call for r in run.planned] if runnable else []
    plan = await agent.hooks.run(
        "after_plan", AfterPlanEvent(tool_calls=list(todo), message=run.reply)
    )
    for result in plan:
        result = coerce(result, AfterPlanResult)
        if result.tool_calls is not None:
            todo = list(result.tool_calls)
    known = {r.call.id for r in run.planned}
    kept = {c.id: c for c in todo if c.id in known}  # a hook may drop or rewrite, not invent
    await agent.bus.emit(PlanCommitEvent(tool_calls=list(kept.values())))
    run.plan_committed = True
    if not runnable:
        return
    for record in run.planned:
        if record.call.id in kept:
            record.call = kept[record.call.id]
        else:
            await block(agent, run, record, "Tool call was skipped by an after_plan hook.")


async def step(agent: AgentParts, run: RunState) -> Next:
    """EXECUTING: run the planned tool calls."""
    reason = await run_batch(agent, run)
    if run.awaiting:
        return AwaitTools()
    if reason is not None:
        return Pause(reason)
    if run.held and run.pause_requested:  # a call waits for approval: the rest waits too
        return Pause(run.pause_requested)
    await agent.commit(run, partial=True)
    return LoopState.REFLECTING


async def run_batch(agent: AgentParts, run: RunState) -> str | None:
    """Run the planned calls; returns a budget pause reason when a limit cut the batch.

    The workspace is checkpointed before the first call that may change files runs
    and again when the batch ends (``checkpoints``)."""
    if not run.to_run:  # a reply without calls: no batch, no checkpoints to find
        return None
    guard = BatchGuard(agent, run)
    reason = await _run_batch(agent, run, guard)
    await guard.after()
    return reason


async def _run_batch(agent: AgentParts, run: RunState, guard: BatchGuard) -> str | None:
    todo = run.to_run
    # -- once, before the batch runs -----------------------------------------------
    if agent.budget.budget.wall_clock_s is not None:
        # Out of time before the batch starts (a slow hook, a recovered run): its calls
        # stay planned, unstarted, for the resume; none is stopped before it ran.
        if (spent := await check(agent, ("wall_clock_s",))) is not None:
            return spent
    todo, limited = await _within_call_limit(agent, todo)
    from harnessc.runtime.permissions.gate import find_gate, tool_context_with_rules

    context = tool_context_with_rules(
        await agent.settings.tool_context.resolve(),
        find_gate(agent.options.hooks),
        agent.settings.session.cwd or os.getcwd(),
    )
    # -- each call: prepare in call order -> execute -> finalize in call order -----
    if _sequential(agent, todo):
        return await _one_by_one(agent, run, todo, context, guard) or limited
    return await _side_by_side(agent, run, todo, context, guard) or limited


async def _within_call_limit(
    agent: AgentParts, todo: list[CallRecord]
) -> tuple[list[CallRecord], str | None]:
    """The calls the tool-call limit lets run, and its pause reason when it cut some.

    A call counts once, when it starts: a held call was counted when it was held.
    """
    fresh = [r for r in todo if not r.started]
    if agent.budget.budget.tool_calls is None or not fresh:
        return todo, None
    limited = await check(agent, ("tool_calls",), pending=len(fresh))
    if limited is not None:  # the limit as it stands after on_budget_exceeded
        room = max(0, int(agent.budget.budget.tool_calls or 0) - agent.budget.usage.tool_calls)
        cut = {r.call.id for r in fresh[room:]}
        todo = [r for r in todo if r.call.id not in cut]
    return todo, limited


def _sequential(agent: AgentParts, todo: list[CallRecord]) -> bool:
    """True when the options, or a local tool of the batch, ask for one call at a time."""
    return agent.options.sequential_tools or any(
        (t := agent.settings.active_tool(r.call.name)) is not None
        and t.execution_mode == "sequential"
        and not t.external
        for r in todo
    )


async def _side_by_side(
    agent: AgentParts, run: RunState, todo: list[CallRecord], context: Any, guard: BatchGuard
) -> str | None:
    """Every call prepared in call order, the prepared ones run side by side, then each
    finalized in call order; the budget pause reason when the wall clock stopped some."""
    refusals: dict[str, ToolResult] = {}
    for record in todo:
        refused = await _prepare(agent, run, record)
        if refused is not None:
            refusals[record.call.id] = refused
    prepared = [r for r in todo if r.status == "prepared"]
    await guard.before(prepared)
    outcomes = await _execute_all(agent, prepared, context, agent.budget.deadline())
    for record in todo:
        if record.call.id in refusals:
            await finalize(agent, run, record, refusals[record.call.id], 0.0)
        elif record.status == "prepared":
            await finalize(agent, run, record, *(outcomes.get(record.call.id) or _stopped()))
        elif record in prepared and record.status == "held":  # its tool held it
            _hold(run, record)
    if len(outcomes) < len(prepared):
        return await _out_of_time(agent)
    return None


async def _one_by_one(
    agent: AgentParts, run: RunState, todo: list[CallRecord], context: Any, guard: BatchGuard
) -> str | None:
    """A sequential batch: each call prepared, run and finalized before the next."""
    for index, record in enumerate(todo):
        # Between two calls the clock, token and cost limits are checked again, so a
        # long sequential batch pauses with the rest of its calls still planned.
        if index and (spent := await check(agent, SPEND_LIMITS)):
            return spent
        refused = await _prepare(agent, run, record)
        if refused is not None:
            await finalize(agent, run, record, refused, 0.0)
        elif record.status == "held":  # nothing after a held call runs before it
            break
        elif record.status == "prepared":
            await guard.before([record])
            outcomes = await _execute_all(agent, [record], context, agent.budget.deadline())
            if record.status == "held":  # its tool held it: the calls after it wait
                _hold(run, record)
                break
            await finalize(agent, run, record, *(outcomes.get(record.call.id) or _stopped()))
            if record.call.id not in outcomes and (spent := await _out_of_time(agent)):
                return spent
    return None


async def block(agent: AgentParts, run: RunState, record: CallRecord, text: str) -> None:
    """Refuse a call that was never prepared: start, error result, end."""
    await _start(agent, record)
    record.status = "blocked"
    await finalize(agent, run, record, error_result(text), 0.0)


async def _start(agent: AgentParts, record: CallRecord) -> None:
    if record.started:
        return
    record.started = True
    agent.budget.usage.tool_calls += 1
    call = record.call
    await agent.bus.emit(
        ToolExecutionStartEvent(tool_call_id=call.id, tool_name=call.name, args=call.arguments)
    )


async def _prepare(agent: AgentParts, run: RunState, record: CallRecord) -> ToolResult | None:
    """Start a call and decide it: None when prepared, awaiting or held (the run pauses
    for an approval), else the error result."""
    await _start(agent, record)
    call = record.call
    tool = agent.settings.active_tool(call.name)
    record.status = "blocked"
    if tool is None:
        return error_result(f"Tool {call.name} not found")
    if record.nested is not None and record.args is not None:
        # Its tool held it (a sub-agent paused inside): it passed its tool_call hooks
        # when it was first prepared, and runs again with the arguments they gave.
        record.status = "prepared"
        return None
    if call.parse_error is not None:
        return error_result(
            f"The arguments of this {call.name} call are not valid JSON ({call.parse_error}). "
            "Call the tool again with a JSON object matching its schema."
        )
    from harnessc.runtime.tools.validation import validate_arguments

    args, errors = validate_arguments(call.arguments, tool.parameters)
    if errors:
        listed = "\n".join(f"  - {e}" for e in errors)
        return error_result(
            f"Validation failed for tool {call.name}:\n{listed}\n"
            f"Received arguments: {short_json(call.arguments)}"
        )
    failures: list[str] = []
    event = ToolCallEvent(tool_call_id=call.id, tool_name=call.name, input=args)

    def chain_input(result: Any) -> None:  # later handlers see a rewritten input
        if not isinstance(result, PauseRequest):
            patch = coerce(result, ToolCallResult)
            if patch.input is not None and not patch.block:
                event.input = patch.input

    if record.approval == "deny":
        return error_result("Tool call denied by the user.")
    shown = record.args  # a held call: the arguments its question showed
    results = await agent.hooks.run(
        "tool_call", event, tool_name=call.name, fail=failures, on_result=chain_input
    )
    # an approval answers the call as it was shown: the same arguments after every hook
    from harnessc.runtime.permissions.shown_args import same_call

    approved = record.approval == "allow" and same_call(call.name, shown, event.input)
    for result in results:
        if isinstance(result, PauseRequest):
            if approved:
                continue  # the caller approved this very call at resume
            _hold_for_question(run, record, result.reason, shown, event.input)
            return None
        result = coerce(result, ToolCallResult)
        if result.block:
            return error_result(f"Tool call blocked: {result.reason or 'blocked by a hook'}")
    if record.approval == "allow" and not approved:  # changed after the question: ask again
        reason = f"{PERMISSION_PAUSE}{call.name}; call {call.id}"
        _hold_for_question(run, record, reason, shown, event.input)
        return None
    if failures:  # fail closed: a tool_call hook that raised blocks the call
        return error_result(f"Tool call blocked: {failures[0]}")
    if event.input is not args:  # a rewritten input meets the schema too
        args, errors = validate_arguments(event.input, tool.parameters)
        if errors:
            listed = "\n".join(f"  - {e}" for e in errors)
            return error_result(
                f"Tool call blocked: a tool_call hook rewrote the {call.name} arguments "
                f"into an invalid call:\n{listed}"
            )
    record.args = args
    record.status = "awaiting" if tool.external else "prepared"
    return None


def _hold_for_question(
    run: RunState,
    record: CallRecord,
    reason: str,
    shown: dict[str, Any] | None,
    now: dict[str, Any],
) -> None:
    """Hold a call for a question about ``now``, the arguments that would run (kept in
    ``record.args``: an approval answers exactly them); the run pauses on ``reason``. An
    approval given for other arguments (``shown``) is void: this is a new question."""
    if record.approval == "allow" and shown is not None:
        from harnessc.runtime.permissions.shown_args import changed_note

        reason = f"{reason} ({changed_note(record.call.name, shown, now)})"
    record.approval = None
    record.args = dict(now)
    record.status = "held"  # prepared again when the run resumes
    run.pause_requested = reason


async def _execute(agent: AgentParts, record: CallRecord, context: Any) -> tuple[ToolResult, float]:
    call = record.call
    tool = agent.settings.active_tool(call.name)
    started = time.perf_counter()
    if tool is None:  # deactivated between preparation and execution
        return error_result(f"Tool {call.name} not found"), 0.0
    assert agent.signal is not None
    bus = agent.bus

    def on_update(partial: ToolResult) -> None:
        bus.emit_soon(
            ToolExecutionUpdateEvent(
                tool_call_id=call.id, tool_name=call.name, partial_result=redacted(partial)
            ),
            now=True,
        )

    from harnessc.runtime.sandbox.spawn import using as using_sandbox

    limit = getattr(tool, "timeout_s", None) or agent.options.tool_timeout_s
    scope = asyncio.timeout(limit) if limit else until(None)
    try:
        async with scope:
            with using_sandbox(agent.options.sandbox):  # the programs it runs stay inside
                result = await tool.execute(
                    call.id, record.args or {}, agent.signal, on_update, context
                )
    except TimeoutError as exc:
        if scope.expired():  # the loop's limit on one call (the tool did not end by itself)
            result = error_result(
                f"Tool {call.name} timed out after {limit:g} s and was stopped by the agent loop."
            )
        else:
            result = error_result(f"Tool {call.name} failed: {describe_exception(exc)}")
    except asyncio.CancelledError as exc:
        if _run_cancelled(agent):
            raise
        # A cancelled future of the tool's own (a library's): that call failed, not the run.
        result = error_result(f"Tool {call.name} failed: {describe_exception(exc)}")
    except HoldCall as held:  # a sub-agent paused inside the call: held until the resume
        record.status = "held"
        record.nested = {**held.nested, "reason": held.reason}
        record.answers = None
        result = error_result(f"Tool {call.name} is held: {held.reason}")  # never finalized
    except Exception as exc:
        result = error_result(f"Tool {call.name} failed: {describe_exception(exc)}")
    if not isinstance(result, ToolResult):
        result = error_result(
            f"Tool {call.name} returned {type(result).__name__}, not a ToolResult"
        )
    # the agent's own keys never reach the session, a model or a cassette
    return redacted(result), time.perf_counter() - started


def _run_cancelled(agent: AgentParts) -> bool:
    """True when the run itself is being cancelled (an abort, its time budget, its
    caller), not only a tool's own future: the task was asked to cancel."""
    task = asyncio.current_task()
    requested = task is not None and task.cancelling() > 0
    return requested or (agent.signal is not None and agent.signal.aborted)


async def _execute_all(
    agent: AgentParts, records: list[CallRecord], context: Any, deadline: float | None
) -> dict[str, tuple[ToolResult, float]]:
    """Run prepared calls side by side (one task each) until they end or the wall-clock
    ``deadline`` passes; the outcomes of the calls that ended, by call id.

    When the deadline passes or the run is cancelled, every call still running is
    cancelled and awaited before the batch goes on (no task outlives the batch).
    """
    outcomes: dict[str, tuple[ToolResult, float]] = {}
    if not records:
        return outcomes
    scope = until(deadline)
    if len(records) == 1:  # nothing to run alongside: no task, no extra loop turn
        try:
            async with scope:
                outcomes[records[0].call.id] = await _execute(agent, records[0], context)
        except TimeoutError:
            if not scope.expired():
                raise
        return outcomes
    tasks = [asyncio.ensure_future(_execute(agent, r, context)) for r in records]
    try:
        async with scope:
            await asyncio.wait(tasks)
    except TimeoutError:
        if not scope.expired():
            raise
    finally:
        running = [t for t in tasks if not t.done()]
        for task in running:
            task.cancel()
        if running:  # gather waits for the cancelled ones
            await asyncio.gather(*running, return_exceptions=True)
    for record, task in zip(records, tasks, strict=True):
        if not task.cancelled():
            outcomes[record.call.id] = task.result()
    return outcomes


async def finalize(
    agent: AgentParts, run: RunState, record: CallRecord, result: ToolResult, seconds: float
) -> None:
    """tool_result hooks, the result message, tool_execution_end."""
    await agent.bus.flush()
    call = record.call
    terminate = result.terminate
    by_hook = False
    if agent.hooks.has("tool_result"):
        event = ToolResultEvent(
            tool_call_id=call.id,
            tool_name=call.name,
            input=call.arguments,
            content=list(result.content),
            details=result.details,
            is_error=result.is_error,
        )

        def apply(patch: Any) -> None:
            nonlocal terminate, by_hook
            if isinstance(patch, PauseRequest):
                run.pause_requested = patch.reason
                return
            patch = coerce(patch, ToolResultPatch)
            if patch.content is not None:
                event.content = list(patch.content)
            if patch.details is not None:
                event.details = patch.details
            if patch.is_error is not None:
                event.is_error = patch.is_error
            if patch.terminate is not None:
                by_hook = patch.terminate and not terminate
                terminate = patch.terminate

        await agent.hooks.run("tool_result", event, tool_name=call.name, on_result=apply)
        result = ToolResult(event.content, event.details, event.is_error, terminate)
    record.terminate = terminate
    record.terminated_by = ("hook" if by_hook else "tool") if terminate else None
    if record.status in ("prepared", "awaiting"):
        record.status = "executed"
    message = ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=list(result.content),
        details=result.details,
        is_error=result.is_error,
    )
    record.result = message
    await agent.bus.emit(
        ToolExecutionEndEvent(
            tool_call_id=call.id,
            tool_name=call.name,
            result=message,
            is_error=message.is_error,
            duration_ms=round(seconds * 1000, 3),
        )
    )


def _hold(run: RunState, record: CallRecord) -> None:
    """A call its tool held (HoldCall): the run pauses on its reason, and the call is
    executed again when the run resumes, with the answers given then."""
    run.pause_requested = run.pause_requested or str((record.nested or {}).get("reason"))


def _stopped() -> tuple[ToolResult, float]:
    """The outcome of a call the wall-clock deadline stopped while it ran."""
    text = (
        "Tool call was stopped: the run's wall-clock budget ran out while it ran "
        "(it may have had part of its effect)."
    )
    return error_result(text), 0.0


async def _out_of_time(agent: AgentParts) -> str | None:
    """The pause reason after the wall-clock deadline stopped calls (None when an
    ``on_budget_exceeded`` handler gave more time)."""
    return await check(agent, ("wall_clock_s",))


def error_result(text: str) -> ToolResult:
    return ToolResult(content=[TextContent(text)], is_error=True)


def external_result(value: Any) -> ToolResult:
    """What the caller passed to ``resume`` for an external call, as a ToolResult."""
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
    return ToolResult([TextContent(short_json(value, 100_000))])

"""Plan: PLANNING, the first stage of a turn, up to the plan the model's reply commits.

``step`` checks the budget, applies resources that arrived between turns, opens the
turn (``turn_start``, the turn budget: ``open_turn``), compacts the context once it
passes the threshold, then calls the model (``call_model``), counts the reply and
commits its tool calls (``run_tools.commit_plan``: the ``after_plan`` hooks). A reply
that failed is handled here: a context overflow is compacted and the turn asked again
once, a wall-clock stop pauses the run, any other failure ends it.

Compaction inside a run (``auto_compact`` before a model call, ``recover_overflow``
after an overflow) carries the run's abort signal and is bounded by its wall-clock
deadline; when that passes the compaction is stopped and the run pauses on the budget,
as during a model call.
"""

from __future__ import annotations

import asyncio

from harnessc.runtime.agent import call_model, run_tools
from harnessc.runtime.agent.budget_gate import SPEND_LIMITS, check, count_reply
from harnessc.runtime.agent.endings import AGAIN, Finish, Next, Pause
from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.reflect import end_turn
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.core.events import ErrorEvent, TurnStartEvent
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.support.timeouts import until

__all__ = ["auto_compact", "open_turn", "recover_overflow", "step"]


async def step(agent: AgentParts, run: RunState) -> Next:
    """PLANNING: one model call (or the calls left over from a pause)."""
    if run.reply is not None and run.to_run:
        return LoopState.EXECUTING
    if (reason := await check(agent, SPEND_LIMITS)) is not None:
        return Pause(reason)
    if agent.settings.pending_resources is not None:
        await agent.settings.apply_resources()
    await agent.bus.flush()
    if not run.turn_open and (reason := await open_turn(agent, run)) is not None:
        return Pause(reason)
    if (reason := await auto_compact(agent)) is not None:
        return Pause(reason)
    request, deadline = await call_model.make_request(agent, run)
    reply = await call_model.stream_reply(agent, request, deadline)
    count_reply(agent, reply)
    run.set_reply(reply)
    if reply.stop_reason == "aborted":
        raise asyncio.CancelledError()
    if reply.stop_reason == "error":
        return await _failed_reply(agent, run)
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


async def open_turn(agent: AgentParts, run: RunState) -> str | None:
    """Start a turn (turn_start), unless the turn budget is spent (the pause reason)."""
    if (reason := await check(agent, ("turns",), pending=1)) is not None:
        return reason
    run.turn += 1
    run.turn_open = True
    agent.budget.usage.turns += 1
    await agent.bus.emit(TurnStartEvent(turn=run.turn))
    return None


async def _failed_reply(agent: AgentParts, run: RunState) -> Next:
    reply = run.reply
    assert reply is not None
    recovered: bool | str = False
    if reply.context_overflow and not run.overflow_retried:
        recovered = await recover_overflow(agent)
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
        await end_turn(agent, run)
        return Pause(recovered)
    if reply.error_message == call_model.WALL_CLOCK_STOP:
        reason = await check(agent, ("wall_clock_s",))
        if reason is None:  # a handler extended the clock: ask again in the same turn
            return AGAIN
        await end_turn(agent, run)
        return Pause(reason)
    await end_turn(agent, run)
    message = reply.error_message or "model call failed"
    await agent.bus.emit(ErrorEvent(source="provider", message=message, fatal=True))
    return Finish("error", message)


async def auto_compact(agent: AgentParts) -> str | None:
    """Compact before a model call once the context passes the compaction threshold;
    the budget pause reason when the wall-clock deadline passed meanwhile.

    With a compaction pipeline installed, its own trigger (on the ``context`` moment)
    is the only one.
    """
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


async def recover_overflow(agent: AgentParts) -> bool | str:
    """Compact after a context overflow (the installed pipeline, else the session
    summary); True when the turn should be retried, the budget pause reason when the
    wall-clock deadline passed meanwhile."""
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

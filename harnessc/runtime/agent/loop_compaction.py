"""Compaction inside the loop: before a model call once the context passes the
threshold, and after a context overflow (then the turn is retried once).

Both run inside the run: the summary request carries the run's abort signal, and the
run's wall-clock deadline bounds them; when it passes, the compaction is stopped and
the run pauses on the budget, as during a model call.
"""

from __future__ import annotations

from harnessc.runtime.agent import budget_gate
from harnessc.runtime.agent.loop import AgentLoop

__all__ = ["auto_compact", "recover_overflow"]


async def auto_compact(loop: AgentLoop) -> str | None:
    """Compact before a model call once the context passes the compaction threshold;
    the budget pause reason when the wall-clock deadline passed meanwhile.

    With a compaction pipeline installed, its own trigger (on the ``context`` moment)
    is the only one.
    """
    if loop.compaction_pipeline is not None:
        return None
    from harnessc.runtime.compaction.trigger import needs_compaction

    if not needs_compaction(loop):
        return None
    scope = budget_gate.until(budget_gate.deadline(loop))
    try:
        async with scope:
            await loop.compact(reason="threshold")
    except TimeoutError as exc:
        if scope.expired():
            return await budget_gate.check(loop, ("wall_clock_s",))
        await loop.bus.error("compaction", exc)
    except Exception as exc:
        await loop.bus.error("compaction", exc)
    return None


async def recover_overflow(loop: AgentLoop) -> bool | str:
    """Compact after a context overflow (the installed pipeline, else the session
    summary); True when the turn should be retried, the budget pause reason when the
    wall-clock deadline passed meanwhile."""
    pipeline = loop.compaction_pipeline
    scope = budget_gate.until(budget_gate.deadline(loop))
    try:
        async with scope:
            if pipeline is not None:
                return bool(await pipeline.recover(loop.callbacks_harness()))
            outcome = await loop.compact(reason="overflow")
    except TimeoutError as exc:
        if scope.expired():
            return await budget_gate.check(loop, ("wall_clock_s",)) or False
        await loop.bus.error("compaction", exc)
        return False
    except Exception as exc:
        await loop.bus.error("compaction", exc)
        return False
    return bool(outcome)

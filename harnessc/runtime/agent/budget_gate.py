"""Budget checks of the loop: soft warnings, and on a hard limit one ``on_budget_exceeded``.

A handler may return a larger ``Budget``; the limits are re-checked once with the same
pending amount, and when they still do not fit the run pauses (the handler is never
asked twice for the same check, so a too-small extension cannot loop).

The wall-clock limit is also a moment: ``deadline`` is when it runs out, on the event
loop's clock, computed once per model call or tool batch; the provider request, the
loop's timeout scope (``until``) and the verdict on a failed reply all read that one
number, so running out of time is always a (resumable) budget pause.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harnessc.runtime.agent.loop import AgentLoop
from harnessc.runtime.core.budget import Budget, BudgetWarning
from harnessc.runtime.core.events import BudgetWarnEvent
from harnessc.runtime.core.messages import AssistantMessage

__all__ = [
    "SPEND_LIMITS",
    "check",
    "count_reply",
    "deadline",
    "passed",
    "reply_tokens",
    "until",
]

SPEND_LIMITS: tuple[str, ...] = ("wall_clock_s", "tokens", "cost_usd")


def reply_tokens(reply: AssistantMessage) -> int:
    """The tokens a reply used: the provider's total (cached tokens included)."""
    usage = reply.usage
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)


def count_reply(loop: AgentLoop, reply: AssistantMessage) -> None:
    loop.budget.usage.tokens += reply_tokens(reply)
    loop.budget.usage.cost_usd += reply.usage.cost.total


async def _warn(loop: AgentLoop, warning: BudgetWarning) -> None:
    await loop.bus.emit(
        BudgetWarnEvent(
            limit=warning.limit, used=warning.used, maximum=warning.maximum, level=warning.level
        )
    )


async def check(loop: AgentLoop, limits: tuple[str, ...], pending: int = 0) -> str | None:
    """None when ``pending`` more fits ``limits``, else the pause reason."""
    warnings = loop.budget.check(limits, pending=pending)
    for warning in warnings:
        if warning.level == "soft":
            await _warn(loop, warning)
    hard = [w for w in warnings if w.level == "hard"]
    if not hard:
        return None
    first = hard[0]
    event = BudgetWarnEvent(limit=first.limit, used=first.used, maximum=first.maximum, level="hard")
    raised = False
    for result in await loop.hooks.run("on_budget_exceeded", event):
        if isinstance(result, Budget):
            loop.budget.raise_limits(result)
            raised = True
    if raised:
        again = loop.budget.check(limits, pending=pending)
        for warning in again:
            if warning.level == "soft":
                await _warn(loop, warning)
        still = [w for w in again if w.level == "hard"]
        if not still:
            return None
        first = still[0]
        event = BudgetWarnEvent(
            limit=first.limit, used=first.used, maximum=first.maximum, level="hard"
        )
    await loop.bus.emit(event)
    return f"budget_exceeded:{first.limit}"


def deadline(loop: AgentLoop) -> float | None:
    """When the wall-clock budget runs out, on the running loop's clock (``loop.time()``);
    None without a wall-clock limit."""
    limit = loop.budget.budget.wall_clock_s
    if limit is None:
        return None
    remaining = max(0.0, limit - loop.budget.elapsed())
    return asyncio.get_running_loop().time() + remaining


def until(moment: float | None) -> Any:
    """A timeout scope ending at ``moment`` (``asyncio.timeout_at``); a shared no-op one
    without a deadline. Both have ``expired()``."""
    return _UNBOUNDED if moment is None else asyncio.timeout_at(moment)


def passed(moment: float | None) -> bool:
    """True once ``moment`` (a ``deadline``) has come."""
    return moment is not None and asyncio.get_running_loop().time() >= moment


class _Unbounded:
    """``asyncio.timeout(None)`` without an object per call (no wall-clock budget)."""

    __slots__ = ()

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None

    def expired(self) -> bool:
        return False


_UNBOUNDED = _Unbounded()

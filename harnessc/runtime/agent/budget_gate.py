"""Budget checks of the loop: soft warnings, and on a hard limit one ``on_budget_exceeded``.

A handler may return a larger ``Budget``; the limits are re-checked once with the same
pending amount, and when they still do not fit the run pauses (the handler is never
asked twice for the same check, so a too-small extension cannot loop).
"""

from __future__ import annotations

from harnessc.runtime.agent.parts import Parts
from harnessc.runtime.budget import Budget, BudgetWarning
from harnessc.runtime.events import BudgetWarnEvent
from harnessc.runtime.messages import AssistantMessage

__all__ = ["SPEND_LIMITS", "check", "count_reply", "reply_tokens"]

SPEND_LIMITS: tuple[str, ...] = ("wall_clock_s", "tokens", "cost_usd")


def reply_tokens(reply: AssistantMessage) -> int:
    """The tokens a reply used: the provider's total (cached tokens included)."""
    usage = reply.usage
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)


def count_reply(parts: Parts, reply: AssistantMessage) -> None:
    parts.budget.usage.tokens += reply_tokens(reply)
    parts.budget.usage.cost_usd += reply.usage.cost.total


async def _warn(parts: Parts, warning: BudgetWarning) -> None:
    await parts.bus.emit(
        BudgetWarnEvent(
            limit=warning.limit, used=warning.used, maximum=warning.maximum, level=warning.level
        )
    )


async def check(parts: Parts, limits: tuple[str, ...], pending: int = 0) -> str | None:
    """None when ``pending`` more fits ``limits``, else the pause reason."""
    warnings = parts.budget.check(limits, pending=pending)
    for warning in warnings:
        if warning.level == "soft":
            await _warn(parts, warning)
    hard = [w for w in warnings if w.level == "hard"]
    if not hard:
        return None
    first = hard[0]
    event = BudgetWarnEvent(limit=first.limit, used=first.used, maximum=first.maximum, level="hard")
    raised = False
    for result in await parts.hooks.run("on_budget_exceeded", event):
        if isinstance(result, Budget):
            parts.budget.raise_limits(result)
            raised = True
    if raised:
        again = parts.budget.check(limits, pending=pending)
        for warning in again:
            if warning.level == "soft":
                await _warn(parts, warning)
        still = [w for w in again if w.level == "hard"]
        if not still:
            return None
        first = still[0]
        event = BudgetWarnEvent(
            limit=first.limit, used=first.used, maximum=first.maximum, level="hard"
        )
    await parts.bus.emit(event)
    return f"budget_exceeded:{first.limit}"

"""Budget checks of a run: soft warnings, and on a hard limit one ``on_budget_exceeded``.

A handler may return a larger ``Budget``; the limits are re-checked once with the same
pending amount, and when they still do not fit the run pauses (the handler is never
asked twice for the same check, so a too-small extension cannot loop).

The wall-clock limit is also a moment: ``BudgetTracker.deadline`` is when it runs out,
on the event loop's clock, computed once per model call or tool batch; the provider
request, the stage's timeout scope (``support.timeouts.until``) and the verdict on a
failed reply all read that one number, so running out of time is always a (resumable)
budget pause.
"""

from __future__ import annotations

from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.core.budget import Budget, BudgetWarning
from harnessc.runtime.core.events import BudgetWarnEvent
from harnessc.runtime.core.messages import AssistantMessage

__all__ = ["SPEND_LIMITS", "check", "count_reply", "reply_tokens"]

SPEND_LIMITS: tuple[str, ...] = ("wall_clock_s", "tokens", "cost_usd")


async def check(agent: AgentParts, limits: tuple[str, ...], pending: int = 0) -> str | None:
    """None when ``pending`` more fits ``limits``, else the pause reason."""
    warnings = agent.budget.check(limits, pending=pending)
    for warning in warnings:
        if warning.level == "soft":
            await _warn(agent, warning)
    hard = [w for w in warnings if w.level == "hard"]
    if not hard:
        return None
    first = hard[0]
    event = BudgetWarnEvent(limit=first.limit, used=first.used, maximum=first.maximum, level="hard")
    raised = False
    for result in await agent.hooks.run("on_budget_exceeded", event):
        if isinstance(result, Budget):
            agent.budget.raise_limits(result)
            raised = True
    if raised:
        again = agent.budget.check(limits, pending=pending)
        for warning in again:
            if warning.level == "soft":
                await _warn(agent, warning)
        still = [w for w in again if w.level == "hard"]
        if not still:
            return None
        first = still[0]
        event = BudgetWarnEvent(
            limit=first.limit, used=first.used, maximum=first.maximum, level="hard"
        )
    await agent.bus.emit(event)
    return f"budget_exceeded:{first.limit}"


async def _warn(agent: AgentParts, warning: BudgetWarning) -> None:
    await agent.bus.emit(
        BudgetWarnEvent(
            limit=warning.limit, used=warning.used, maximum=warning.maximum, level=warning.level
        )
    )


def count_reply(agent: AgentParts, reply: AssistantMessage) -> None:
    agent.budget.usage.tokens += reply_tokens(reply)
    agent.budget.usage.cost_usd += reply.usage.cost.total


def reply_tokens(reply: AssistantMessage) -> int:
    """The tokens a reply used: the provider's total (cached tokens included)."""
    usage = reply.usage
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)

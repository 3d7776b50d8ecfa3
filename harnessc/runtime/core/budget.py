"""The budget envelope: turns, tool calls, wall clock, tokens and cost."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from msgspec import Struct, field

__all__ = [
    "BUDGET_LIMITS",
    "NO_WARNINGS",
    "Budget",
    "BudgetUsage",
    "BudgetWarning",
    "BudgetTracker",
]

BUDGET_LIMITS: tuple[str, ...] = ("turns", "tool_calls", "wall_clock_s", "tokens", "cost_usd")


class Budget(Struct):
    """Hard limits (None = unlimited) and the fraction at which a warning is emitted."""

    turns: int | None = None
    tool_calls: int | None = None
    wall_clock_s: float | None = None
    tokens: int | None = None  # the usage total of every reply (cached tokens included)
    cost_usd: float | None = None
    soft_ratio: float = 0.8

    def __post_init__(self) -> None:
        for name in BUDGET_LIMITS:
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"budget {name} must not be negative (got {value})")
        if not 0 < self.soft_ratio <= 1:
            raise ValueError(f"budget soft_ratio must be in (0, 1] (got {self.soft_ratio})")


class BudgetUsage(Struct):
    turns: int = 0
    tool_calls: int = 0
    wall_clock_s: float = 0.0
    tokens: int = 0
    cost_usd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "wall_clock_s": round(self.wall_clock_s, 3),
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
        }

    @staticmethod
    def from_dict(data: Any) -> BudgetUsage:
        if not isinstance(data, dict):
            return BudgetUsage()
        return BudgetUsage(
            turns=int(data.get("turns", 0) or 0),
            tool_calls=int(data.get("tool_calls", 0) or 0),
            wall_clock_s=float(data.get("wall_clock_s", 0.0) or 0.0),
            tokens=int(data.get("tokens", 0) or 0),
            cost_usd=float(data.get("cost_usd", 0.0) or 0.0),
        )


NO_WARNINGS: frozenset[str] = frozenset()  # one shared empty set (each frozenset() is new)


class BudgetWarning(Struct):
    limit: str
    used: float
    maximum: float
    level: str  # "soft" | "hard"


class BudgetTracker(Struct):
    """Counts what a run used; ``check`` says which limits were crossed."""

    budget: Budget = field(default_factory=Budget)
    usage: BudgetUsage = field(default_factory=BudgetUsage)
    warned: frozenset[str] = NO_WARNINGS  # the limits a soft warning was given for
    _clock_started: float | None = None
    clock: Callable[[], float] = time.monotonic  # RunInputs.clock (a durable run's steps)

    def start_clock(self) -> None:
        if self._clock_started is None:
            self._clock_started = self.clock()

    def stop_clock(self) -> None:
        if self._clock_started is not None:
            self.usage.wall_clock_s += self.clock() - self._clock_started
            self._clock_started = None

    def elapsed(self) -> float:
        running = 0.0 if self._clock_started is None else self.clock() - self._clock_started
        return self.usage.wall_clock_s + running

    def deadline(self) -> float | None:
        """When the wall-clock limit runs out, on the running event loop's clock
        (``loop.time()``); None without a wall-clock limit. Computed once per model call
        or tool batch, so the provider, the loop's timeout scope and the verdict on a
        failed reply all read one moment."""
        limit = self.budget.wall_clock_s
        if limit is None:
            return None
        remaining = max(0.0, limit - self.elapsed())
        return asyncio.get_running_loop().time() + remaining

    def used(self, limit: str) -> float:
        if limit == "wall_clock_s":
            return self.elapsed()
        return float(getattr(self.usage, limit))

    def check(
        self, limits: tuple[str, ...] = BUDGET_LIMITS, *, pending: int = 0
    ) -> list[BudgetWarning]:
        """Warnings for ``limits``: soft ones once each, hard ones every time.

        ``pending`` counts what is about to be spent (1 for the next turn or tool call),
        so a limit of N allows exactly N.
        """
        out: list[BudgetWarning] = []
        for limit in limits:
            maximum = getattr(self.budget, limit)
            if maximum is None:
                continue
            used = self.used(limit)
            if used + pending > maximum or (pending == 0 and used >= maximum and maximum > 0):
                out.append(BudgetWarning(limit, used, maximum, "hard"))
            elif used + pending >= maximum * self.budget.soft_ratio and limit not in self.warned:
                self.warned |= {limit}
                out.append(BudgetWarning(limit, used + pending, maximum, "soft"))
        return out

    def raise_limits(self, budget: Budget) -> None:
        """Replace the limits (resume after a budget pause); warnings may fire again."""
        self.budget = budget
        if not self.warned:
            return
        self.warned = frozenset(
            name
            for name in self.warned
            if getattr(budget, name) is not None
            and self.used(name) >= getattr(budget, name) * budget.soft_ratio
        )

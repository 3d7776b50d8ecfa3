"""The one-line summary of a run: tokens in/out/cached, cost, turns, tool calls, time.

``RunSummary`` is a harness subscriber (the counting is the run-control layer's
``RunUsage``); ``line()`` gives the text printed on stderr after a run (and by
``/status`` for the whole interactive session).
"""

from __future__ import annotations

import math
import time
from typing import Any

from harnessc.runtime.agent.usage_tree import UsageTree
from harnessc.runtime.cli.output import format_duration
from harnessc.runtime.core.events import Event
from harnessc.runtime.runs.usage import RunUsage

__all__ = ["RunSummary", "format_cost", "model_is_priced"]


def model_is_priced(model: Any) -> bool:
    """Whether the model has prices (then the summary shows the cost, even $0)."""
    cost = getattr(model, "cost", None)
    return any(getattr(cost, name, 0) for name in ("input", "output", "cache_read", "cache_write"))


def format_cost(dollars: float) -> str:
    """Dollars as a person writes them: ``$2.50``, ``$0.0012``, ``$0.00008``, never ``8e-05``."""
    if dollars >= 1:
        return f"${dollars:.2f}"
    if dollars >= 0.0001 or dollars <= 0:
        return f"${max(dollars, 0.0):.4f}"
    if dollars < 0.00000001:
        return "<$0.00000001"
    digits = 1 - math.floor(math.log10(dollars))  # two significant digits
    return f"${dollars:.{digits}f}".rstrip("0")


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 10_000 else f"{count:,}"


class RunSummary:
    """Counts what the runs since ``reset()`` used (``priced``: show the cost)."""

    __slots__ = ("priced", "seconds", "tree", "usage", "_since")

    def __init__(self, *, priced: bool = False) -> None:
        self.priced = priced
        self.seconds = 0.0
        self.reset()

    def reset(self) -> None:
        self.usage = RunUsage()
        self.seconds = 0.0
        self._since: float | None = None
        self.tree = UsageTree()

    @property
    def input(self) -> int:
        return self.usage.input

    @property
    def output(self) -> int:
        return self.usage.output

    @property
    def cache_read(self) -> int:
        return self.usage.cache_read

    @property
    def cost(self) -> float:
        return self.usage.cost

    @property
    def turns(self) -> int:
        return self.usage.turns

    @property
    def tool_calls(self) -> int:
        return self.usage.tool_calls

    def start(self) -> None:
        """A run starts now: its time counts from here, as its wall-clock budget does (MCP
        servers starting and hooks before the first model call included)."""
        if self._since is None:
            self._since = time.monotonic()

    def __call__(self, event: Event) -> None:
        kind = event.type
        self.tree(event)
        if kind in ("agent_start", "agent_resume", "turn_start"):
            self.start()  # a run the caller did not announce
        self.usage.count(event)
        if kind in ("agent_end", "agent_pause"):
            self.stop()

    def stop(self) -> None:
        if self._since is not None:
            self.seconds += time.monotonic() - self._since
            self._since = None

    def brief(self) -> str:
        """The live figures of the status line: ``  1,204 tokens  $0.0012``."""
        tokens = self.input + self.output
        if not tokens and not self.cost:
            return ""
        cost = f"  {format_cost(self.cost)}" if self.priced or self.cost else ""
        return f"  {_tokens(tokens)} tokens{cost}"

    def breakdown(self) -> list[str]:
        """One line per agent of the tree (``lead > reviewer: 3 turns, ...``), when
        sub-agents ran; else none."""
        if len(self.tree.agents) < 2:
            return []
        out = []
        for path, usage in sorted(self.tree.agents.items()):
            parts = [
                f"{usage.turns} turn{'s' if usage.turns != 1 else ''}",
                f"{usage.tool_calls} tool call{'s' if usage.tool_calls != 1 else ''}",
            ]
            cached = f" ({_tokens(usage.cache_read)} cached)" if usage.cache_read else ""
            parts.append(f"{_tokens(usage.input)} tokens in{cached} / {_tokens(usage.output)} out")
            if self.priced or usage.cost_usd:
                parts.append(format_cost(usage.cost_usd))
            out.append(f"{self.tree.label(path)}: {', '.join(parts)}")
        return out

    def line(self) -> str:
        """``2 turns, 3 tool calls, 1,204 tokens in (800 cached) / 56 out, $0.0012, 4.2s``."""
        parts = [
            f"{self.turns} turn{'s' if self.turns != 1 else ''}",
            f"{self.tool_calls} tool call{'s' if self.tool_calls != 1 else ''}",
        ]
        cached = f" ({_tokens(self.cache_read)} cached)" if self.cache_read else ""
        parts.append(f"{_tokens(self.input)} tokens in{cached} / {_tokens(self.output)} out")
        if self.priced or self.cost:
            parts.append(format_cost(self.cost))
        parts.append(format_duration(self.seconds))
        return ", ".join(parts)

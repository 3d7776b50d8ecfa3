"""What a run used: tokens (input, output, cache read, cache write), cost, turns and tool
calls, counted from its events. The same count for a run in this process (its events) and
a durable one (the events its steps recorded, as JSON)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from harnessc.runtime.core.events import Event
from harnessc.runtime.core.messages import AssistantMessage

__all__ = ["RunUsage"]


class RunUsage(Struct):
    """The usage of a run, over every part of it (a resumed run adds to its count)."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0  # dollars, from the models' prices (0 for a model without prices)
    turns: int = 0
    tool_calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Every token of every reply: input (cached included), output."""
        return self.input + self.output + self.cache_read + self.cache_write

    def count(self, event: Event) -> None:
        """Count one event of the run (a harness subscriber); a sub-agent's events count
        too: the usage is the whole tree's."""
        kind = event.type
        while kind == "subagent":
            inner: Any = getattr(event, "event", None)
            if inner is None:
                return
            event, kind = inner, inner.type
        if kind == "turn_start":
            self.turns += 1
        elif kind == "tool_execution_end":
            self.tool_calls += 1
        elif kind == "message_end":
            message: Any = getattr(event, "message", None)
            if isinstance(message, AssistantMessage) and message.usage is not None:
                usage = message.usage
                self.input += usage.input
                self.output += usage.output
                self.cache_read += usage.cache_read
                self.cache_write += usage.cache_write
                self.cost += usage.cost.total

    def count_recorded(self, event: Mapping[str, Any]) -> None:
        """Count one event in its JSON form (``Event.to_dict``: a durable run's record),
        a sub-agent's too."""
        kind = event.get("type")
        while kind == "subagent":
            inner = event.get("event")
            if not isinstance(inner, Mapping):
                return
            event, kind = inner, inner.get("type")
        if kind == "turn_start":
            self.turns += 1
        elif kind == "tool_execution_end":
            self.tool_calls += 1
        elif kind == "message_end":
            message = event.get("message")
            if not isinstance(message, dict) or message.get("role") != "assistant":
                return
            usage = message.get("usage")
            if not isinstance(usage, dict):
                return
            self.input += _int(usage.get("input"))
            self.output += _int(usage.get("output"))
            self.cache_read += _int(usage.get("cacheRead"))
            self.cache_write += _int(usage.get("cacheWrite"))
            cost = usage.get("cost")
            if isinstance(cost, dict):
                total = cost.get("total")
                if isinstance(total, int | float) and not isinstance(total, bool):
                    self.cost += float(total)

    def to_dict(self) -> dict[str, Any]:
        """The usage as every served door reports it."""
        return {
            "input_tokens": self.input,
            "output_tokens": self.output,
            "cache_read_tokens": self.cache_read,
            "cache_write_tokens": self.cache_write,
            "total_tokens": self.total_tokens,
            "cost_usd": round(self.cost, 10),
            "turns": self.turns,
            "tool_calls": self.tool_calls,
        }


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

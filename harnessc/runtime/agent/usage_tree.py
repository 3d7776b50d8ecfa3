"""What a run's tree of agents used: turns, tool calls, tokens in, out, cache read and
written, and cost, for each agent path and for the whole tree.

Two ways to count, one shape (``UsageTree.to_dict``):

- ``usage_of_run``: from a run's messages, as ``agent_end`` carries it: the agent's own
  figures from its replies (one turn each, their usage) and tool results (one call
  each), and each hand-over result's ``usage_tree`` (its sub-agent's tree, named by
  agent path). Nothing listens to the events, so a harness pays nothing for it.
- ``UsageTree`` as an event subscriber (the terminal's usage line): an agent's own events
  count under its path, a sub-agent's reach its parent's stream as ``SubagentEvent``
  tagged with the sub-agent's path (a deeper one's arrive already tagged).

The total is the sum of the agents' figures.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgspec import Struct

from harnessc.runtime.core.events import Event
from harnessc.runtime.core.messages import AssistantMessage, Message, ToolResultMessage

__all__ = ["TREE_DETAILS", "AgentUsage", "UsageTree", "agent_path_of", "usage_of_run"]

TREE_DETAILS = "usage_tree"  # the key of a hand-over result's details holding its tree


class AgentUsage(Struct):
    """One agent's figures (or the sum of several)."""

    turns: int = 0
    tool_calls: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        """Every token of every reply, cached ones included (as the token budget counts)."""
        return self.input + self.output + self.cache_read + self.cache_write

    def add(self, other: AgentUsage) -> None:
        self.turns += other.turns
        self.tool_calls += other.tool_calls
        self.input += other.input
        self.output += other.output
        self.cache_read += other.cache_read
        self.cache_write += other.cache_write
        self.cost_usd += other.cost_usd

    def to_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "tool_calls": self.tool_calls,
            "input_tokens": self.input,
            "output_tokens": self.output,
            "cache_read_tokens": self.cache_read,
            "cache_write_tokens": self.cache_write,
            "cost_usd": round(self.cost_usd, 6),
        }


class UsageTree:
    """Counts what each agent of a tree used, by agent path (``name``: this agent's
    path when it has no sub-agent to learn it from)."""

    __slots__ = ("agents", "own")

    def __init__(self, own: tuple[str, ...] = ()) -> None:
        self.own = own
        self.agents: dict[tuple[str, ...], AgentUsage] = {}

    def reset(self) -> None:
        self.agents = {}

    def __call__(self, event: Event) -> None:
        path = self.own
        kind = event.type
        while kind == "subagent":  # a sub-agent's event: counted under its path
            inner = getattr(event, "event", None)
            if inner is None:
                return
            path = tuple(getattr(event, "agent_path", ()) or ())
            if not self.own and len(path) > 1:
                self._own_is(path[:1])
            event, kind = inner, inner.type
        if kind == "turn_start":
            self._of(path).turns += 1
        elif kind == "tool_execution_end":
            self._of(path).tool_calls += 1
        elif kind == "message_end":
            message: Any = getattr(event, "message", None)
            if isinstance(message, AssistantMessage) and message.usage is not None:
                usage, mine = message.usage, self._of(path)
                mine.input += usage.input
                mine.output += usage.output
                mine.cache_read += usage.cache_read
                mine.cache_write += usage.cache_write
                mine.cost_usd += usage.cost.total

    def _own_is(self, own: tuple[str, ...]) -> None:
        """The top agent's name, learnt from its first sub-agent's path."""
        counted = self.agents.pop((), None)
        self.own = own
        if counted is not None:
            self._of(own).add(counted)

    def _of(self, path: tuple[str, ...]) -> AgentUsage:
        found = self.agents.get(path)
        if found is None:
            found = self.agents[path] = AgentUsage()
        return found

    def total(self) -> AgentUsage:
        out = AgentUsage()
        for usage in self.agents.values():
            out.add(usage)
        return out

    def label(self, path: tuple[str, ...]) -> str:
        return " > ".join(path) if path else "agent"

    def to_dict(self) -> dict[str, Any]:
        """``{"total": {...}, "agents": {"lead": {...}, "lead > reviewer": {...}}}``."""
        return {
            "total": self.total().to_dict(),
            "agents": {self.label(p): u.to_dict() for p, u in sorted(self.agents.items())},
        }


def usage_of_run(messages: Iterable[Message], own: tuple[str, ...]) -> dict[str, Any]:
    """The tree's usage of a run from its messages (``own``: the agent's path)."""
    tree = UsageTree(own)
    mine = tree._of(own)
    for message in messages:
        if isinstance(message, AssistantMessage):
            mine.turns += 1
            usage = message.usage
            if usage is not None:
                mine.input += usage.input
                mine.output += usage.output
                mine.cache_read += usage.cache_read
                mine.cache_write += usage.cache_write
                mine.cost_usd += usage.cost.total
        elif isinstance(message, ToolResultMessage):
            mine.tool_calls += 1
            details = message.details
            nested = details.get(TREE_DETAILS) if isinstance(details, dict) else None
            agents = nested.get("agents") if isinstance(nested, dict) else None
            for label, figures in (agents or {}).items():
                if isinstance(figures, dict):
                    tree._of(tuple(str(label).split(" > "))).add(_from_dict(figures))
    return tree.to_dict()


def _from_dict(data: dict[str, Any]) -> AgentUsage:
    def number(key: str) -> int:
        value = data.get(key, 0)
        return int(value) if isinstance(value, int | float) else 0

    cost = data.get("cost_usd", 0.0)
    return AgentUsage(
        turns=number("turns"),
        tool_calls=number("tool_calls"),
        input=number("input_tokens"),
        output=number("output_tokens"),
        cache_read=number("cache_read_tokens"),
        cache_write=number("cache_write_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) else 0.0,
    )


def agent_path_of(extensions: Iterable[Any], metadata: Any) -> tuple[str, ...]:
    """An agent's path: its sub-agents extension's, else its session's (a sub-agent's
    header names its path, a generated agent's its name), else ()."""
    for extension in extensions:
        path = getattr(extension, "agent_path", None)
        if isinstance(path, tuple) and path:
            return path
    if isinstance(metadata, dict):
        path = metadata.get("agent_path")
        if isinstance(path, list) and path:
            return tuple(str(p) for p in path)
        if isinstance(metadata.get("agent"), str) and metadata["agent"]:
            return (metadata["agent"],)
    return ()

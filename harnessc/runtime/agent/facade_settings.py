"""The settings half of the ``AgentHarness`` facade: model, thinking level, tools,
resources, budget and the message queues (each change takes effect at the next turn)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from harnessc.runtime.agent.loop import AgentLoop
from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.messages import UserMessage
from harnessc.runtime.core.options import (
    AgentHarnessStreamOptions,
    Model,
    ThinkingLevel,
    ToolContextSource,
)
from harnessc.runtime.providers.base import ToolSpec
from harnessc.runtime.resources.types import AgentHarnessResources
from harnessc.runtime.tools.base import AgentTool

__all__ = ["SettingsFacade"]


class SettingsFacade:
    """Mixed into ``AgentHarness``; reads and changes ``AgentLoop.settings`` and the queues."""

    _loop: AgentLoop

    @property
    def models(self) -> dict[str, Model]:
        return self._loop.settings.models

    @property
    def model(self) -> Model:
        return self._loop.settings.model

    @property
    def thinking_level(self) -> ThinkingLevel:
        return self._loop.settings.thinking_level

    @property
    def resources(self) -> AgentHarnessResources:
        return self._loop.settings.resources

    @property
    def pending_resources(self) -> AgentHarnessResources | None:
        """Resources waiting for the next turn (set while a run was busy)."""
        return self._loop.settings.pending_resources

    @property
    def tools(self) -> dict[str, AgentTool]:
        return dict(self._loop.settings.tools)

    @property
    def active_tool_names(self) -> list[str]:
        return list(self._loop.settings.active_tool_names)

    @property
    def stream_options(self) -> AgentHarnessStreamOptions:
        return self._loop.settings.stream_options

    # -- settings (take effect at the next turn) -------------------------------------

    def model_key(self) -> str:
        return self._loop.settings.model_key()

    async def set_model(self, model: str | Model) -> None:
        await self._loop.settings.set_model(model)

    async def set_thinking_level(self, level: ThinkingLevel | str) -> None:
        await self._loop.settings.set_thinking_level(level)

    async def set_active_tools(self, names: Sequence[str]) -> None:
        await self._loop.settings.set_active_tools(names)

    def add_tools(self, tools: Iterable[AgentTool], *, activate: bool = True) -> None:
        """Add tools (extensions contribute theirs at install time)."""
        self._loop.settings.add_tools(tools, activate=activate)

    def remove_tools(self, names: Iterable[str]) -> list[str]:
        """Remove tools (an MCP server stopped offering them); takes effect at the next
        model call. Returns the names that were there."""
        return self._loop.settings.remove_tools(names)

    async def set_resources(self, resources: AgentHarnessResources) -> None:
        """New skills and templates; applied now when idle, else at the next turn."""
        if self._loop.busy:
            self._loop.settings.pending_resources = resources
            return
        await self._loop.settings.apply_resources(resources)

    @property
    def tool_context(self) -> ToolContextSource:
        """Where the tools' context comes from (the permission gate resolves paths in it)."""
        return self._loop.settings.tool_context

    def set_tool_context(self, source: ToolContextSource) -> None:
        self._loop.settings.tool_context = source

    def set_budget(self, budget: Budget) -> None:
        self._loop.budget.raise_limits(budget)

    def steer(self, message: str | UserMessage) -> None:
        """Queue a message delivered after the current tool batch."""
        self._loop.steering.append(_user_message(message))
        self._loop.queue_changed()

    def follow_up(self, message: str | UserMessage) -> None:
        """Queue a message delivered when the agent would otherwise stop."""
        self._loop.follow_up.append(_user_message(message))
        self._loop.queue_changed()

    def clear_queues(self) -> list[UserMessage]:
        """Drop the queued steering and follow-up messages (an aborted run's); returns them."""
        dropped = [*self._loop.steering, *self._loop.follow_up]
        if dropped:
            self._loop.steering.clear()
            self._loop.follow_up.clear()
            self._loop.queue_changed()
        return dropped

    def tool_specs(self) -> list[ToolSpec]:
        return self._loop.settings.tool_specs()


def _user_message(message: str | UserMessage) -> UserMessage:
    return UserMessage(content=message) if isinstance(message, str) else message

"""The options an AgentHarness is built from (``AgentHarnessOptions``).

A generated agent module builds one of these field by field; every type here is a
plain dataclass so the wiring reads like hand-written code.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeAlias

from harnessc.runtime.core.model_options import (
    THINKING_BUDGETS,
    AgentHarnessStreamOptions,
    Model,
    ModelCost,
    RetryOptions,
    ThinkingLevel,
)

if TYPE_CHECKING:
    from harnessc.runtime.core.budget import Budget
    from harnessc.runtime.core.hooks import HookSpec
    from harnessc.runtime.core.run_inputs import RunInputs
    from harnessc.runtime.core.typed_output import OutputConfig
    from harnessc.runtime.providers.base import Provider
    from harnessc.runtime.providers.fallback import ModelFallback
    from harnessc.runtime.providers.transport import HttpClientPool
    from harnessc.runtime.resources.types import AgentHarnessResources
    from harnessc.runtime.session.session import Session
    from harnessc.runtime.tools.base import AgentTool

__all__ = [
    "AgentHarnessOptions",
    "AgentHarnessStreamOptions",
    "Model",
    "ModelCost",
    "QueueMode",
    "RetryOptions",
    "SystemPrompt",
    "ThinkingLevel",
    "ToolContextSource",
    "THINKING_BUDGETS",
    "env",
]


class QueueMode(StrEnum):
    ONE_AT_A_TIME = "one-at-a-time"
    ALL = "all"


ToolContext: TypeAlias = Any
SystemPrompt: TypeAlias = "str | Callable[..., str | Awaitable[str]]"


@dataclass(slots=True)
class ToolContextSource:
    """A static context value, or a callable returning one, read at every turn."""

    context: Any = None

    async def resolve(self) -> Any:
        value = self.context
        if callable(value):
            value = value()
            if hasattr(value, "__await__"):
                value = await value
        return value


DEFAULT_TOOL_TIMEOUT_S = 180.0  # as pi's tool calls


@dataclass(slots=True)
class AgentHarnessOptions:
    session: Session | None = None
    models: Mapping[str, Model] = field(default_factory=dict)
    tools: Sequence[AgentTool] = ()
    resources: AgentHarnessResources | None = None
    system_prompt: Any = None  # str, or callable(harness_context) -> str (may be async)
    stream_options: AgentHarnessStreamOptions | None = None
    retry: RetryOptions | None = None
    model: str | Model | None = None  # a key of ``models`` or a Model
    thinking_level: ThinkingLevel | None = None
    active_tool_names: Sequence[str] | None = None
    steering_mode: QueueMode | None = None
    follow_up_mode: QueueMode | None = None
    tool_context: ToolContextSource | None = None
    budget: Budget | None = None
    hooks: Sequence[HookSpec] = ()
    # Serves every model instead of the wire API's provider (scripted / replay runs).
    provider: Provider | None = None
    # Run tool batches one call at a time even when every tool allows parallel runs.
    sequential_tools: bool = False
    # Seconds one tool call may run before the loop ends it with an error result (a
    # tool's own ``timeout_s`` wins); None: no limit.
    tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S
    # Extensions (hook providers such as compaction) built by the agent module.
    extensions: Sequence[Any] = ()
    # HTTP clients shared with other harnesses (one connection pool and one cap on
    # requests in flight per base URL); None: the harness opens and closes its own.
    http_clients: HttpClientPool | None = None
    # The clock of the wall-clock budget and the run ids (None: the live ones); a durable
    # run's come from its recorded steps.
    run_inputs: RunInputs | None = None
    # Models a failed request moves to (their keys, in order), and when.
    fallback: ModelFallback | None = None
    # The typed result (``output:``): RunResult.output holds the validated answer.
    output: OutputConfig | None = None


def env(name: str, default: str | None = None) -> str:
    """The value of an environment variable at run time, else ``default``.

    Raises KeyError naming the variable when it is unset and has no default.
    """
    value = os.environ.get(name)
    if value:
        return value
    if default is not None:
        return default
    raise KeyError(f"environment variable {name} is not set")

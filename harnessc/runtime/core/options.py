"""The vocabulary of a harness's settings: models and their stream options (re-exported
from ``model_options``), queue modes, the tool context source and ``env``. The options
record built from them, ``AgentHarnessOptions``, lives in ``runtime/options/``.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any, TypeAlias

from msgspec import Struct

from harnessc.runtime.core.model_options import (
    THINKING_BUDGETS,
    AgentHarnessStreamOptions,
    Model,
    ModelCost,
    RetryOptions,
    ThinkingLevel,
)

__all__ = [
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


class ToolContextSource(Struct):
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
# The deepest sub-agents nest (``max_depth``'s ceiling): each level is a whole agent
# running inside its parent's tool call.
MAX_SUBAGENT_DEPTH = 10


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

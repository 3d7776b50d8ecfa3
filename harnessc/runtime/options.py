"""The options an AgentHarness is built from (seed 000 ``AgentHarnessOptions``).

A generated agent module builds one of these field by field; every type here is a
plain dataclass so the wiring reads like hand-written code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeAlias

from harnessc.runtime.secrets import register_secret_names

if TYPE_CHECKING:
    from harnessc.runtime.budget import Budget
    from harnessc.runtime.hooks import HookSpec
    from harnessc.runtime.providers.base import Provider
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


class ThinkingLevel(StrEnum):
    OFF = "off"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"


# Token budgets for providers that take a number (Anthropic, Gemini); pi's defaults.
THINKING_BUDGETS: dict[ThinkingLevel, int] = {
    ThinkingLevel.MINIMAL: 1024,
    ThinkingLevel.LOW: 2048,
    ThinkingLevel.MEDIUM: 8192,
    ThinkingLevel.HIGH: 16384,
    ThinkingLevel.XHIGH: 32768,
}


class QueueMode(StrEnum):
    ONE_AT_A_TIME = "one-at-a-time"
    ALL = "all"


@dataclass(slots=True)
class ModelCost:
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@dataclass(slots=True)
class Model:
    """One model a harness may call, and the wire API that reaches it."""

    id: str
    api: str  # "openai-completions" | "anthropic-messages" | "google-generative-ai" | ...
    provider: str = ""
    name: str = ""
    base_url: str = ""
    api_key_env: str | None = None
    context_window: int = 128_000
    max_tokens: int = 16_384
    reasoning: bool = False
    input: tuple[str, ...] = ("text", "image")
    cost: ModelCost = field(default_factory=ModelCost)
    headers: dict[str, str] = field(default_factory=dict)
    # Per-server switches for OpenAI-compatible servers, e.g.
    # {"supports_reasoning_effort": False, "supports_usage_in_streaming": False,
    #  "max_tokens_field": "max_tokens", "supports_developer_role": False}.
    compat: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:  # child processes never see this model's key
        register_secret_names([self.api_key_env])

    def api_key(self) -> str | None:
        """The key from the environment variable the model names (never stored)."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env, "").strip() or None


@dataclass(slots=True)
class AgentHarnessStreamOptions:
    transport: str | None = None
    timeout_ms: int | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int | None = None
    headers: dict[str, str] | None = None
    metadata: dict[str, Any] | None = None
    cache_retention: str | None = None  # "none" | "short" | "long"


@dataclass(slots=True)
class RetryOptions:
    """Backoff of provider requests (pi: base 2000 ms, doubling, with jitter)."""

    base_delay_ms: int = 2000
    multiplier: float = 2.0
    jitter: float = 0.2


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
    # Extensions (seed 003 hook providers) built by the agent module.
    extensions: Sequence[Any] = ()


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


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


def expand_env(text: str) -> str:
    """Resolve ``${VAR}`` and ``${VAR:-default}`` references inside a string."""

    def sub(match: re.Match[str]) -> str:
        return env(match.group(1), match.group(2))

    return _ENV_REF.sub(sub, text)

"""What a provider request needs to know of a model: the model, thinking level, stream
and retry options.

Kept apart from ``options.py`` so that ``providers/base.py`` and ``options.py`` do not
import each other: both import this module (``options`` re-exports every name).
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Any

from harnessc.runtime.support.records import NEW_DICT, Factory, Record
from harnessc.runtime.support.secrets import register_secret_names

__all__ = [
    "THINKING_BUDGETS",
    "AgentHarnessStreamOptions",
    "Model",
    "ModelCost",
    "RetryOptions",
    "ThinkingLevel",
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


class ModelCost(Record):
    """Dollars per million tokens."""

    __slots__ = ("input", "output", "cache_read", "cache_write")
    input: float
    output: float
    cache_read: float
    cache_write: float

    def __init__(
        self,
        input: float = 0.0,
        output: float = 0.0,
        cache_read: float = 0.0,
        cache_write: float = 0.0,
    ) -> None:
        self.input = input
        self.output = output
        self.cache_read = cache_read
        self.cache_write = cache_write


_NEW_COST: Any = Factory(ModelCost)


class Model(Record):
    """One model a harness may call, and the wire API that reaches it."""

    __slots__ = (
        "id",
        "api",
        "provider",
        "name",
        "base_url",
        "api_key_env",
        "context_window",
        "max_tokens",
        "reasoning",
        "input",
        "cost",
        "headers",
        "compat",
        "structured_output",
    )
    id: str
    api: str  # "openai-completions" | "anthropic-messages" | "google-generative-ai" | ...
    provider: str
    name: str
    base_url: str
    api_key_env: str | None
    context_window: int
    max_tokens: int
    reasoning: bool
    input: tuple[str, ...]
    cost: ModelCost
    headers: dict[str, str]
    # Per-server switches for OpenAI-compatible servers, e.g.
    # {"supports_reasoning_effort": False, "supports_usage_in_streaming": False,
    #  "max_tokens_field": "max_tokens", "supports_developer_role": False}.
    compat: dict[str, Any]
    # The model answers in a given JSON Schema (a typed output's mode auto uses it).
    structured_output: bool

    def __init__(
        self,
        id: str,
        api: str,
        provider: str = "",
        name: str = "",
        base_url: str = "",
        api_key_env: str | None = None,
        context_window: int = 128_000,
        max_tokens: int = 16_384,
        reasoning: bool = False,
        input: tuple[str, ...] = ("text", "image"),
        cost: ModelCost = _NEW_COST,
        headers: dict[str, str] = NEW_DICT,
        compat: dict[str, Any] = NEW_DICT,
        structured_output: bool = False,
    ) -> None:
        self.id = id
        self.api = api
        self.provider = provider
        self.name = name
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.context_window = context_window
        self.max_tokens = max_tokens
        self.reasoning = reasoning
        self.input = input
        self.cost = ModelCost() if cost is _NEW_COST else cost
        self.headers = {} if headers is NEW_DICT else headers
        self.compat = {} if compat is NEW_DICT else compat
        self.structured_output = structured_output
        self.__post_init__()

    def __post_init__(self) -> None:  # child processes never see this model's key
        register_secret_names([self.api_key_env])

    def api_key(self) -> str | None:
        """The key from the environment variable the model names (never stored)."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env, "").strip() or None


class AgentHarnessStreamOptions(Record):
    __slots__ = (
        "transport",
        "timeout_ms",
        "max_retries",
        "max_retry_delay_ms",
        "headers",
        "metadata",
        "cache_retention",
    )
    transport: str | None
    timeout_ms: int | None
    max_retries: int | None
    max_retry_delay_ms: int | None
    headers: dict[str, str] | None
    metadata: dict[str, Any] | None
    cache_retention: str | None  # "none" | "short" | "long"

    def __init__(
        self,
        transport: str | None = None,
        timeout_ms: int | None = None,
        max_retries: int | None = None,
        max_retry_delay_ms: int | None = None,
        headers: dict[str, str] | None = None,
        metadata: dict[str, Any] | None = None,
        cache_retention: str | None = None,
    ) -> None:
        self.transport = transport
        self.timeout_ms = timeout_ms
        self.max_retries = max_retries
        self.max_retry_delay_ms = max_retry_delay_ms
        self.headers = headers
        self.metadata = metadata
        self.cache_retention = cache_retention


class RetryOptions(Record):
    """Backoff of provider requests (pi: base 2000 ms, doubling, with jitter)."""

    __slots__ = ("base_delay_ms", "multiplier", "jitter")
    base_delay_ms: int
    multiplier: float
    jitter: float

    def __init__(
        self, base_delay_ms: int = 2000, multiplier: float = 2.0, jitter: float = 0.2
    ) -> None:
        self.base_delay_ms = base_delay_ms
        self.multiplier = multiplier
        self.jitter = jitter

"""What a provider request needs to know of a model: the model, thinking level, stream
and retry options.

Kept apart from ``options.py`` so that ``providers/base.py`` and ``options.py`` do not
import each other: both import this module (``options`` re-exports every name).
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Any

from msgspec import Struct, field

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


class ModelCost(Struct):
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class Model(Struct):
    """One model a harness may call, and the wire API that reaches it."""

    id: str
    api: str  # "openai-completions" | "anthropic-messages" | "google-generative-ai" | ...
    provider: str = ""
    name: str = ""
    base_url: str = ""
    api_key_env: str | None = None
    context_window: int = 128000
    max_tokens: int = 16384
    reasoning: bool = False
    input: tuple[str, ...] = ("text", "image")
    cost: ModelCost = field(default_factory=ModelCost)
    headers: dict[str, str] = {}
    # Per-server switches for OpenAI-compatible servers, e.g.
    # {"supports_reasoning_effort": False, "supports_usage_in_streaming": False,
    #  "max_tokens_field": "max_tokens", "supports_developer_role": False}.
    compat: dict[str, Any] = {}
    # The model answers in a given JSON Schema (a typed output's mode auto uses it).
    structured_output: bool = False

    def __post_init__(self) -> None:  # child processes never see this model's key
        register_secret_names([self.api_key_env])

    def api_key(self) -> str | None:
        """The key from the environment variable the model names (never stored)."""
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env, "").strip() or None


class AgentHarnessStreamOptions(Struct):
    transport: str | None = None
    timeout_ms: int | None = None
    max_retries: int | None = None
    max_retry_delay_ms: int | None = None
    headers: dict[str, str] | None = None
    metadata: dict[str, Any] | None = None
    cache_retention: str | None = None  # "none" | "short" | "long"


class RetryOptions(Struct):
    """Backoff of provider requests (pi: base 2000 ms, doubling, with jitter)."""

    base_delay_ms: int = 2000
    multiplier: float = 2.0
    jitter: float = 0.2

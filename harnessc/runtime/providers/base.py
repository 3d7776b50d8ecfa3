"""The provider interface: a harness context in, a stream of assistant-message events out.

Every wire API (OpenAI chat completions, Anthropic messages, Google generative AI,
the scripted and replay providers) implements ``Provider.stream``. The stream always
ends with exactly one ``done`` or ``error`` event carrying the final AssistantMessage;
errors are never raised out of ``stream`` (an error is an assistant message with stop
reason ``error``). The request and event types are msgspec ``Struct`` records.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, Protocol

from msgspec import Struct, field

from harnessc.runtime.core.messages import AssistantMessage, Message
from harnessc.runtime.core.model_options import (
    AgentHarnessStreamOptions,
    Model,
    RetryOptions,
    ThinkingLevel,
)
from harnessc.runtime.core.signal import AbortSignal

__all__ = [
    "AssistantMessageEvent",
    "Context",
    "Provider",
    "ProviderRequest",
    "ProviderRetry",
    "ResponseSchema",
    "ToolSpec",
]


class ToolSpec(Struct):
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: dict[str, Any]


class ResponseSchema(Struct):
    """The JSON Schema a reply's text must match (the provider's structured output)."""

    name: str
    schema: dict[str, Any]
    strict: bool = False  # OpenAI's strict mode (the schema allows it)


class Context(Struct):
    system_prompt: str
    messages: list[Message]
    tools: list[ToolSpec] = []
    # Structured output: the reply's text must match this schema.
    response_schema: ResponseSchema | None = None
    # "required": the reply must call a tool; a tool's name: it must call that one.
    tool_choice: str | None = None


class ProviderRetry(Struct):
    """One failed attempt that will be retried after ``delay_ms``; ``error`` is the
    failure's text without the ``HTTP <status>:`` prefix (``status`` carries it)."""

    attempt: int  # 1-based number of the attempt that failed
    max_retries: int
    delay_ms: int
    status: int | None
    error: str


class ProviderRequest(Struct):
    model: Model
    context: Context
    stream_options: AgentHarnessStreamOptions = field(default_factory=AgentHarnessStreamOptions)
    thinking_level: ThinkingLevel = ThinkingLevel.OFF
    signal: AbortSignal = field(default_factory=AbortSignal)
    session_id: str | None = None
    retry: RetryOptions = field(default_factory=RetryOptions)
    # before_provider_payload: the JSON body about to be sent -> the body to send.
    on_payload: Callable[[Any], Awaitable[Any]] | None = None
    # after_provider_response: HTTP status and headers of each response.
    on_response: Callable[[int, dict[str, str]], Awaitable[None]] | None = None
    # Each failed attempt that will be retried.
    on_retry: Callable[[ProviderRetry], Awaitable[None]] | None = None
    # What the reply's stream got wrong without spoiling it (a malformed chunk skipped,
    # usage counts that are not numbers), once the reply is complete.
    on_warning: Callable[[str], Awaitable[None]] | None = None
    # The moment on the event loop's clock (loop.time(), time.monotonic() on asyncio's
    # own loops) the request, retries included, must end by, set by the harness from
    # the wall-clock budget; None: only timeout_ms bounds it.
    deadline: float | None = None


EventType = Literal[
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
]


class AssistantMessageEvent(Struct):
    """One step of a streamed reply; ``partial`` is the message as built so far."""

    type: EventType
    partial: AssistantMessage
    content_index: int = 0
    delta: str = ""
    # An ``error`` event's failure kind (providers.errors.FAILURE_KINDS), "" if unknown.
    error_kind: str = ""


class Provider(Protocol):
    def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]: ...

"""The provider interface: a harness context in, a stream of assistant-message events out.

Every wire API (OpenAI chat completions, Anthropic messages, Google generative AI,
the scripted and replay providers) implements ``Provider.stream``. The stream always
ends with exactly one ``done`` or ``error`` event carrying the final AssistantMessage;
errors are never raised out of ``stream`` (an error is an assistant message with stop
reason ``error``). The request and event types are ``Record`` classes: slotted, with
an ``__init__`` written out, and answering ``dataclasses.fields``/``asdict``/``replace``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, Protocol

from harnessc.runtime.core.messages import AssistantMessage, Message
from harnessc.runtime.core.model_options import (
    AgentHarnessStreamOptions,
    Model,
    RetryOptions,
    ThinkingLevel,
)
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.support.records import NEW_LIST, Factory, Record

__all__ = [
    "AssistantMessageEvent",
    "Context",
    "Provider",
    "ProviderRequest",
    "ProviderRetry",
    "ResponseSchema",
    "ToolSpec",
]


class ToolSpec(Record):
    """What the model is told about a tool."""

    __slots__ = ("name", "description", "parameters")
    name: str
    description: str
    parameters: dict[str, Any]

    def __init__(self, name: str, description: str, parameters: dict[str, Any]) -> None:
        self.name = name
        self.description = description
        self.parameters = parameters


class ResponseSchema(Record):
    """The JSON Schema a reply's text must match (the provider's structured output)."""

    __slots__ = ("name", "schema", "strict")
    name: str
    schema: dict[str, Any]
    strict: bool  # OpenAI's strict mode (the schema allows it)

    def __init__(self, name: str, schema: dict[str, Any], strict: bool = False) -> None:
        self.name = name
        self.schema = schema
        self.strict = strict


class Context(Record):
    __slots__ = ("system_prompt", "messages", "tools", "response_schema", "tool_choice")
    system_prompt: str
    messages: list[Message]
    tools: list[ToolSpec]
    # Structured output: the reply's text must match this schema.
    response_schema: ResponseSchema | None
    # "required": the reply must call a tool; a tool's name: it must call that one.
    tool_choice: str | None

    def __init__(
        self,
        system_prompt: str,
        messages: list[Message],
        tools: list[ToolSpec] = NEW_LIST,
        response_schema: ResponseSchema | None = None,
        tool_choice: str | None = None,
    ) -> None:
        self.system_prompt = system_prompt
        self.messages = messages
        self.tools = [] if tools is NEW_LIST else tools
        self.response_schema = response_schema
        self.tool_choice = tool_choice


class ProviderRetry(Record):
    """One failed attempt that will be retried after ``delay_ms``; ``error`` is the
    failure's text without the ``HTTP <status>:`` prefix (``status`` carries it)."""

    __slots__ = ("attempt", "max_retries", "delay_ms", "status", "error")
    attempt: int  # 1-based number of the attempt that failed
    max_retries: int
    delay_ms: int
    status: int | None
    error: str

    def __init__(
        self, attempt: int, max_retries: int, delay_ms: int, status: int | None, error: str
    ) -> None:
        self.attempt = attempt
        self.max_retries = max_retries
        self.delay_ms = delay_ms
        self.status = status
        self.error = error


_NEW_STREAM_OPTIONS: Any = Factory(AgentHarnessStreamOptions)
_NEW_SIGNAL: Any = Factory(AbortSignal)
_NEW_RETRY: Any = Factory(RetryOptions)


class ProviderRequest(Record):
    __slots__ = (
        "model",
        "context",
        "stream_options",
        "thinking_level",
        "signal",
        "session_id",
        "retry",
        "on_payload",
        "on_response",
        "on_retry",
        "on_warning",
        "deadline",
    )
    model: Model
    context: Context
    stream_options: AgentHarnessStreamOptions
    thinking_level: ThinkingLevel
    signal: AbortSignal
    session_id: str | None
    retry: RetryOptions
    # before_provider_payload: the JSON body about to be sent -> the body to send.
    on_payload: Callable[[Any], Awaitable[Any]] | None
    # after_provider_response: HTTP status and headers of each response.
    on_response: Callable[[int, dict[str, str]], Awaitable[None]] | None
    # Each failed attempt that will be retried.
    on_retry: Callable[[ProviderRetry], Awaitable[None]] | None
    # What the reply's stream got wrong without spoiling it (a malformed chunk skipped,
    # usage counts that are not numbers), once the reply is complete.
    on_warning: Callable[[str], Awaitable[None]] | None
    # The moment on the event loop's clock (loop.time(), time.monotonic() on asyncio's
    # own loops) the request, retries included, must end by, set by the harness from
    # the wall-clock budget; None: only timeout_ms bounds it.
    deadline: float | None

    def __init__(
        self,
        model: Model,
        context: Context,
        stream_options: AgentHarnessStreamOptions = _NEW_STREAM_OPTIONS,
        thinking_level: ThinkingLevel = ThinkingLevel.OFF,
        signal: AbortSignal = _NEW_SIGNAL,
        session_id: str | None = None,
        retry: RetryOptions = _NEW_RETRY,
        on_payload: Callable[[Any], Awaitable[Any]] | None = None,
        on_response: Callable[[int, dict[str, str]], Awaitable[None]] | None = None,
        on_retry: Callable[[ProviderRetry], Awaitable[None]] | None = None,
        on_warning: Callable[[str], Awaitable[None]] | None = None,
        deadline: float | None = None,
    ) -> None:
        self.model = model
        self.context = context
        self.stream_options = (
            AgentHarnessStreamOptions() if stream_options is _NEW_STREAM_OPTIONS else stream_options
        )
        self.thinking_level = thinking_level
        self.signal = AbortSignal() if signal is _NEW_SIGNAL else signal
        self.session_id = session_id
        self.retry = RetryOptions() if retry is _NEW_RETRY else retry
        self.on_payload = on_payload
        self.on_response = on_response
        self.on_retry = on_retry
        self.on_warning = on_warning
        self.deadline = deadline


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


class AssistantMessageEvent(Record):
    """One step of a streamed reply; ``partial`` is the message as built so far."""

    __slots__ = ("type", "partial", "content_index", "delta", "error_kind")
    type: EventType
    partial: AssistantMessage
    content_index: int
    delta: str
    # An ``error`` event's failure kind (providers.errors.FAILURE_KINDS), "" if unknown.
    error_kind: str

    def __init__(
        self,
        type: EventType,
        partial: AssistantMessage,
        content_index: int = 0,
        delta: str = "",
        error_kind: str = "",
    ) -> None:
        self.type = type
        self.partial = partial
        self.content_index = content_index
        self.delta = delta
        self.error_kind = error_kind


class Provider(Protocol):
    def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]: ...

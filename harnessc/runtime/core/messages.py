"""Messages exchanged with a model, as slotted records (pi-ai's shapes).

The JSON form (``to_dict`` / ``message_from_dict``) is the one pi writes into its
session files (camelCase keys), so sessions written by either tool open in the other.
The classes are ``Record`` classes: they compare, print, match and answer
``dataclasses.fields``/``asdict``/``replace`` as dataclasses do.
"""

from __future__ import annotations

import time
from typing import Any, Literal, TypeAlias

from harnessc.runtime.support.records import NEW_LIST, Factory, Record

__all__ = [
    "AssistantContent",
    "AssistantMessage",
    "NO_COST",
    "Cost",
    "CustomMessage",
    "ImageContent",
    "Message",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "content_from_dict",
    "message_from_dict",
    "message_text",
    "now_ms",
]

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]


def now_ms() -> int:
    """Milliseconds since the epoch, the timestamp unit of every message."""
    return int(time.time() * 1000)


# A default meaning "now, in milliseconds, when the message is made".
NOW_MS: Any = Factory(now_ms)


class TextContent(Record):
    __slots__ = ("text", "text_signature", "type")
    text: str
    text_signature: str | None
    type: Literal["text"]

    def __init__(
        self, text: str, text_signature: str | None = None, type: Literal["text"] = "text"
    ) -> None:
        self.text = text
        self.text_signature = text_signature
        self.type = type

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "text", "text": self.text}
        if self.text_signature is not None:
            out["textSignature"] = self.text_signature
        return out


class ImageContent(Record):
    __slots__ = ("data", "mime_type", "type")
    data: str  # base64
    mime_type: str
    type: Literal["image"]

    def __init__(self, data: str, mime_type: str, type: Literal["image"] = "image") -> None:
        self.data = data
        self.mime_type = mime_type
        self.type = type

    def to_dict(self) -> dict[str, Any]:
        return {"type": "image", "data": self.data, "mimeType": self.mime_type}


class ThinkingContent(Record):
    __slots__ = ("thinking", "thinking_signature", "redacted", "type")
    thinking: str
    thinking_signature: str | None
    redacted: bool
    type: Literal["thinking"]

    def __init__(
        self,
        thinking: str,
        thinking_signature: str | None = None,
        redacted: bool = False,
        type: Literal["thinking"] = "thinking",
    ) -> None:
        self.thinking = thinking
        self.thinking_signature = thinking_signature
        self.redacted = redacted
        self.type = type

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "thinking", "thinking": self.thinking}
        if self.thinking_signature is not None:
            out["thinkingSignature"] = self.thinking_signature
        if self.redacted:
            out["redacted"] = True
        return out


class ToolCall(Record):
    __slots__ = ("id", "name", "arguments", "parse_error", "type")
    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model sent arguments that are not valid JSON; the loop turns such a
    # call into an error result the model can read instead of running the tool.
    parse_error: str | None
    type: Literal["toolCall"]

    def __init__(
        self,
        id: str,
        name: str,
        arguments: dict[str, Any],
        parse_error: str | None = None,
        type: Literal["toolCall"] = "toolCall",
    ) -> None:
        self.id = id
        self.name = name
        self.arguments = arguments
        self.parse_error = parse_error
        self.type = type

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "toolCall",
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments,
        }
        if self.parse_error is not None:
            out["parseError"] = self.parse_error
        return out


UserContent: TypeAlias = TextContent | ImageContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall


class Cost(Record):
    """Dollars spent, split like the usage counts."""

    __slots__ = ("input", "output", "cache_read", "cache_write", "total")
    input: float
    output: float
    cache_read: float
    cache_write: float
    total: float

    def __init__(
        self,
        input: float = 0.0,
        output: float = 0.0,
        cache_read: float = 0.0,
        cache_write: float = 0.0,
        total: float = 0.0,
    ) -> None:
        self.input = input
        self.output = output
        self.cache_read = cache_read
        self.cache_write = cache_write
        self.total = total

    def to_dict(self) -> dict[str, Any]:
        return {
            "input": _amount(self.input),
            "output": _amount(self.output),
            "cacheRead": _amount(self.cache_read),
            "cacheWrite": _amount(self.cache_write),
            "total": _amount(self.total),
        }


def _amount(value: float) -> float | int:
    # 0, as JavaScript writes it: a free reply's line needs no rewriting of its numbers
    return 0 if value == 0 else value


_NEW_COST: Any = Factory(Cost)
# The cost of a reply that spent nothing (a model without prices, a local one), shared by
# all of them: a usage's cost is replaced, never changed in place.
NO_COST = Cost()


class Usage(Record):
    __slots__ = ("input", "output", "cache_read", "cache_write", "total_tokens", "cost")
    input: int
    output: int
    cache_read: int
    cache_write: int
    total_tokens: int
    cost: Cost

    def __init__(
        self,
        input: int = 0,
        output: int = 0,
        cache_read: int = 0,
        cache_write: int = 0,
        total_tokens: int = 0,
        cost: Cost = _NEW_COST,
    ) -> None:
        self.input = input
        self.output = output
        self.cache_read = cache_read
        self.cache_write = cache_write
        self.total_tokens = total_tokens
        self.cost = NO_COST if cost is _NEW_COST else cost

    def to_dict(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": self.total_tokens,
            "cost": self.cost.to_dict(),
        }

    @staticmethod
    def from_dict(data: dict[str, Any] | None) -> Usage:
        if not isinstance(data, dict):
            return Usage()
        cost = data.get("cost") if isinstance(data.get("cost"), dict) else {}
        assert isinstance(cost, dict)
        spent = Cost(
            input=float(cost.get("input") or 0.0),
            output=float(cost.get("output") or 0.0),
            cache_read=float(cost.get("cacheRead") or 0.0),
            cache_write=float(cost.get("cacheWrite") or 0.0),
            total=float(cost.get("total") or 0.0),
        )
        return Usage(
            input=int(data.get("input") or 0),
            output=int(data.get("output") or 0),
            cache_read=int(data.get("cacheRead") or 0),
            cache_write=int(data.get("cacheWrite") or 0),
            total_tokens=int(data.get("totalTokens") or 0),
            cost=NO_COST if spent == NO_COST else spent,
        )


_NEW_USAGE: Any = Factory(Usage)


class UserMessage(Record):
    __slots__ = ("content", "timestamp", "role")
    content: str | list[UserContent]
    timestamp: int
    role: Literal["user"]

    def __init__(
        self,
        content: str | list[UserContent],
        timestamp: int = NOW_MS,
        role: Literal["user"] = "user",
    ) -> None:
        self.content = content
        self.timestamp = now_ms() if timestamp is NOW_MS else timestamp
        self.role = role

    def to_dict(self) -> dict[str, Any]:
        content: Any = (
            self.content if isinstance(self.content, str) else [c.to_dict() for c in self.content]
        )
        return {"role": "user", "content": content, "timestamp": self.timestamp}


class AssistantMessage(Record):
    __slots__ = (
        "content",
        "api",
        "provider",
        "model",
        "usage",
        "stop_reason",
        "error_message",
        "context_overflow",
        "timestamp",
        "role",
    )
    content: list[AssistantContent]
    api: str
    provider: str
    model: str
    usage: Usage
    stop_reason: StopReason
    error_message: str | None
    # True when the provider said the context did not fit (error text or usage past the
    # context window), so compaction can recover.
    context_overflow: bool
    timestamp: int
    role: Literal["assistant"]

    def __init__(
        self,
        content: list[AssistantContent] = NEW_LIST,
        api: str = "",
        provider: str = "",
        model: str = "",
        usage: Usage = _NEW_USAGE,
        stop_reason: StopReason = "stop",
        error_message: str | None = None,
        context_overflow: bool = False,
        timestamp: int = NOW_MS,
        role: Literal["assistant"] = "assistant",
    ) -> None:
        self.content = [] if content is NEW_LIST else content
        self.api = api
        self.provider = provider
        self.model = model
        self.usage = Usage() if usage is _NEW_USAGE else usage
        self.stop_reason = stop_reason
        self.error_message = error_message
        self.context_overflow = context_overflow
        self.timestamp = now_ms() if timestamp is NOW_MS else timestamp
        self.role = role

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for c in self.content if isinstance(c, ToolCall)]

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.content if isinstance(c, TextContent))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": "assistant",
            "content": [c.to_dict() for c in self.content],
            "api": self.api,
            "provider": self.provider,
            "model": self.model,
            "usage": self.usage.to_dict(),
            "stopReason": self.stop_reason,
            "timestamp": self.timestamp,
        }
        if self.error_message is not None:
            out["errorMessage"] = self.error_message
        if self.context_overflow:
            out["contextOverflow"] = True
        return out


class ToolResultMessage(Record):
    __slots__ = ("tool_call_id", "tool_name", "content", "details", "is_error", "timestamp", "role")
    tool_call_id: str
    tool_name: str
    content: list[UserContent]
    details: Any
    is_error: bool
    timestamp: int
    role: Literal["toolResult"]

    def __init__(
        self,
        tool_call_id: str,
        tool_name: str,
        content: list[UserContent] = NEW_LIST,
        details: Any = None,
        is_error: bool = False,
        timestamp: int = NOW_MS,
        role: Literal["toolResult"] = "toolResult",
    ) -> None:
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self.content = [] if content is NEW_LIST else content
        self.details = details
        self.is_error = is_error
        self.timestamp = now_ms() if timestamp is NOW_MS else timestamp
        self.role = role

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.content if isinstance(c, TextContent))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "content": [c.to_dict() for c in self.content],
            "isError": self.is_error,
            "timestamp": self.timestamp,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


class CustomMessage(Record):
    """An extension's message that the model sees as user text (pi ``custom_message``)."""

    __slots__ = ("custom_type", "content", "display", "details", "timestamp", "role")
    custom_type: str
    content: str | list[UserContent]
    display: bool
    details: Any
    timestamp: int
    role: Literal["custom"]

    def __init__(
        self,
        custom_type: str,
        content: str | list[UserContent],
        display: bool = True,
        details: Any = None,
        timestamp: int = NOW_MS,
        role: Literal["custom"] = "custom",
    ) -> None:
        self.custom_type = custom_type
        self.content = content
        self.display = display
        self.details = details
        self.timestamp = now_ms() if timestamp is NOW_MS else timestamp
        self.role = role

    def to_dict(self) -> dict[str, Any]:
        content: Any = (
            self.content if isinstance(self.content, str) else [c.to_dict() for c in self.content]
        )
        out: dict[str, Any] = {
            "role": "custom",
            "customType": self.custom_type,
            "content": content,
            "display": self.display,
            "timestamp": self.timestamp,
        }
        if self.details is not None:
            out["details"] = self.details
        return out


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | CustomMessage


def content_from_dict(
    data: dict[str, Any],
) -> TextContent | ImageContent | ThinkingContent | ToolCall:
    """One content block from its JSON form; raises ValueError on an unknown type."""
    kind = data.get("type")
    if kind == "text":
        return TextContent(text=str(data.get("text", "")), text_signature=data.get("textSignature"))
    if kind == "image":
        return ImageContent(data=str(data.get("data", "")), mime_type=str(data.get("mimeType", "")))
    if kind == "thinking":
        return ThinkingContent(
            thinking=str(data.get("thinking", "")),
            thinking_signature=data.get("thinkingSignature"),
            redacted=bool(data.get("redacted", False)),
        )
    if kind == "toolCall":
        args = data.get("arguments")
        return ToolCall(
            id=str(data.get("id", "")),
            name=str(data.get("name", "")),
            arguments=args if isinstance(args, dict) else {},
            parse_error=data.get("parseError"),
        )
    raise ValueError(f"unknown content type {kind!r}")


def _user_content(raw: Any) -> str | list[UserContent]:
    if isinstance(raw, str):
        return raw
    if not isinstance(raw, list):
        raise ValueError("content must be a string or a list")
    out: list[UserContent] = []
    for item in raw:
        block = content_from_dict(item)
        if isinstance(block, TextContent | ImageContent):
            out.append(block)
    return out


def message_from_dict(data: dict[str, Any]) -> Message:
    """A message from its JSON form; raises ValueError when it is not one."""
    if not isinstance(data, dict):
        raise ValueError("a message must be a JSON object")
    role = data.get("role")
    ts = data.get("timestamp")
    timestamp = int(ts) if isinstance(ts, int | float) else now_ms()
    if role == "user":
        return UserMessage(content=_user_content(data.get("content", "")), timestamp=timestamp)
    if role == "assistant":
        blocks = data.get("content") or []
        if not isinstance(blocks, list):
            raise ValueError("assistant content must be a list")
        content: list[AssistantContent] = []
        for item in blocks:
            block = content_from_dict(item)
            if not isinstance(block, ImageContent):
                content.append(block)
        return AssistantMessage(
            content=content,
            api=str(data.get("api", "")),
            provider=str(data.get("provider", "")),
            model=str(data.get("model", "")),
            usage=Usage.from_dict(data.get("usage")),
            stop_reason=data.get("stopReason", "stop"),
            error_message=data.get("errorMessage"),
            context_overflow=bool(data.get("contextOverflow", False)),
            timestamp=timestamp,
        )
    if role == "toolResult":
        raw = data.get("content") or []
        result_content = _user_content(raw)
        return ToolResultMessage(
            tool_call_id=str(data.get("toolCallId", "")),
            tool_name=str(data.get("toolName", "")),
            content=[TextContent(result_content)]
            if isinstance(result_content, str)
            else result_content,
            details=data.get("details"),
            is_error=bool(data.get("isError", False)),
            timestamp=timestamp,
        )
    if role == "custom":
        return CustomMessage(
            custom_type=str(data.get("customType", "")),
            content=_user_content(data.get("content", "")),
            display=bool(data.get("display", True)),
            details=data.get("details"),
            timestamp=timestamp,
        )
    raise ValueError(f"unknown message role {role!r}")


def message_text(message: Message) -> str:
    """The plain text of a message (text blocks joined), for display and indexing."""
    if isinstance(message, AssistantMessage):
        return message.text
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(c.text for c in content if isinstance(c, TextContent))

"""Messages exchanged with a model, as records (pi-ai's shapes).

The JSON form (``to_dict`` / ``message_from_dict``) is the one pi writes into its
session files (camelCase keys), so sessions written by either tool open in the other.
The classes are msgspec ``Struct`` records.
"""

from __future__ import annotations

import time
from typing import Any, Literal, TypeAlias

from msgspec import Struct, field

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


class TextContent(Struct):
    text: str
    text_signature: str | None = None
    type: Literal["text"] = "text"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "text", "text": self.text}
        if self.text_signature is not None:
            out["textSignature"] = self.text_signature
        return out


class ImageContent(Struct):
    data: str  # base64
    mime_type: str
    type: Literal["image"] = "image"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "image", "data": self.data, "mimeType": self.mime_type}


class ThinkingContent(Struct):
    thinking: str
    thinking_signature: str | None = None
    redacted: bool = False
    type: Literal["thinking"] = "thinking"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "thinking", "thinking": self.thinking}
        if self.thinking_signature is not None:
            out["thinkingSignature"] = self.thinking_signature
        if self.redacted:
            out["redacted"] = True
        return out


class ToolCall(Struct):
    id: str
    name: str
    arguments: dict[str, Any]
    # Set when the model sent arguments that are not valid JSON; the loop turns such a
    # call into an error result the model can read instead of running the tool.
    parse_error: str | None = None
    type: Literal["toolCall"] = "toolCall"

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


class Cost(Struct, frozen=True):
    """Dollars spent, split like the usage counts."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0

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


# The cost of a reply that spent nothing (a model without prices, a local one), shared by
# all of them: a usage's cost is replaced, never changed in place.
NO_COST = Cost()


class Usage(Struct):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = NO_COST

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


class UserMessage(Struct):
    content: str | list[UserContent]
    timestamp: int = field(default_factory=now_ms)
    role: Literal["user"] = "user"

    def to_dict(self) -> dict[str, Any]:
        content: Any = (
            self.content if isinstance(self.content, str) else [c.to_dict() for c in self.content]
        )
        return {"role": "user", "content": content, "timestamp": self.timestamp}


class AssistantMessage(Struct):
    content: list[AssistantContent] = []
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    # True when the provider said the context did not fit (error text or usage past the
    # context window), so compaction can recover.
    context_overflow: bool = False
    timestamp: int = field(default_factory=now_ms)
    role: Literal["assistant"] = "assistant"

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


class ToolResultMessage(Struct):
    tool_call_id: str
    tool_name: str
    content: list[UserContent] = []
    details: Any = None
    is_error: bool = False
    timestamp: int = field(default_factory=now_ms)
    role: Literal["toolResult"] = "toolResult"

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


class CustomMessage(Struct):
    """An extension's message that the model sees as user text (pi ``custom_message``)."""

    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None
    timestamp: int = field(default_factory=now_ms)
    role: Literal["custom"] = "custom"

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

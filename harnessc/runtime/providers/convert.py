"""Harness history -> a message list every wire API accepts.

Shared by the providers before they map messages to their own JSON: failed or aborted
replies are left out, every tool call gets exactly one result right after its reply,
results without a call are dropped, custom messages become user messages.
"""

from __future__ import annotations

from harnessc.runtime.core.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)

__all__ = ["NO_RESULT_TEXT", "has_images", "image_placeholder", "user_parts", "wire_messages"]

NO_RESULT_TEXT = "No result provided"


def image_placeholder() -> TextContent:
    return TextContent("(image omitted: this model does not accept images)")


def _synthetic(call: ToolCall) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(NO_RESULT_TEXT)],
        is_error=True,
    )


def wire_messages(
    messages: list[Message],
) -> list[UserMessage | AssistantMessage | ToolResultMessage]:
    """The messages to send, in order, consistent about tool calls and results."""
    out: list[UserMessage | AssistantMessage | ToolResultMessage] = []
    # Calls of the last reply still without a result (a list: a model may repeat an id).
    pending: list[ToolCall] = []

    def close_pending() -> None:
        for call in pending:
            out.append(_synthetic(call))
        pending.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            for position, call in enumerate(pending):
                if call.id == message.tool_call_id:
                    del pending[position]
                    out.append(message)
                    break
            continue
        if isinstance(message, AssistantMessage):
            close_pending()
            if message.stop_reason in ("error", "aborted") or not message.content:
                continue
            out.append(message)
            pending.extend(message.tool_calls)
            continue
        close_pending()
        if isinstance(message, CustomMessage):
            content: str | list[UserContent] = message.content
            out.append(UserMessage(content=content, timestamp=message.timestamp))
        elif isinstance(message, UserMessage):
            out.append(message)
    close_pending()
    return out


def user_parts(content: str | list[UserContent]) -> list[UserContent]:
    """User content as a list of blocks."""
    if isinstance(content, str):
        return [TextContent(content)]
    return list(content)


def has_images(content: str | list[UserContent]) -> bool:
    return not isinstance(content, str) and any(isinstance(c, ImageContent) for c in content)

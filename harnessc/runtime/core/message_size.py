"""How big a message is for the model: characters, token estimates, reported usage."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from harnessc.runtime.core.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
)

__all__ = [
    "IMAGE_CHARS",
    "estimate_context_tokens",
    "estimate_tokens",
    "message_chars",
    "reported_tokens",
]

IMAGE_CHARS = 4800  # an image counts as about 1,200 tokens in estimates

# ``json.dumps(arguments, ensure_ascii=False, default=str)``, its encoder made once
# rather than at every call.
_ARGUMENTS = json.JSONEncoder(ensure_ascii=False, default=str)


def message_chars(message: Message) -> int:
    """Characters the model reads: text, thinking, tool calls as JSON, images 4800 each."""
    chars = 0
    if isinstance(message, AssistantMessage):
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(_ARGUMENTS.encode(block.arguments))
    elif isinstance(message.content, str):
        chars = len(message.content)
    else:
        for item in message.content:
            if isinstance(item, TextContent):
                chars += len(item.text)
            elif isinstance(item, ImageContent):
                chars += IMAGE_CHARS
    return chars


def estimate_tokens(message: Message) -> int:
    """A rough token count of one message: characters / 4, rounded up."""
    return math.ceil(message_chars(message) / 4)


def reported_tokens(message: AssistantMessage) -> int:
    """The context size a reply's usage reports (0 when it reports none)."""
    usage = message.usage
    return usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)


def estimate_context_tokens(
    messages: Sequence[Message], use_usage: bool = True, estimates: Sequence[int] | None = None
) -> int:
    """Context size: the last good reply's reported usage plus estimates of what came after.

    Without usable usage (or with ``use_usage=False``, e.g. when that usage was measured
    before a compaction), the sum of every message's estimate. ``estimates`` may hold
    the per-message estimates already computed (the harness keeps them incrementally).
    """

    def estimate(start: int) -> int:
        if estimates is not None:
            return sum(estimates[start:])
        return sum(estimate_tokens(m) for m in messages[start:])

    for i in range(len(messages) - 1, -1, -1) if use_usage else ():
        message = messages[i]
        if isinstance(message, AssistantMessage) and message.stop_reason not in (
            "error",
            "aborted",
        ):
            used = reported_tokens(message)
            if used > 0:
                return used + estimate(i + 1)
    return estimate(0)

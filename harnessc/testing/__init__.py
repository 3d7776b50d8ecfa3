"""Test helpers shipped with harnessc: a scripted local protocol server and SSE builders."""

from harnessc.testing.protocol_server import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import (
    AnthropicBlock,
    anthropic_event,
    anthropic_events,
    google_chunk,
    google_events,
    openai_chunk,
    openai_events,
    openai_tool_call_events,
    openai_usage,
    split_text,
    sse_data,
)

__all__ = [
    "AnthropicBlock",
    "ProtocolServer",
    "RecordedRequest",
    "ScriptedResponse",
    "anthropic_event",
    "anthropic_events",
    "google_chunk",
    "google_events",
    "openai_chunk",
    "openai_events",
    "openai_tool_call_events",
    "openai_usage",
    "sse_data",
    "split_text",
]

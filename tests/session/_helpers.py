"""Message builders and fixture paths shared by the session tests."""

from __future__ import annotations

from pathlib import Path

from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

FIXTURES = Path(__file__).parent / "fixtures"
PI_ROOT = FIXTURES / "pi"
PI_FILE = (
    PI_ROOT
    / "--home-dev-projects-tinycli--"
    / "2024-12-03T14-00-00-000Z_5f0c3a2e-8d1b-4c7e-9a65-2b7f4e1d9c08.jsonl"
)


def user(text: str) -> UserMessage:
    return UserMessage(text)


def reply(text: str, usage: int = 0) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text)],
        provider="test",
        model="m",
        usage=Usage(total_tokens=usage),
    )


def call(call_id: str, name: str = "read", **args: object) -> AssistantMessage:
    return AssistantMessage(
        content=[ToolCall(id=call_id, name=name, arguments=dict(args))],
        stop_reason="toolUse",
    )


def result(call_id: str, text: str, name: str = "read") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text)])

"""Helpers shared by the extension tests."""

from __future__ import annotations

from typing import Any

from harnessc.runtime import EventLog
from harnessc.runtime.tools.base import Tool, ToolResult, text_result

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


def echo_tool(name: str = "echo", seen: list[dict[str, Any]] | None = None) -> Tool:
    """A tool returning its ``text`` argument (and recording every call's arguments)."""

    async def run(
        call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any
    ) -> ToolResult:
        if seen is not None:
            seen.append(dict(params))
        return text_result(str(params.get("text", "")))

    return Tool(name, "Echo the text.", ECHO_SCHEMA, run)


def events_of(log: EventLog, kind: str) -> list[Any]:
    return [e for e in log if e.type == kind]


def notices(log: EventLog, source: str) -> list[str]:
    return [e.message for e in log if e.type == "notice" and e.source == source]


def errors(log: EventLog) -> list[str]:
    return [e.message for e in log if e.type == "error"]

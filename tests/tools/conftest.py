"""Helpers for the tool tests: run a tool once, read its text."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessc.runtime.core.messages import TextContent
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools.base import AgentTool, ToolResult


def call_tool(
    tool: AgentTool,
    params: dict[str, Any],
    context: Any = None,
    signal: AbortSignal | None = None,
    updates: list[ToolResult] | None = None,
) -> ToolResult:
    sink = updates if updates is not None else []
    return asyncio.run(
        tool.execute("call-1", params, signal or AbortSignal(), sink.append, context)
    )


def text_of(result: ToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


@pytest.fixture
def run_tool():
    """``run_tool(tool, params, context=None, signal=None, updates=None) -> ToolResult``."""
    return call_tool


@pytest.fixture
def txt():
    """``txt(result) -> str``: the text blocks of a result, joined."""
    return text_of


@pytest.fixture
def ws(tmp_path):
    """A workspace folder and a tool context confined to it."""
    root = tmp_path / "ws"
    root.mkdir()
    return root, {"workspace": str(root)}

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.tools.base import ExternalTool, Tool, ToolResult, text_result

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


async def _add(
    call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any
) -> ToolResult:
    return text_result(str(params["a"] + params["b"]))


def add_tool(**kw: Any) -> Tool:
    return Tool("add", "Add two integers.", ADD_SCHEMA, _add, **kw)


def sleep_tool(seconds: float = 5.0) -> Tool:
    async def run(
        call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any
    ) -> ToolResult:
        await asyncio.sleep(float(params.get("seconds", seconds)))
        return text_result("slept")

    return Tool(
        "sleep", "Sleep.", {"type": "object", "properties": {"seconds": {"type": "number"}}}, run
    )


def ask_tool() -> ExternalTool:
    return ExternalTool(
        "ask_user",
        "Ask the user.",
        {
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
    )


MakeHarness = Callable[..., tuple[AgentHarness, EventLog]]


@pytest.fixture
def make_harness() -> MakeHarness:
    def make(replies: Any, tools: Any = (), **options: Any) -> tuple[AgentHarness, EventLog]:
        provider = replies if isinstance(replies, ScriptedProvider) else ScriptedProvider(replies)
        harness = AgentHarness(
            AgentHarnessOptions(
                models={"main": Model(id="scripted-1", api="scripted", provider="test")},
                tools=list(tools),
                provider=provider,
                **options,
            )
        )
        log = EventLog()
        harness.subscribe(log)
        return harness, log

    return make


def types(
    log: EventLog, *, skip: tuple[str, ...] = ("message_update", "state_change")
) -> list[str]:
    return [e.type for e in log if e.type not in skip]


@pytest.fixture
def kit() -> Any:
    """Helpers for runtime tests (conftest modules are not importable by name)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        add_tool=add_tool,
        sleep_tool=sleep_tool,
        ask_tool=ask_tool,
        types=types,
        ADD_SCHEMA=ADD_SCHEMA,
    )

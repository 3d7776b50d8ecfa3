from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harnessc.runtime.core.messages import Message, UserMessage
from harnessc.runtime.core.options import (
    AgentHarnessStreamOptions,
    Model,
    RetryOptions,
    ThinkingLevel,
)
from harnessc.runtime.providers.base import (
    AssistantMessageEvent,
    Context,
    Provider,
    ProviderRequest,
    ToolSpec,
)
from harnessc.testing import ProtocolServer

API_KEY = "sk-test-SECRET-0123456789"

READ_TOOL = ToolSpec(
    "read",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@pytest.fixture(scope="module")
def server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_server(server: ProtocolServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.reset()
    monkeypatch.setenv("HARNESSC_TEST_KEY", API_KEY)


MakeRequest = Callable[..., ProviderRequest]
Collect = Callable[..., list[AssistantMessageEvent]]


@pytest.fixture
def make_request() -> MakeRequest:
    def make(
        model: Model,
        messages: list[Message] | None = None,
        *,
        system: str = "You are terse.",
        tools: list[ToolSpec] | None = None,
        thinking: ThinkingLevel = ThinkingLevel.OFF,
        max_retries: int | None = 2,
        retry_delay_ms: int = 1,
        **options: Any,
    ) -> ProviderRequest:
        return ProviderRequest(
            model=model,
            context=Context(
                system_prompt=system,
                messages=list(messages) if messages is not None else [UserMessage("hi")],
                tools=list(tools or []),
            ),
            stream_options=AgentHarnessStreamOptions(max_retries=max_retries, **options),
            thinking_level=thinking,
            retry=RetryOptions(base_delay_ms=retry_delay_ms, jitter=0.0),
        )

    return make


def check_well_formed(events: list[AssistantMessageEvent]) -> None:
    """The event-stream contract of providers/base.py."""
    assert events, "no events"
    assert events[0].type == "start"
    assert events[-1].type in ("done", "error")
    assert sum(e.type in ("done", "error") for e in events) == 1
    open_index: int | None = None
    open_kind = ""
    for event in events[1:-1]:
        kind, _, phase = event.type.partition("_")
        if phase == "start":
            assert open_index is None, f"{event.type} while block {open_index} is open"
            open_index, open_kind = event.content_index, kind
        elif phase == "delta":
            if kind == "toolcall" and event.content_index != open_index:
                continue  # a late fragment for an earlier tool call
            assert event.content_index == open_index and kind == open_kind, event.type
        elif phase == "end":
            assert event.content_index == open_index and kind == open_kind, event.type
            open_index = None
    partial = events[-1].partial
    if events[-1].type == "done":
        assert partial.stop_reason in ("stop", "length", "toolUse")
        assert open_index is None
    else:
        assert partial.stop_reason in ("error", "aborted")
        assert partial.error_message


@pytest.fixture
def collect() -> Collect:
    def run(provider: Provider, request: ProviderRequest) -> list[AssistantMessageEvent]:
        async def go() -> list[AssistantMessageEvent]:
            return [event async for event in provider.stream(request)]

        events = asyncio.run(go())
        check_well_formed(events)
        return events

    return run


def types(events: list[AssistantMessageEvent]) -> list[str]:
    return [e.type for e in events]


@pytest.fixture
def event_types() -> Callable[[list[AssistantMessageEvent]], list[str]]:
    return types

"""Model calls and tool executions as DBOS steps: run once, recorded, replayed.

``DurableProvider`` wraps the provider a harness would use: the whole streamed call is
one step whose output is the final assistant message (a replay never reaches the
server; the harness sees ``start`` and ``done`` events). ``DurableTool`` wraps a local
tool: one execution is one step (its result recorded; a replay never runs it again).
Both record the time they finished, which becomes the run clock. Events the harness
emitted since the previous step are written to the run's event stream by the next
step, so a replay writes none twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from harnessc.runtime.durable.session import RunClock
from harnessc.runtime.messages import AssistantMessage
from harnessc.runtime.providers.base import AssistantMessageEvent, Provider, ProviderRequest
from harnessc.runtime.session.session import iso_now
from harnessc.runtime.tools.base import AgentTool, ToolResult, ToolUpdate

__all__ = ["EVENT_STREAM", "DurableProvider", "DurableTool", "EventSink", "flush_events"]

EVENT_STREAM = "events"


class EventSink:
    """The harness's events since the last step, as JSON objects."""

    def __init__(self) -> None:
        self.pending: list[dict[str, Any]] = []

    def __call__(self, event: Any) -> None:
        self.pending.append(event.to_dict())

    def take(self) -> list[dict[str, Any]]:
        out, self.pending = self.pending, []
        return out


async def _write(events: list[dict[str, Any]]) -> None:
    """One stream value per step: the list of its events (one row, one commit)."""
    from dbos import DBOS

    if events:
        await DBOS.write_stream_async(EVENT_STREAM, events)


async def flush_events(sink: EventSink) -> None:
    """A step of its own that writes the pending events (before a wait or the end)."""
    from dbos import DBOS

    events = sink.take()
    if events:
        await DBOS.run_step_async({"name": "events", "retries_allowed": False}, _write, events)


async def _step(name: str, sink: EventSink, clock: RunClock, work: Callable[[], Any]) -> Any:
    from dbos import DBOS

    events = sink.take()

    async def body() -> tuple[Any, str]:
        await _write(events)
        return await work(), iso_now()

    value, finished = await DBOS.run_step_async({"name": name, "retries_allowed": False}, body)
    clock.tick(finished)
    return value


class DurableProvider:
    """``Provider`` whose every call is a checkpointed step."""

    def __init__(
        self,
        inner: Provider | None,
        resolve: Callable[[Any], Provider],
        sink: EventSink,
        clock: RunClock,
    ) -> None:
        self.inner = inner
        self.resolve = resolve  # model -> provider, when no provider overrides them all
        self.sink = sink
        self.clock = clock

    async def _call(self, request: ProviderRequest) -> tuple[str, AssistantMessage]:
        provider = self.inner or self.resolve(request.model)
        last: AssistantMessageEvent | None = None
        async for event in provider.stream(request):
            if event.type in ("done", "error"):
                last = event
        if last is None:
            raise RuntimeError("the provider's stream ended without a done or error event")
        return last.type, last.partial

    async def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        kind, message = await _step(
            "model_call", self.sink, self.clock, lambda: self._call(request)
        )
        yield AssistantMessageEvent("start", message)
        yield AssistantMessageEvent(kind, message)


class DurableTool:
    """A local tool whose every execution is a checkpointed step."""

    def __init__(self, inner: AgentTool, sink: EventSink, clock: RunClock) -> None:
        self.inner = inner
        self.name = inner.name
        self.label = inner.label
        self.description = inner.description
        self.parameters = inner.parameters
        self.execution_mode = inner.execution_mode
        self.external = inner.external
        self.sink = sink
        self.clock = clock

    def __getattr__(self, name: str) -> Any:  # anything else a tool carries
        return getattr(self.inner, name)

    async def execute(
        self,
        tool_call_id: str,
        params: dict[str, Any],
        signal: Any,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        async def run() -> ToolResult:
            return await self.inner.execute(tool_call_id, params, signal, on_update, context)

        result: ToolResult = await _step(f"tool:{self.name}", self.sink, self.clock, run)
        return result

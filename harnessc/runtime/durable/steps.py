"""Model calls and tool executions as DBOS steps: run once, recorded, replayed.

``DurableProvider`` wraps the provider a harness would use: the whole streamed call is
one step whose output is the final assistant message (a replay never reaches the
server; the harness sees ``start`` and ``done`` events). ``DurableTool`` wraps a tool
that runs in the run (local, MCP): one execution is one step (its result recorded; a
replay never runs it again). A tool with outside effects (any but the read-only ones)
is at most once: before it starts, the run records that it starts (``set_call_marker``,
one small write that also renews the worker's lease when it is due); an execution
that recovers the run and finds the call started but its step unrecorded does not run
it again, and the model gets an error result saying so.
Both record the time they finished, which becomes the run clock. The events the harness
emitted since the previous step are part of the next step's recorded output (no write
of their own), and those after the last step part of the run's output, so a replay
writes none twice and a follower reads them from the steps and the output.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from harnessc.runtime.core.messages import AssistantMessage, TextContent
from harnessc.runtime.durable.session import RunClock
from harnessc.runtime.providers.base import AssistantMessageEvent, Provider, ProviderRequest
from harnessc.runtime.session.session import iso_now
from harnessc.runtime.tools.base import (
    READ_ONLY_TOOLS,
    AgentTool,
    ToolResult,
    ToolUpdate,
    is_read_only,
)

__all__ = [
    "INTERRUPTED",
    "READ_ONLY_TOOLS",
    "DurableProvider",
    "DurableTool",
    "EventSink",
    "RemoteTaskSteps",
    "checkpoint_runner",
    "flush_events",
    "is_read_only",
    "output_events",
    "set_call_marker",
    "set_step_guard",
    "step_events",
]

EVENTS_STEP = "events"
CHECKPOINT_STEP = "checkpoint"  # a workspace checkpoint; records the events before it
# READ_ONLY_TOOLS, is_read_only (tools.base): a recovered run may simply run such a
# call again when its worker stopped while it ran.
INTERRUPTED = (
    "The worker running this durable run stopped while this call ran, before its result "
    "was recorded. The call was not run again: it may have done all, part or none of its "
    "work. Check its effects before you retry it."
)


class EventSink:
    """The harness's events since the last step, as JSON objects."""

    def __init__(self) -> None:
        self.pending: list[dict[str, Any]] = []

    def __call__(self, event: Any) -> None:
        self.pending.append(event.to_dict())

    def take(self) -> list[dict[str, Any]]:
        out, self.pending = self.pending, []
        return out


def step_events(name: str, output: Any) -> list[dict[str, Any]]:
    """The events a step of a run recorded (``DBOSClient.list_workflow_steps`` rows)."""
    if name == EVENTS_STEP and isinstance(output, list):
        return output
    carries = name in ("model_call", CHECKPOINT_STEP) or name.startswith(("tool:", "a2a:"))
    if carries and isinstance(output, list | tuple):
        if len(output) == 3 and isinstance(output[2], list):
            return output[2]
    return []


def output_events(output: Any) -> list[dict[str, Any]]:
    """The events a finished run recorded in its output (those after its last step)."""
    events = output.get("events") if isinstance(output, dict) else None
    return events if isinstance(events, list) else []


async def flush_events(sink: EventSink) -> None:
    """A step of its own that records the pending events (before a wait or the end)."""
    from dbos import DBOS

    events = sink.take()
    if events:
        await DBOS.run_step_async({"name": EVENTS_STEP, "retries_allowed": False}, lambda: events)


_GUARD: list[Callable[[], None]] = []


def set_step_guard(guard: Callable[[], None] | None) -> None:
    """``guard()`` runs before each step's work and before its result is recorded: the
    executing worker's lease check (it ends the process when the lease is lost)."""
    _GUARD[:] = [guard] if guard is not None else []


_MARKER: list[Callable[[str, str], Awaitable[bool]]] = []


def set_call_marker(marker: Callable[[str, str], bool | Awaitable[bool]] | None) -> None:
    """``marker(run_id, key)`` records that a call with outside effects starts and says
    whether it is the first to (False: an earlier execution of the run started it).
    A coroutine function is awaited on the run's event loop; a plain function runs in a
    thread. None: such calls run again on recovery, as read-only ones do."""
    if marker is None:
        _MARKER.clear()
    elif inspect.iscoroutinefunction(marker):
        _MARKER[:] = [marker]
    else:
        plain = marker

        async def in_thread(run_id: str, key: str) -> bool:
            return bool(await asyncio.to_thread(plain, run_id, key))

        _MARKER[:] = [in_thread]


async def _step(name: str, sink: EventSink, clock: RunClock, work: Callable[[], Any]) -> Any:
    from dbos import DBOS

    events = sink.take()

    async def body() -> tuple[Any, str, list[dict[str, Any]]]:
        for guard in _GUARD:
            guard()
        value = await work()
        for guard in _GUARD:
            guard()
        return value, iso_now(), events

    value, finished, _ = await DBOS.run_step_async({"name": name, "retries_allowed": False}, body)
    clock.tick(finished)
    return value


def checkpoint_runner(sink: EventSink, clock: RunClock) -> Callable[[Callable[[], Any]], Any]:
    """How a durable run takes a workspace checkpoint: as a step of its own, before the
    tool batch it guards, so a recovered run gets the recorded checkpoint back and never
    takes a second one (``agent.checkpoints.use_runner``)."""

    async def run(work: Callable[[], Any]) -> Any:
        return await _step(CHECKPOINT_STEP, sink, clock, lambda: asyncio.to_thread(work))

    return run


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
    """A tool (local, MCP) whose every execution is a checkpointed step."""

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
        clock = self.clock
        clock.tool_runs += 1
        key = f"{clock.tool_runs}:{tool_call_id}"  # the same in every execution of the run
        marker = _MARKER[0] if _MARKER and not is_read_only(self.inner) else None

        async def run() -> ToolResult:
            if marker is not None and not await marker(clock.run_id, key):
                content: list[Any] = [TextContent(INTERRUPTED)]
                return ToolResult(content, details={"interrupted": True}, is_error=True)
            return await self.inner.execute(tool_call_id, params, signal, on_update, context)

        result: ToolResult = await _step(f"tool:{self.name}", self.sink, self.clock, run)
        return result


class RemoteTaskSteps:
    """A send to a remote A2A agent as steps of the run (``remote_a2a.RemoteSteps``):
    ``a2a:sent`` (the task's ids; at most once, as a tool with outside effects is) and
    ``a2a:ended`` (the task's end)."""

    def __init__(self, sink: EventSink, clock: RunClock) -> None:
        self.sink = sink
        self.clock = clock

    async def sent(self, work: Callable[[], Any]) -> Any:
        clock = self.clock
        clock.tool_runs += 1
        key = f"{clock.tool_runs}:a2a"  # the same in every execution of the run
        marker = _MARKER[0] if _MARKER else None

        async def run() -> Any:
            if marker is not None and not await marker(clock.run_id, key):
                return None
            return await work()

        return await _step("a2a:sent", self.sink, clock, run)

    async def ended(self, work: Callable[[], Any]) -> Any:
        return await _step("a2a:ended", self.sink, self.clock, work)

"""The tool interface: ``execute(tool_call_id, params, signal, on_update, context)``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, runtime_checkable

from msgspec import Struct, field

from harnessc.runtime.core.messages import TextContent, UserContent
from harnessc.runtime.core.signal import AbortSignal

__all__ = [
    "READ_ONLY_TOOLS",
    "AgentTool",
    "ExecutionMode",
    "ExternalTool",
    "HoldCall",
    "Tool",
    "ToolExecute",
    "ToolResult",
    "ToolUpdate",
    "clean_result",
    "error_result",
    "is_read_only",
    "redacted",
    "text_result",
    "threaded",
]

# The built-in tools that only read. A tool whose ``read_only`` attribute is true only
# reads too: a recovered durable run runs such a call again, and no workspace
# checkpoint is taken for a batch of them.
READ_ONLY_TOOLS = frozenset({"read", "ls", "grep", "find"})


def is_read_only(tool: Any) -> bool:
    """A tool that only reads: a read-only built-in, or one whose ``read_only``
    attribute is true."""
    return tool.name in READ_ONLY_TOOLS or bool(getattr(tool, "read_only", False))


ExecutionMode = Literal["parallel", "sequential"]


class ToolResult(Struct):
    """What a tool returns: content for the model, details for programs."""

    content: list[UserContent] = []
    details: Any = None
    is_error: bool = False
    # When every result of a batch says terminate, the loop stops after the batch.
    terminate: bool = False


def redacted(result: ToolResult) -> ToolResult:
    """``result`` with the agent's own credentials taken out of its text (the value of
    every registered secret: ``support.secrets.redact``); the same object when none
    appears."""
    from harnessc.runtime.support.secrets import redact

    changed = False
    content: list[UserContent] = []
    for part in result.content:
        if isinstance(part, TextContent):
            text = redact(part.text)
            if text != part.text:
                part = TextContent(text, part.text_signature)
                changed = True
        content.append(part)
    details = result.details
    if details is not None:
        import json

        try:
            raw = json.dumps(details, ensure_ascii=False)
        except (TypeError, ValueError):
            raw = None
        if raw is not None and redact(raw) != raw:
            details = json.loads(redact(raw))
            changed = True
    if not changed:
        return result
    return ToolResult(content, details, result.is_error, result.terminate)


class HoldCall(Exception):  # noqa: N818 - a signal to the loop, not an error
    """Raised by a tool whose call cannot finish now (a sub-agent paused inside it).

    The loop holds the call as a hook's approval holds it: the run pauses with
    ``reason``, ``nested`` is recorded on the call (its ``pending`` list names the
    calls an answer is needed for, each a dict with ``call``, ``kind`` "approval" or
    "tool", and ``path``, the agent path), and the call is executed again when the
    run resumes, with the caller's answers in the call record's ``answers``.
    """

    def __init__(self, reason: str, nested: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.nested = dict(nested or {})


ToolUpdate = Callable[[ToolResult], None]
ToolExecute = Callable[[str, dict[str, Any], AbortSignal, ToolUpdate, Any], Awaitable[ToolResult]]


@runtime_checkable
class AgentTool(Protocol):
    """What the loop needs of a tool. ``Tool`` below is the ready-made implementation."""

    name: str
    label: str
    description: str
    parameters: dict[str, Any]
    execution_mode: ExecutionMode
    external: bool

    async def execute(
        self,
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult: ...


class Tool(Struct):
    """A tool made of a description, a JSON schema and an async execute function."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: ToolExecute
    label: str = ""
    execution_mode: ExecutionMode = "parallel"
    external: bool = False
    # Seconds one call may run before the loop ends it (None: the harness's
    # ``tool_timeout_s``).
    timeout_s: float | None = None
    # Only reads: a durable run whose worker stopped while it ran runs it again (a call
    # with outside effects is not run twice; see docs/durable.md).
    read_only: bool = False

    async def execute(
        self,
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        def update(partial: ToolResult) -> None:
            on_update(clean_result(partial))

        return clean_result(await self.run(tool_call_id, params, signal, update, context))


def clean_result(result: ToolResult) -> ToolResult:
    """``result`` with text and details safe to encode as UTF-8 (see ``clean.py``):
    a file name that is not UTF-8 never breaks the context or the session."""
    if not isinstance(result, ToolResult):
        return result
    from harnessc.runtime.tools.clean import clean_result_value, clean_text

    for block in result.content:
        if isinstance(block, TextContent) and isinstance(block.text, str):
            block.text = clean_text(block.text)
    if result.details is not None:
        result.details = clean_result_value(result.details)
    return result


def _no_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


class ExternalTool(Struct):
    """A tool whose result comes from the caller (a pull point): no local implementation."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=_no_parameters)
    label: str = ""
    execution_mode: ExecutionMode = "sequential"
    external: bool = True

    async def execute(
        self,
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        raise RuntimeError(f"tool {self.name!r} is external: its result comes from the caller")


def threaded(function: Callable[[dict[str, Any], Any], ToolResult]) -> ToolExecute:
    """An execute function running ``function(params, context)`` in a worker thread."""

    async def run(
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        return await asyncio.to_thread(function, params, context)

    return run


def text_result(text: str, details: Any = None) -> ToolResult:
    return ToolResult(content=[TextContent(text)], details=details)


def error_result(text: str, details: Any = None) -> ToolResult:
    return ToolResult(content=[TextContent(text)], details=details, is_error=True)

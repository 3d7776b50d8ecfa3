"""The harnessc runtime: everything a generated agent module imports at run time.

Stays light: the standard library; aiohttp on the first model request, and what a spec
uses (watchfiles when reloading, MCP, DBOS) only when it is used.

This module is also where a generated agent's entry points are put together:
``run_cli`` (and ``run_durable_cli`` for a spec with ``durable:``), the command line
with every door it opens. The terminal (``runtime.cli``) and the server
(``runtime.serve``) are doors side by side on the run-control layer and neither imports
the other: the agent's ``--serve`` flag reaches the server through ``serve_door``,
passed to the terminal here. Each door is imported when it is used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from harnessc.runtime.agent import AgentHarness, HarnessBusyError, RunResult
from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.event_log import EventLog
from harnessc.runtime.core.events import Event
from harnessc.runtime.core.hooks import FailRun, HookSpec, PauseRequest
from harnessc.runtime.core.loop_states import LoopState
from harnessc.runtime.core.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harnessc.runtime.core.options import (
    AgentHarnessStreamOptions,
    Model,
    ModelCost,
    QueueMode,
    RetryOptions,
    ThinkingLevel,
    ToolContextSource,
    env,
)
from harnessc.runtime.options.harness_options import AgentHarnessOptions
from harnessc.runtime.resources.types import AgentHarnessResources
from harnessc.runtime.session.session import Session
from harnessc.runtime.tools.base import ExternalTool, Tool, ToolResult

if TYPE_CHECKING:
    from harnessc.runtime.cli.args import CommandLine
    from harnessc.runtime.runs.agent import AgentSource

__all__ = [
    "AgentHarness",
    "AgentHarnessOptions",
    "AgentHarnessResources",
    "AgentHarnessStreamOptions",
    "AssistantMessage",
    "Budget",
    "Event",
    "EventLog",
    "ExternalTool",
    "HarnessBusyError",
    "FailRun",
    "HookSpec",
    "ImageContent",
    "LoopState",
    "Model",
    "ModelCost",
    "PauseRequest",
    "QueueMode",
    "RetryOptions",
    "RunResult",
    "Session",
    "TextContent",
    "ThinkingLevel",
    "Tool",
    "ToolCall",
    "ToolContextSource",
    "ToolResult",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "env",
    "run_cli",
    "run_durable_cli",
    "serve_door",
]


def serve_door(source: AgentSource, args: CommandLine, err: TextIO, prog: str) -> int:
    """``--serve``: the agent served over HTTP with the flags of its command line."""
    from harnessc.runtime.serve.launch import serve_agent

    return serve_agent(source, args, err, prog)


def run_cli(build_options: Callable[..., Any], argv: list[str] | None = None, **kwargs: Any) -> int:
    """The agent's command line (``runtime.cli.main.run_cli``), able to serve."""
    from harnessc.runtime.cli.main import run_cli as terminal

    kwargs.setdefault("serve", serve_door)
    return terminal(build_options, argv, **kwargs)


def run_durable_cli(
    build_options: Callable[..., Any], argv: Sequence[str] | None = None, **kwargs: Any
) -> int:
    """The command line of an agent with ``durable:`` (``runtime.cli.durable``), able to
    serve."""
    from harnessc.runtime.cli.durable import run_durable_cli as terminal

    kwargs.setdefault("serve", serve_door)
    return terminal(build_options, argv, **kwargs)

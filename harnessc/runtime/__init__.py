"""The harnessc runtime: everything a generated agent module imports at run time.

Stays light: the standard library; aiohttp on the first model request, and what a spec
uses (watchfiles when reloading, MCP, DBOS) only when it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    from harnessc.runtime.entry import run_cli, run_durable_cli

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
]


def __getattr__(name: str) -> Any:
    # run_cli pulls in the command line (argparse, terminal handling): load it on demand.
    if name in ("run_cli", "run_durable_cli"):
        from harnessc.runtime import entry

        return getattr(entry, name)
    raise AttributeError(f"module 'harnessc.runtime' has no attribute {name!r}")

"""``AgentHarnessOptions``: everything a harness is built from. A generated agent
module builds one field by field, so the wiring reads like hand-written code."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from harnessc.runtime.core.options import (
    DEFAULT_TOOL_TIMEOUT_S,
    AgentHarnessStreamOptions,
    Model,
    QueueMode,
    RetryOptions,
    ThinkingLevel,
    ToolContextSource,
)

if TYPE_CHECKING:
    from harnessc.runtime.core.budget import Budget
    from harnessc.runtime.core.checkpoint_settings import CheckpointSettings
    from harnessc.runtime.core.hooks import HookSpec
    from harnessc.runtime.core.run_inputs import RunInputs
    from harnessc.runtime.options.typed_output import OutputConfig
    from harnessc.runtime.providers.base import Provider
    from harnessc.runtime.providers.fallback import ModelFallback
    from harnessc.runtime.providers.transport import HttpClientPool
    from harnessc.runtime.resources.types import AgentHarnessResources
    from harnessc.runtime.sandbox.policy import SandboxPolicy
    from harnessc.runtime.session.session import Session
    from harnessc.runtime.tools.base import AgentTool

__all__ = ["AgentHarnessOptions"]


class AgentHarnessOptions(Struct):
    session: Session | None = None
    models: Mapping[str, Model] = {}
    tools: Sequence[AgentTool] = ()
    resources: AgentHarnessResources | None = None
    system_prompt: Any = None  # str, or callable(harness_context) -> str (may be async)
    stream_options: AgentHarnessStreamOptions | None = None
    retry: RetryOptions | None = None
    model: str | Model | None = None  # a key of ``models`` or a Model
    thinking_level: ThinkingLevel | None = None
    active_tool_names: Sequence[str] | None = None
    steering_mode: QueueMode | None = None
    follow_up_mode: QueueMode | None = None
    tool_context: ToolContextSource | None = None
    budget: Budget | None = None
    hooks: Sequence[HookSpec] = ()
    # Serves every model instead of the wire API's provider (scripted / replay runs).
    provider: Provider | None = None
    # Run tool batches one call at a time even when every tool allows parallel runs.
    sequential_tools: bool = False
    # Seconds one tool call may run before the loop ends it with an error result (a
    # tool's own ``timeout_s`` wins); None: no limit.
    tool_timeout_s: float | None = DEFAULT_TOOL_TIMEOUT_S
    # Extensions (hook providers such as compaction) built by the agent module.
    extensions: Sequence[Any] = ()
    # HTTP clients shared with other harnesses (one connection pool and one cap on
    # requests in flight per base URL); None: the harness opens and closes its own.
    http_clients: HttpClientPool | None = None
    # The clock of the wall-clock budget and the run ids (None: the live ones); a durable
    # run's come from its recorded steps.
    run_inputs: RunInputs | None = None
    # Models a failed request moves to (their keys, in order), and when.
    fallback: ModelFallback | None = None
    # The typed result (``output:``): RunResult.output holds the validated answer.
    output: OutputConfig | None = None
    # The boundary of every program the agent runs for the model (bash, command hooks,
    # stdio MCP servers); None: no sandbox (a hand-built harness; specs always say).
    sandbox: SandboxPolicy | None = None
    # Workspace checkpoints around tool batches that may change files (``checkpoints:``;
    # None: none are taken).
    checkpoints: CheckpointSettings | None = None

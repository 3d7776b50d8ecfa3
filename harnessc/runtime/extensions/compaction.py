"""compaction (also built as ``hook/before-step``): a pipeline of services before every model step.

On the ``context`` moment the step's messages run through the services in order, each
on the previous one's output:

1. ``prune_tool_results``: a tool result over ``prune_tool_result_bytes`` (UTF-8 text)
   is replaced by its head and tail (``prune_keep_bytes`` in all) around a notice. The
   results of the last ``prune_protect_steps`` tool batches are left whole (the model
   has not read them yet). Only the step's copy changes; the session keeps everything.
2. ``token_limit``: estimates the context at ``chars_per_token`` characters per token;
   below ``context_window * trigger_ratio`` the pipeline stops here.
3. ``summary``: the session's summary compaction (``harness.compact()``; it keeps
   ``keep_recent_tokens``), after which the step uses the compacted context (pruned
   again).

After an automatic summary attempt, the next one waits until the context has grown by
10 %; after a failure (reported as an error event), none is tried until the next run.
``/compact [instructions]`` runs the pipeline forced (no token limit) and replies
"nothing to compact" or "applied N service(s): ...".

The settings, the services and ``run_pipeline`` are in ``compaction_pipeline``
(re-exported here); this module is the extension that runs them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harnessc.runtime.core.events import ErrorEvent
from harnessc.runtime.core.hooks import ContextEvent, ContextResult
from harnessc.runtime.core.messages import Message
from harnessc.runtime.extensions.base import decode_config
from harnessc.runtime.extensions.compaction_pipeline import (
    NAME,
    REGROWTH,
    CompactionConfig,
    CompactionService,
    PipelineContext,
    PipelineReport,
    PruneToolResults,
    ServiceOutcome,
    SummaryCompaction,
    TokenLimitTrigger,
    estimate_chars,
    run_pipeline,
)
from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "CompactionConfig",
    "CompactionExtension",
    "CompactionService",
    "PipelineContext",
    "PipelineReport",
    "PruneToolResults",
    "ServiceOutcome",
    "SummaryCompaction",
    "TokenLimitTrigger",
    "estimate_chars",
]


class CompactionExtension:
    """Runs the pipeline on every ``context`` moment; contributes ``/compact``."""

    name = NAME

    def __init__(
        self,
        config: CompactionConfig | dict[str, Any] | None = None,
        *,
        services: Sequence[CompactionService] | None = None,
    ) -> None:
        self.config = decode_config(CompactionConfig, config, extension=NAME)
        self.services: list[CompactionService] = (
            list(services) if services is not None else self.default_services()
        )
        self._harness: HarnessContext | None = None
        self._retry_above: int | None = None  # tokens the context must exceed to retry
        self._failed = False

    @classmethod
    def from_config(cls, data: dict[str, Any] | None) -> CompactionExtension:
        return cls(data)

    def default_services(self) -> list[CompactionService]:
        c = self.config
        services: list[CompactionService] = []
        if c.prune_tool_result_bytes > 0:
            services.append(
                PruneToolResults(
                    c.prune_tool_result_bytes, c.prune_keep_bytes, c.prune_protect_steps
                )
            )
        services.append(TokenLimitTrigger(c.trigger_ratio, c.chars_per_token))
        services.append(SummaryCompaction())
        return services

    @property
    def command_names(self) -> tuple[str, ...]:
        return ("compact",) if self.config.contribute_commands else ()

    def install(self, harness: HarnessContext) -> None:
        from harnessc.runtime.compaction import CompactionSettings

        c = self.config
        self._harness = harness
        if c.enabled:
            harness.compaction_pipeline = self  # one trigger and one pipeline for the loop
        harness.compaction_settings = CompactionSettings(
            enabled=c.enabled,
            reserve_tokens=c.reserve_tokens,
            keep_recent_tokens=c.keep_recent_tokens,
        )
        if c.enabled:
            harness.on("agent_start", self._on_agent_start)
            harness.on("context", self._on_context)
        if c.contribute_commands:
            harness.commands.register(
                "compact",
                "compact the context now (optional: instructions for the summary)",
                self.compact_command,
                source=NAME,
            )

    def _on_agent_start(self, event: Any) -> None:
        self._failed = False

    def _services_for_step(self, messages: list[Message]) -> list[CompactionService]:
        """Leave the summary out after a failure, or until the context regrew."""
        if not self._failed and self._retry_above is None:
            return self.services
        tokens = math.ceil(estimate_chars(messages) / self.config.chars_per_token)
        if not self._failed and self._retry_above is not None and tokens > self._retry_above:
            self._retry_above = None
            return self.services
        return [s for s in self.services if not isinstance(s, SummaryCompaction)]

    async def _on_context(
        self, event: ContextEvent, harness: HarnessContext
    ) -> ContextResult | None:
        messages = list(event.messages)
        ctx = PipelineContext(harness=harness)
        try:
            report = await run_pipeline(self._services_for_step(messages), messages, ctx)
        except Exception as exc:
            self._failed = True
            await harness.emit(
                ErrorEvent(
                    source=f"extension:{NAME}",
                    message=f"compaction before the step failed (the step goes on uncompacted): "
                    f"{type(exc).__name__}: {exc}",
                )
            )
            return None
        if ctx.summary_attempted:
            after = math.ceil(estimate_chars(report.messages) / self.config.chars_per_token)
            self._retry_above = int(after * REGROWTH)
        if not report.changed:
            return None
        return ContextResult(messages=report.messages)

    async def recover(self, harness: HarnessContext) -> bool:
        """After a context overflow: every service, forced (the loop retries the step)."""
        ctx = PipelineContext(harness=harness, forced=True, reason="overflow")
        report = await run_pipeline(self.services, harness.messages, ctx)
        self._retry_above = None
        return report.changed

    async def compact_command(self, args: str = "") -> str:
        """``/compact [instructions]``: the pipeline, forced."""
        harness = self._harness
        if harness is None:
            return "compaction is not installed on a harness"
        ctx = PipelineContext(
            harness=harness,
            forced=True,
            reason="manual",
            custom_instructions=args.strip() or None,
        )
        try:
            report = await run_pipeline(self.services, harness.messages, ctx)
        except Exception as exc:
            return f"compaction failed: {type(exc).__name__}: {exc}"
        self._retry_above = None
        self._failed = False
        return report.describe()

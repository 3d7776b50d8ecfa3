"""The compaction extension's pipeline (``hook/before-step``): its settings, the
services a step's messages run through (``prune_tool_results``, ``token_limit``,
``summary``) and ``run_pipeline``. The extension that runs it on the ``context`` moment
is ``compaction.CompactionExtension``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import msgspec

from harnessc.runtime.core.message_size import message_chars
from harnessc.runtime.core.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
)
from harnessc.runtime.extensions.base import ExtensionConfigError, require_non_negative
from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "NAME",
    "REGROWTH",
    "CompactionConfig",
    "CompactionService",
    "PipelineContext",
    "PipelineReport",
    "PruneToolResults",
    "ServiceOutcome",
    "SummaryCompaction",
    "TokenLimitTrigger",
    "estimate_chars",
    "run_pipeline",
]

NAME = "compaction"
REGROWTH = 1.1  # an automatic summary is retried once the context grew by 10 %


@dataclass(slots=True)
class CompactionConfig:
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000
    prune_tool_result_bytes: int = 8192  # 0: no pruning
    prune_keep_bytes: int = 2048  # head + tail kept of a pruned result
    prune_protect_steps: int = 1  # newest tool batches never pruned
    trigger_ratio: float = 0.7
    chars_per_token: float = 4.0
    contribute_commands: bool = True  # register /compact

    def set_defaults(self) -> None:
        pass

    def validate(self) -> None:
        require_non_negative(
            self,
            (
                "reserve_tokens",
                "keep_recent_tokens",
                "prune_tool_result_bytes",
                "prune_keep_bytes",
                "prune_protect_steps",
            ),
            extension=NAME,
        )
        if not 0 < self.trigger_ratio <= 1:
            raise ExtensionConfigError(
                f"must be in (0, 1] (got {self.trigger_ratio})",
                extension=NAME,
                field="trigger_ratio",
            )
        if not self.chars_per_token > 0:
            raise ExtensionConfigError(
                f"must be positive (got {self.chars_per_token})",
                extension=NAME,
                field="chars_per_token",
            )
        if self.prune_tool_result_bytes and self.prune_keep_bytes >= self.prune_tool_result_bytes:
            raise ExtensionConfigError(
                f"must be smaller than prune_tool_result_bytes ({self.prune_tool_result_bytes}), "
                f"got {self.prune_keep_bytes}: a pruned result would not get shorter",
                extension=NAME,
                field="prune_keep_bytes",
            )


# -- the pipeline ------------------------------------------------------------------


@dataclass(slots=True)
class PipelineContext:
    harness: HarnessContext
    forced: bool = False
    reason: str = "threshold"  # passed to harness.compact: "threshold" | "manual"
    custom_instructions: str | None = None
    tokens: int = 0  # the token_limit service's estimate
    summary_attempted: bool = False


@dataclass(slots=True)
class ServiceOutcome:
    """What a service did. ``stop`` ends the pipeline; ``reloaded`` means the messages
    were rebuilt from the session (earlier transforms are applied again)."""

    messages: list[Message] | None = None
    description: str = ""
    stop: bool = False
    reloaded: bool = False


class CompactionService(Protocol):
    name: str
    reapply_after_reload: bool

    async def apply(self, messages: list[Message], ctx: PipelineContext) -> ServiceOutcome: ...


def estimate_chars(messages: Sequence[Message]) -> int:
    """Characters the model reads: text, thinking, tool calls as JSON, images 4800 each."""
    return sum(message_chars(m) for m in messages)


def _cut_utf8(data: bytes, start: int, end: int) -> str:
    return data[start:end].decode("utf-8", errors="ignore")


@dataclass(slots=True)
class PruneToolResults:
    max_bytes: int
    keep_bytes: int
    protect_steps: int = 1
    name: str = "prune_tool_results"
    reapply_after_reload: bool = True

    def prune_text(self, text: str) -> str:
        data = text.encode("utf-8")
        head = self.keep_bytes // 2
        tail = self.keep_bytes - head
        cut = len(data) - head - tail
        return (
            f"{_cut_utf8(data, 0, head)}\n\n[... tool result pruned: {cut} of {len(data)} bytes "
            f"cut to save context; run the tool again for the full output ...]\n\n"
            f"{_cut_utf8(data, len(data) - tail, len(data))}"
        )

    async def apply(self, messages: list[Message], ctx: PipelineContext) -> ServiceOutcome:
        protected_from = len(messages)
        seen = 0
        for index in range(len(messages) - 1, -1, -1):
            if seen >= self.protect_steps:
                break
            if isinstance(messages[index], AssistantMessage):
                seen += 1
                protected_from = index
        if self.protect_steps == 0:
            protected_from = len(messages)
        out = list(messages)
        pruned = 0
        for index, message in enumerate(messages[:protected_from]):
            if not isinstance(message, ToolResultMessage):
                continue
            text = "".join(c.text for c in message.content if isinstance(c, TextContent))
            if len(text.encode("utf-8")) <= self.max_bytes:
                continue
            others = [c for c in message.content if not isinstance(c, TextContent)]
            out[index] = msgspec.structs.replace(
                message, content=[TextContent(self.prune_text(text)), *others]
            )
            pruned += 1
        if not pruned:
            return ServiceOutcome()
        return ServiceOutcome(
            messages=out,
            description=f"pruned {pruned} tool result(s) over {self.max_bytes} bytes",
        )


@dataclass(slots=True)
class TokenLimitTrigger:
    ratio: float
    chars_per_token: float
    name: str = "token_limit"
    reapply_after_reload: bool = False

    def limit(self, harness: HarnessContext) -> int:
        return int(harness.model.context_window * self.ratio)

    async def apply(self, messages: list[Message], ctx: PipelineContext) -> ServiceOutcome:
        ctx.tokens = math.ceil(estimate_chars(messages) / self.chars_per_token)
        if ctx.forced:
            return ServiceOutcome()
        if ctx.tokens <= self.limit(ctx.harness):
            return ServiceOutcome(stop=True)
        return ServiceOutcome(
            description=f"context ~{ctx.tokens} tokens over {self.limit(ctx.harness)}"
        )


@dataclass(slots=True)
class SummaryCompaction:
    name: str = "summary"
    reapply_after_reload: bool = False

    async def apply(self, messages: list[Message], ctx: PipelineContext) -> ServiceOutcome:
        ctx.summary_attempted = True
        outcome = await ctx.harness.compact(ctx.custom_instructions, reason=ctx.reason)
        if not outcome:
            return ServiceOutcome()
        ctx.harness.reload_messages()
        before = getattr(outcome, "tokens_before", None)
        what = f"summarised the history (~{before} tokens before)" if before else "summarised"
        return ServiceOutcome(messages=ctx.harness.messages, description=what, reloaded=True)


@dataclass(slots=True)
class PipelineReport:
    messages: list[Message]
    applied: list[tuple[str, str]] = field(default_factory=list)  # (service, description)

    @property
    def changed(self) -> bool:
        return bool(self.applied)

    def describe(self) -> str:
        if not self.applied:
            return "nothing to compact"
        parts = ", ".join(f"{name} ({text})" if text else name for name, text in self.applied)
        return f"applied {len(self.applied)} service(s): {parts}"


async def run_pipeline(
    services: Sequence[CompactionService], messages: list[Message], ctx: PipelineContext
) -> PipelineReport:
    """Run ``services`` in order, each on the previous output."""
    report = PipelineReport(messages=list(messages))
    for index, service in enumerate(services):
        outcome = await service.apply(report.messages, ctx)
        if outcome.messages is not None:
            report.messages = list(outcome.messages)
            report.applied.append((service.name, outcome.description))
            if outcome.reloaded:
                for earlier in services[:index]:
                    if earlier.reapply_after_reload:
                        again = await earlier.apply(report.messages, ctx)
                        if again.messages is not None:
                            report.messages = list(again.messages)
        if outcome.stop:
            break
    return report


# -- the extension ---------------------------------------------------------------------

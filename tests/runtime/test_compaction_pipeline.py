"""One compaction trigger and one pipeline: with the compaction extension installed, its
pipeline (prune and custom services included) is what runs, before a step and after a
context overflow; the loop's own threshold check stays out of the way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.core.messages import AssistantMessage, Message, TextContent
from harnessc.runtime.extensions.compaction import (
    CompactionExtension,
    PipelineContext,
    ServiceOutcome,
)
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider


@dataclass
class Recorder:
    """A custom compaction service: records why it ran, changes nothing."""

    name: str = "recorder"
    reapply_after_reload: bool = False
    reasons: list[str] = field(default_factory=list)

    async def apply(self, messages: list[Message], ctx: PipelineContext) -> ServiceOutcome:
        self.reasons.append(ctx.reason if ctx.forced else "step")
        return ServiceOutcome(messages=list(messages), description="recorded")


def _harness(replies: list[Any], recorder: Recorder, window: int = 100_000) -> AgentHarness:
    return AgentHarness(
        AgentHarnessOptions(
            models={"m": Model(id="m", api="scripted", context_window=window)},
            provider=ScriptedProvider(replies),
            extensions=[CompactionExtension(services=[recorder])],
        )
    )


def test_a_context_overflow_runs_the_extension_pipeline() -> None:
    overflow = AssistantMessage(
        content=[], stop_reason="error", error_message="too long", context_overflow=True
    )
    recorder = Recorder()
    harness = _harness([overflow, "answer after recovery"], recorder)
    result = harness.prompt_sync("hello")
    assert result.status == "done" and result.text == "answer after recovery"
    assert recorder.reasons == ["step", "overflow", "step"]


def test_the_pipeline_owns_the_trigger() -> None:
    calls: list[str] = []

    def reply(context: Context) -> AssistantMessage:
        calls.append(context.system_prompt[:20])
        return AssistantMessage(content=[TextContent("short")])

    recorder = Recorder()
    # a tiny window: the loop's own threshold (window - reserve) would compact every step
    harness = _harness([], recorder, window=10)
    harness.options.provider = ScriptedProvider(reply)
    compactions: list[Any] = []
    harness.on("session_before_compact", lambda e: compactions.append(e))
    harness.prompt_sync("x" * 400)
    assert compactions == []  # only the pipeline decides, and its recorder compacts nothing
    assert recorder.reasons == ["step"]
    assert len(calls) == 1

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from harnessc.runtime.compaction import SUMMARY_SYSTEM_PROMPT
from harnessc.runtime.core.commands import DuplicateCommandError
from harnessc.runtime.core.messages import (
    AssistantMessage,
    CustomMessage,
    Message,
    ToolResultMessage,
    UserMessage,
    message_text,
)
from harnessc.runtime.extensions import (
    CompactionConfig,
    CompactionExtension,
    ExtensionConfigError,
)
from harnessc.runtime.extensions.compaction import (
    PipelineContext,
    PruneToolResults,
    ServiceOutcome,
    run_pipeline,
)
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.tools.base import Tool, ToolResult, text_result

from ._ext_support import errors, events_of


def big_tool(size: int) -> Tool:
    async def run(call_id: str, params: dict[str, Any], *rest: Any) -> ToolResult:
        return text_result(params.get("fill", "x") * size)

    schema = {"type": "object", "properties": {"fill": {"type": "string"}}}
    return Tool("big", "Return a lot of text.", schema, run)


class Script:
    """Replies in order; summary requests (the compaction prompt) get a fixed summary."""

    def __init__(self, replies: list[AssistantMessage]) -> None:
        self.replies = list(replies)
        self.summaries = 0
        self.contexts: list[Context] = []

    def __call__(self, context: Context) -> AssistantMessage:
        if context.system_prompt == SUMMARY_SYSTEM_PROMPT:
            self.summaries += 1
            return reply_text(f"SUMMARY-{self.summaries}")
        self.contexts.append(context)
        return self.replies.pop(0) if self.replies else reply_text("out of replies")


def _calls(n: int) -> list[AssistantMessage]:
    return [reply_tool_calls([("big", {"fill": chr(ord("a") + i)})]) for i in range(n)]


def test_prune_keeps_head_and_tail_and_protects_the_newest_batch(make_harness: Any) -> None:
    script = Script([*_calls(2), reply_text("done")])
    ext = CompactionExtension({"prune_tool_result_bytes": 1000, "prune_keep_bytes": 100})
    harness, _ = make_harness(ScriptedProvider(script), [big_tool(5000)], extensions=[ext])
    asyncio.run(harness.prompt("go"))
    second, third = script.contexts[1], script.contexts[2]
    # second call: the only result is the newest batch: whole
    assert [len(message_text(m)) for m in second.messages if isinstance(m, ToolResultMessage)] == [
        5000
    ]
    first_result, second_result = [m for m in third.messages if isinstance(m, ToolResultMessage)]
    text = message_text(first_result)
    assert text.startswith("a" * 50 + "\n\n[... tool result pruned: 4900 of 5000 bytes")
    assert text.endswith("]\n\n" + "a" * 50)
    assert message_text(second_result) == "b" * 5000
    # the session and the harness context keep everything
    kept = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert [len(message_text(m)) for m in kept] == [5000, 5000]


def test_prune_cuts_utf8_safely() -> None:
    prune = PruneToolResults(max_bytes=10, keep_bytes=5)
    text = prune.prune_text("é" * 20)
    assert text.startswith("é\n\n") and text.endswith("\n\né")


@dataclass
class Recorder:
    name: str
    log: list[tuple[str, int]]
    stop: bool = False
    reapply_after_reload: bool = False
    seen: list[int] = field(default_factory=list)

    async def apply(self, messages: list[Message], ctx: PipelineContext) -> ServiceOutcome:
        self.log.append((self.name, len(messages)))
        out = [*messages, UserMessage(self.name)]
        return ServiceOutcome(messages=out, description=f"added {self.name}", stop=self.stop)


def test_pipeline_runs_services_in_order_on_each_output() -> None:
    log: list[tuple[str, int]] = []
    services = [Recorder("a", log), Recorder("b", log, stop=True), Recorder("c", log)]
    report = asyncio.run(run_pipeline(services, [UserMessage("start")], PipelineContext(None)))
    assert log == [("a", 1), ("b", 2)]
    assert [m.content for m in report.messages] == ["start", "a", "b"]
    assert report.describe() == "applied 2 service(s): a (added a), b (added b)"


def test_pipeline_runs_before_every_step(make_harness: Any) -> None:
    log: list[tuple[str, int]] = []
    ext = CompactionExtension(services=[Recorder("a", log), Recorder("b", log)])
    provider = ScriptedProvider([reply_tool_calls([("big", {})]), reply_text("done")])
    harness, _ = make_harness(provider, [big_tool(10)], extensions=[ext])
    asyncio.run(harness.prompt("go"))
    assert log == [("a", 1), ("b", 2), ("a", 3), ("b", 4)]
    sent = provider.requests[1].context.messages
    assert [m.content for m in sent[-2:]] == ["a", "b"]  # the step used the output
    assert all(not isinstance(m, UserMessage) or m.content == "go" for m in harness.messages)


def _summary_harness(make_harness: Any, script: Script, **config: Any) -> tuple[Any, Any]:
    settings = {"keep_recent_tokens": 1200, "reserve_tokens": 100, **config}
    ext = CompactionExtension(settings)
    return make_harness(
        ScriptedProvider(script), [big_tool(4000)], context_window=3000, extensions=[ext]
    )


def test_token_limit_triggers_the_summary(make_harness: Any) -> None:
    # 3000-token window x 0.7 = 2100 tokens = 8400 chars: crossed by the third result,
    # so the fourth step runs on [summary, call 3, result 3]
    script = Script([*_calls(4), reply_text("done")])
    harness, log = _summary_harness(make_harness, script)
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert script.summaries == 1
    sizes = [len(c.messages) for c in script.contexts]
    assert sizes == [1, 3, 5, 3, 5]
    first = script.contexts[3].messages[0]
    assert isinstance(first, CustomMessage) and "SUMMARY-1" in message_text(first)
    assert len(events_of(log, "session_compact")) == 1
    assert any(e.type == "compaction" for e in harness.session.branch())
    assert "SUMMARY-1" in message_text(harness.messages[0])


def _small_steps_harness(make_harness: Any, compactor: Any, steps: int) -> tuple[Any, Any]:
    """A 1000-token prompt, then steps adding ~15 tokens each; only the extension's
    trigger (0.1 x 3000 = 300 tokens) is crossed, never the harness's own (2900)."""
    script = Script([*_calls(steps), reply_text("done")])
    ext = CompactionExtension({"reserve_tokens": 100, "trigger_ratio": 0.1})
    harness, log = make_harness(
        ScriptedProvider(script), [big_tool(40)], context_window=3000, extensions=[ext]
    )
    harness.compactor = compactor
    return harness, log


def test_summary_not_retried_until_the_context_regrows(make_harness: Any) -> None:
    calls: list[int] = []

    def compactor(harness: Any, **kwargs: Any) -> None:
        assert kwargs["reason"] == "threshold"
        calls.append(len(harness.messages))
        return None  # nothing to compact

    harness, _ = _small_steps_harness(make_harness, compactor, 12)
    asyncio.run(harness.prompt("x" * 4000))
    # tried at the first step (1000 tokens), again once past 1100 tokens (step 9)
    assert calls == [1, 17]


def test_summary_failure_is_reported_and_not_retried(make_harness: Any) -> None:
    calls: list[str] = []

    def compactor(harness: Any, **kwargs: Any) -> None:
        calls.append(kwargs["reason"])
        raise RuntimeError("provider down")

    harness, log = _small_steps_harness(make_harness, compactor, 12)
    result = asyncio.run(harness.prompt("x" * 4000))
    assert result.status == "done"
    assert calls == ["threshold"]
    assert sum("provider down" in m for m in errors(log)) == 1
    asyncio.run(harness.prompt("x" * 4000))  # a new run tries again
    assert calls == ["threshold", "threshold"]


def test_compact_command(make_harness: Any) -> None:
    script = Script([*_calls(2), reply_text("done")])
    harness, _ = _summary_harness(make_harness, script, trigger_ratio=1.0)
    reply = asyncio.run(harness.prompt("/compact")).reply
    assert reply == "nothing to compact"
    asyncio.run(harness.prompt("go"))
    assert script.summaries == 0
    reply = asyncio.run(harness.prompt("/compact")).reply
    assert reply is not None
    assert reply.startswith("applied 1 service(s): summary (summarised the history")
    assert script.summaries == 1
    assert "SUMMARY-1" in message_text(harness.messages[0])


def test_compact_command_reports_pruning_and_instructions(make_harness: Any) -> None:
    seen: list[Any] = []

    def compactor(harness: Any, **kwargs: Any) -> None:
        seen.append(kwargs)
        return None

    script = Script([*_calls(2), reply_text("done")])
    ext = CompactionExtension({"prune_tool_result_bytes": 1000, "prune_keep_bytes": 10})
    harness, _ = make_harness(ScriptedProvider(script), [big_tool(5000)], extensions=[ext])
    harness.compactor = compactor
    asyncio.run(harness.prompt("go"))
    reply = asyncio.run(harness.prompt("/compact keep the file names")).reply
    assert (
        reply
        == "applied 1 service(s): prune_tool_results (pruned 2 tool result(s) over 1000 bytes)"
    )
    assert seen == [{"custom_instructions": "keep the file names", "reason": "manual"}]


def test_compact_command_failure(make_harness: Any) -> None:
    def compactor(harness: Any, **kwargs: Any) -> None:
        raise RuntimeError("nope")

    harness, _ = make_harness([], [], extensions=[CompactionExtension()])
    harness.compactor = compactor
    reply = asyncio.run(harness.prompt("/compact")).reply
    assert reply == "compaction failed: RuntimeError: nope"


def test_settings_go_to_the_harness(make_harness: Any) -> None:
    ext = CompactionExtension(
        CompactionConfig(enabled=False, reserve_tokens=1, keep_recent_tokens=2)
    )
    harness, _ = make_harness([], [], extensions=[ext])
    settings = harness.compaction_settings
    assert (settings.enabled, settings.reserve_tokens, settings.keep_recent_tokens) == (False, 1, 2)
    assert not harness.has_handlers("context")
    assert "compact" in harness.commands


def test_duplicate_compact_command(make_harness: Any) -> None:
    with pytest.raises(DuplicateCommandError, match="/compact"):
        make_harness([], [], extensions=[CompactionExtension(), CompactionExtension()])
    harness, _ = make_harness(
        [],
        [],
        extensions=[CompactionExtension(), CompactionExtension({"contribute_commands": False})],
    )
    assert harness.commands.names().count("compact") == 1


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"trigger_ratio": 0}, "trigger_ratio"),
        ({"trigger_ratio": 1.5}, "trigger_ratio"),
        ({"prune_tool_result_bytes": 100, "prune_keep_bytes": 100}, "prune_keep_bytes"),
        ({"keep_recent_tokens": -1}, "keep_recent_tokens"),
        ({"chars_per_token": 0}, "chars_per_token"),
        ({"ratio": 0.5}, "ratio"),
        ({"enabled": "yes"}, "enabled"),
    ],
)
def test_config_errors(config: dict[str, Any], field: str) -> None:
    with pytest.raises(ExtensionConfigError) as info:
        CompactionExtension(config)
    assert info.value.field == field


def test_prune_can_be_switched_off() -> None:
    ext = CompactionExtension({"prune_tool_result_bytes": 0})
    assert [s.name for s in ext.services] == ["token_limit", "summary"]
    assert [s.name for s in CompactionExtension().services] == [
        "prune_tool_results",
        "token_limit",
        "summary",
    ]

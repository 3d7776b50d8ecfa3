from __future__ import annotations

import asyncio
from typing import Any

import pytest

from harnessc.runtime.core.messages import ToolResultMessage
from harnessc.runtime.extensions import ExtensionConfigError, TurnNudgeConfig, TurnNudgeExtension
from harnessc.runtime.extensions.turn_nudge import (
    DEFAULT_NUDGE_LIMIT_MESSAGE,
    DEFAULT_NUDGE_NOTICE,
    format_elapsed,
)
from harnessc.runtime.providers.scripted import reply_text, reply_tool_calls
from harnessc.runtime.tools.base import Tool, ToolResult, text_result

from ._ext_support import echo_tool


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _results(harness: Any) -> list[ToolResultMessage]:
    return [m for m in harness.messages if isinstance(m, ToolResultMessage)]


def _tails(harness: Any) -> list[str]:
    """The appended notice of each tool result ('' when none)."""
    out = []
    for message in _results(harness):
        texts = [c.text for c in message.content]
        out.append(texts[-1] if len(texts) > 1 else "")
    return out


def test_step_notices_and_limit(make_harness: Any) -> None:
    clock = FakeClock()
    config = TurnNudgeConfig(
        step_interval=2,
        step_limit=5,
        message="status: {steps} steps, {elapsed}",
        limit_message="limit: {steps} steps, {elapsed}. Wrap up.",
    )
    ext = TurnNudgeExtension(config, clock=clock)
    replies = [reply_tool_calls([("echo", {"text": str(i)})]) for i in range(1, 7)]
    replies.append(reply_text("done"))
    harness, _ = make_harness(replies, [echo_tool()], extensions=[ext])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert _tails(harness) == [
        "",
        "status: 2 steps, 0s",
        "",
        "status: 4 steps, 0s",
        "limit: 5 steps, 0s. Wrap up.",
        "limit: 6 steps, 0s. Wrap up.",
    ]


def test_parallel_batch_is_one_step_and_gets_one_notice(make_harness: Any) -> None:
    ext = TurnNudgeExtension({"step_interval": 2, "step_limit": 50}, clock=FakeClock())
    replies = [
        reply_tool_calls([("echo", {"text": "a"})]),
        reply_tool_calls([("echo", {"text": "b"}), ("echo", {"text": "c"})]),
        reply_tool_calls([("echo", {"text": "d"})]),
        reply_text("done"),
    ]
    harness, _ = make_harness(replies, [echo_tool()], extensions=[ext])
    asyncio.run(harness.prompt("go"))
    tails = _tails(harness)
    assert len(tails) == 4
    assert tails[0] == "" and tails[3] == ""
    assert sorted(tails[1:3]) == [
        "",
        DEFAULT_NUDGE_NOTICE.format(steps=2, elapsed="0s"),
    ]
    assert ext.state.notices == [2]


def test_time_notices_with_fake_clock(make_harness: Any) -> None:
    clock = FakeClock()

    async def slow(call_id: str, params: dict[str, Any], *rest: Any) -> ToolResult:
        clock.now += 4 * 60  # each call takes four minutes
        return text_result("ok")

    tool = Tool("slow", "Take a while.", {"type": "object", "properties": {}}, slow)
    ext = TurnNudgeExtension(
        {"time_interval_minutes": 10, "time_limit_minutes": 20, "step_interval": 1000},
        clock=clock,
    )
    replies = [reply_tool_calls([("slow", {})]) for _ in range(6)] + [reply_text("done")]
    harness, _ = make_harness(replies, [tool], extensions=[ext])
    asyncio.run(harness.prompt("go"))
    # elapsed at each result: 4, 8, 12, 16, 20, 24 minutes
    assert _tails(harness) == [
        "",
        "",
        DEFAULT_NUDGE_NOTICE.format(steps=3, elapsed="12m00s"),
        "",
        DEFAULT_NUDGE_LIMIT_MESSAGE.format(steps=5, elapsed="20m00s"),
        DEFAULT_NUDGE_LIMIT_MESSAGE.format(steps=6, elapsed="24m00s"),
    ]


def test_counters_reset_per_run_and_pause_time_is_not_counted(make_harness: Any) -> None:
    clock = FakeClock()
    ext = TurnNudgeExtension({"step_interval": 2}, clock=clock)
    replies = [
        reply_tool_calls([("echo", {"text": "1"})]),
        reply_text("one"),
        reply_tool_calls([("echo", {"text": "2"})]),
        reply_text("two"),
    ]
    harness, _ = make_harness(replies, [echo_tool()], extensions=[ext])
    asyncio.run(harness.prompt("first"))
    asyncio.run(harness.prompt("second"))
    assert _tails(harness) == ["", ""]  # step 1 of each run: no notice
    ext._on_pause(None)
    clock.now += 3600
    ext._on_resume(None)
    assert ext.elapsed() == 0  # the paused hour does not count


def test_notices_are_persisted_in_the_session(make_harness: Any) -> None:
    ext = TurnNudgeExtension({"step_interval": 1}, clock=FakeClock())
    replies = [reply_tool_calls([("echo", {"text": "x"})]), reply_text("done")]
    harness, _ = make_harness(replies, [echo_tool()], extensions=[ext])
    asyncio.run(harness.prompt("go"))
    stored = [
        e.message
        for e in harness.session.branch()
        if e.type == "message" and isinstance(e.message, ToolResultMessage)
    ]
    assert len(stored) == 1
    assert stored[0].content[-1].text == DEFAULT_NUDGE_NOTICE.format(steps=1, elapsed="0s")


def test_zero_keeps_defaults() -> None:
    ext = TurnNudgeExtension(
        {"stepInterval": 0, "time_interval_minutes": 0, "step_limit": 0, "notice": ""}
    )
    assert ext.config == TurnNudgeConfig()


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"step_interval": -1}, "step_interval"),
        ({"time_limit_minutes": -0.5}, "time_limit_minutes"),
        ({"notice": "{step} steps"}, "message"),  # notice: the alias of seed 003's message
        ({"limitMessage": "{steps} {"}, "limit_message"),
        ({"message": "x", "notice": "y"}, "notice"),  # one field given twice
        ({"step_limit": 1.5}, "step_limit"),
    ],
)
def test_config_errors(config: dict[str, Any], field: str) -> None:
    with pytest.raises(ExtensionConfigError) as info:
        TurnNudgeExtension(config)
    assert info.value.field == field


def test_format_elapsed() -> None:
    assert format_elapsed(0) == "0s"
    assert format_elapsed(59.9) == "59s"
    assert format_elapsed(605) == "10m05s"
    assert format_elapsed(3720) == "1h02m"

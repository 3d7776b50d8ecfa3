"""A hand-over's progress as its parent counts it (core/handovers.py): a pause says
``paused`` and the resumed sub-agent's counts start again."""

from __future__ import annotations

from harnessc.runtime.core.events import (
    AgentEndEvent,
    AgentPauseEvent,
    AgentResumeEvent,
    AgentStartEvent,
    Event,
    MessageEndEvent,
    SubagentEvent,
    TurnStartEvent,
)
from harnessc.runtime.core.handovers import HandoverTracker
from harnessc.runtime.core.messages import AssistantMessage, Usage


def test_a_paused_hand_over_says_so_and_counts_again_once_resumed() -> None:
    tracker = HandoverTracker()

    def see(inner: Event) -> tuple[int, int, int, str] | None:
        moved = tracker.see(SubagentEvent(agent_path=["lead", "a"], tool_call_id="h1", event=inner))
        if moved is None:
            return None
        return moved.turn, moved.input_tokens, moved.output_tokens, moved.status

    reply = AssistantMessage(content=[], usage=Usage(input=100, output=20, cache_read=30))
    assert see(AgentStartEvent(prompt="go")) == (0, 0, 0, "working")
    assert see(TurnStartEvent(turn=1)) == (1, 0, 0, "working")
    assert see(MessageEndEvent(message=reply)) == (1, 130, 20, "working")
    assert see(AgentPauseEvent()) == (1, 130, 20, "paused")
    assert tracker.working == {}
    assert see(TurnStartEvent(turn=2)) is None  # not working: nothing to move
    assert see(AgentResumeEvent()) == (0, 0, 0, "working")
    assert see(TurnStartEvent(turn=2)) == (1, 0, 0, "working")
    assert see(AgentEndEvent()) == (1, 0, 0, "ended")

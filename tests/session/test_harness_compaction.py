"""Compaction and tree moves end to end through AgentHarness with a scripted provider."""

from __future__ import annotations

import asyncio
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, EventLog, Model
from harnessc.runtime.agent.tree_moves import navigate_tree
from harnessc.runtime.compaction import (
    BRANCH_SUMMARY_SYSTEM_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    CompactionSettings,
)
from harnessc.runtime.core.hooks import SessionBeforeCompactResult
from harnessc.runtime.core.messages import AssistantMessage, CustomMessage, Usage
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.session.session import BRANCH_SUMMARY_PREFIX, COMPACTION_SUMMARY_PREFIX

WINDOW = 4000
SETTINGS = CompactionSettings(reserve_tokens=1000, keep_recent_tokens=250)


class Model_:
    """A scripted model: summaries for summary requests, numbered answers otherwise."""

    def __init__(self, overflow_at: int | None = None) -> None:
        self.requests: list[Context] = []
        self.answers = 0
        self.overflow_at = overflow_at

    def __call__(self, ctx: Context) -> AssistantMessage | str:
        self.requests.append(ctx)
        if ctx.system_prompt == SUMMARY_SYSTEM_PROMPT:
            return (
                f"SUMMARY #{sum(r.system_prompt == SUMMARY_SYSTEM_PROMPT for r in self.requests)}"
            )
        if ctx.system_prompt == BRANCH_SUMMARY_SYSTEM_PROMPT:
            return "BRANCH SUMMARY"
        self.answers += 1
        if self.overflow_at == self.answers:
            return AssistantMessage(
                stop_reason="error",
                error_message="prompt is too long: 5000 tokens > 4000 maximum",
                context_overflow=True,
            )
        # the context the model saw, as usage (so the threshold is crossed by real numbers)
        seen = sum(len(str(m.content)) for m in ctx.messages) // 4
        return reply_text(
            f"answer {self.answers} " + "a" * 400, usage=Usage(total_tokens=seen + 100)
        )

    def model_requests(self) -> list[Context]:
        return [r for r in self.requests if r.system_prompt != SUMMARY_SYSTEM_PROMPT]


def configure(harness: AgentHarness, settings: CompactionSettings) -> None:
    harness.compaction_settings = settings  # type: ignore[attr-defined]


def make(repo: JsonlSessionRepo, brain: Model_, **extra: Any) -> tuple[AgentHarness, EventLog]:
    harness = AgentHarness(
        AgentHarnessOptions(
            session=repo.create(cwd="/w"),
            models={"m": Model(id="s1", api="scripted", provider="t", context_window=WINDOW)},
            provider=ScriptedProvider(brain),
            **extra,
        )
    )
    configure(harness, SETTINGS)
    log = EventLog()
    harness.subscribe(log)
    return harness, log


def ask(harness: AgentHarness, n: int, size: int = 600) -> None:
    async def run() -> None:
        for i in range(n):
            result = await harness.prompt(f"question {i} " + "q" * size)
            assert result.status == "done", result.reason

    asyncio.run(run())


def test_threshold_triggers_compaction_before_the_next_call(repo: JsonlSessionRepo) -> None:
    brain = Model_()
    harness, log = make(repo, brain)
    ask(harness, 8, size=2000)  # about 600 tokens a turn: past 3000 after five turns
    compactions = [e for e in harness.session.entries() if e.type == "compaction"]
    assert compactions, "the context passed window - reserve and was compacted"
    first = compactions[0]
    # the cut point is a turn start kept verbatim after the summary
    kept = harness.session.get_entry(first.data["firstKeptEntryId"])
    assert kept is not None and kept.role == "user"
    assert first.data["tokensBefore"] > WINDOW - SETTINGS.reserve_tokens
    # the model call after the compaction saw the summary first, then the kept turn
    index = brain.requests.index(
        next(r for r in brain.requests if r.system_prompt == SUMMARY_SYSTEM_PROMPT)
    )
    after = brain.requests[index + 1]
    assert isinstance(after.messages[0], CustomMessage)
    assert str(after.messages[0].content).startswith(COMPACTION_SUMMARY_PREFIX)
    assert "SUMMARY #1" in str(after.messages[0].content)
    assert after.messages[1].content == kept.data["message"]["content"]
    # the harness context matches the session; events were emitted
    assert harness.messages == harness.session.context().messages
    events = [e for e in log if e.type == "session_compact"]
    assert len(events) == len(compactions) and events[0].compaction_entry["id"] == first.id
    # every model request stayed below the window thanks to compaction
    for request in brain.model_requests():
        assert sum(len(str(m.content)) for m in request.messages) // 4 < WINDOW


def test_manual_compact_and_hooks(repo: JsonlSessionRepo) -> None:
    brain = Model_()
    harness, log = make(repo, brain)
    configure(harness, CompactionSettings(enabled=False, keep_recent_tokens=250))
    ask(harness, 3)
    assert not [e for e in harness.session.entries() if e.type == "compaction"]  # auto is off

    seen: list[Any] = []
    harness.on(
        "session_before_compact",
        lambda e: seen.append(e) or SessionBeforeCompactResult(cancel=True),
    )
    assert asyncio.run(harness.compact()) is None
    assert seen and seen[0].preparation.first_kept_entry_id and seen[0].branch_entries

    harness2, _ = make(repo, Model_())
    ask(harness2, 3)
    harness2.on(
        "session_before_compact",
        lambda e: {"compaction": {"summary": "HOOK SUMMARY", "details": {"by": "hook"}}},
    )
    outcome = asyncio.run(harness2.compact("keep the numbers"))
    assert outcome is not None and outcome.from_hook and outcome.summary == "HOOK SUMMARY"
    assert outcome.entry.data["fromHook"] is True
    assert "HOOK SUMMARY" in str(harness2.messages[0].content)

    # forced compaction with the model
    brain3 = Model_()
    harness3, log3 = make(repo, brain3)
    configure(harness3, CompactionSettings(enabled=False, keep_recent_tokens=250))
    ask(harness3, 3)
    outcome = asyncio.run(harness3.compact("focus on numbers"))
    assert outcome is not None and outcome.summary.startswith("SUMMARY #1")
    summary_request = next(r for r in brain3.requests if r.system_prompt == SUMMARY_SYSTEM_PROMPT)
    assert "focus on numbers" in str(summary_request.messages[0].content)
    assert [e.type for e in log3][-1] == "session_compact"
    # nothing left to compact right after a compaction
    assert asyncio.run(harness3.compact()) is None


def test_context_overflow_compacts_and_retries_once(repo: JsonlSessionRepo) -> None:
    brain = Model_(overflow_at=3)
    harness, log = make(repo, brain)
    configure(harness, CompactionSettings(enabled=True, reserve_tokens=10, keep_recent_tokens=250))
    ask(harness, 3)  # the third answer overflows, is compacted, then retried
    kinds = [
        "summary" if r.system_prompt == SUMMARY_SYSTEM_PROMPT else "model" for r in brain.requests
    ]
    # the failed call, the summary request(s) (two when the cut splits a turn), the retry
    assert kinds[:3] == ["model"] * 3 and kinds[-1] == "model"
    assert set(kinds[3:-1]) == {"summary"}
    retry = brain.requests[-1]
    assert "SUMMARY #1" in str(retry.messages[0].content)
    final = harness.messages[-1]
    assert isinstance(final, AssistantMessage) and final.text.startswith("answer 4")
    compaction = next(e for e in harness.session.entries() if e.type == "compaction")
    assert compaction.data["summary"].startswith("SUMMARY #1")

    # a second overflow right after the retry is not retried again
    brain2 = Model_(overflow_at=1)
    harness2, _ = make(repo, brain2)
    result = asyncio.run(harness2.prompt("tiny"))
    assert result.status == "error"  # nothing to compact: the error stands


def test_navigate_tree_with_a_branch_summary(repo: JsonlSessionRepo) -> None:
    brain = Model_()
    harness, log = make(repo, brain)
    configure(harness, CompactionSettings(enabled=False))
    ask(harness, 2)
    first_answer = [e for e in harness.session.branch() if e.role == "assistant"][0]
    old_leaf = harness.session.leaf_id
    moved = asyncio.run(navigate_tree(harness, first_answer.id, summarize=True, label="retry"))
    assert moved.old_leaf_id == old_leaf and moved.summary_entry is not None
    assert moved.summary_entry.data["fromId"] == old_leaf
    assert harness.session.labels()[moved.summary_entry.id] == "retry"
    assert isinstance(harness.messages[-1], CustomMessage)
    assert str(harness.messages[-1].content).startswith(BRANCH_SUMMARY_PREFIX)
    assert "BRANCH SUMMARY" in str(harness.messages[-1].content)
    assert [e for e in log if e.type == "session_tree"][0].old_leaf_id == old_leaf
    ask(harness, 1)  # the conversation goes on from the earlier point
    texts = [str(m.content) for m in brain.model_requests()[-1].messages]
    assert not any("question 1" in t for t in texts)

    # a hook may cancel the move or supply the summary
    harness.on("session_before_tree", lambda e: {"cancel": True})
    leaf = harness.session.leaf_id
    assert asyncio.run(navigate_tree(harness, first_answer.id)).cancelled
    assert harness.session.leaf_id == leaf


def test_event_log_replay_follows_compaction_and_tree_moves(repo: JsonlSessionRepo) -> None:
    from harnessc.runtime.core.replay import replay_events

    harness, log = make(repo, Model_())
    ask(harness, 8, size=2000)
    assert [e for e in log if e.type == "session_compact"]
    assert replay_events(log.to_dicts()).messages == harness.snapshot()["messages"]
    first_answer = [e for e in harness.session.branch() if e.role == "assistant"][0]
    asyncio.run(navigate_tree(harness, first_answer.id))
    ask(harness, 1)
    replayed = replay_events(log.to_dicts())
    assert replayed.messages == harness.snapshot()["messages"]
    assert len(replayed.messages) == 4  # question 0, answer 1, then the new turn


SMALL_WINDOW_PROBE = """
import asyncio, sys
from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text

harness = AgentHarness(AgentHarnessOptions(
    models={"m": Model(id="s1", api="scripted", provider="t", context_window=8192)},
    provider=ScriptedProvider(lambda ctx: reply_text("hi")),
))

async def main():
    for _ in range(3):
        await harness.prompt("hello")

asyncio.run(main())
print(sorted(m for m in sys.modules if m.startswith("harnessc.runtime.compaction")))
"""


def test_a_window_below_the_reserve_does_not_start_a_compaction_at_every_turn() -> None:
    """8,192 tokens against the default reserve of 16,384: the threshold is passed at
    every turn, but the context is far below what the summary keeps, so no compaction
    starts (its modules stay unloaded) and none is recorded."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", SMALL_WINDOW_PROBE], capture_output=True, text=True, check=True
    )
    loaded = done.stdout.strip().splitlines()[-1]
    assert loaded == "['harnessc.runtime.compaction', 'harnessc.runtime.compaction.trigger']"


def test_the_threshold_still_compacts_a_context_past_what_the_summary_keeps(
    tmp_path: Any,
) -> None:
    brain = Model_()
    harness, log = make(JsonlSessionRepo(str(tmp_path)), brain)
    configure(harness, CompactionSettings(reserve_tokens=WINDOW + 1, keep_recent_tokens=250))
    ask(harness, 3)
    assert [e.type for e in log.events].count("session_compact") >= 1

"""Compaction units: estimates, trigger, cut point, turn prefix, prompts, compact()."""

from __future__ import annotations

import asyncio

import pytest

from harnessc.runtime.compaction import (
    BRANCH_SUMMARY_SYSTEM_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    CompactionError,
    CompactionSettings,
    NothingToCompactError,
    apply_compaction,
    build_summary_prompt,
    compact,
    estimate_context_tokens,
    estimate_tokens,
    generate_branch_summary,
    prepare_branch_summary,
    prepare_compaction,
    serialize_conversation,
    should_compact,
)
from harnessc.runtime.core.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harnessc.runtime.core.options import Model
from harnessc.runtime.providers.base import Context
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.session import Session
from harnessc.runtime.session.session import COMPACTION_SUMMARY_PREFIX

from ._helpers import call, reply, result, user

MODEL = Model(id="summariser", api="scripted", provider="test", context_window=50_000)


def settings(keep: int) -> CompactionSettings:
    return CompactionSettings(reserve_tokens=1000, keep_recent_tokens=keep)


def test_estimate_tokens_is_chars_over_four() -> None:
    assert estimate_tokens(UserMessage("x" * 400)) == 100
    assert estimate_tokens(UserMessage("x" * 401)) == 101
    assert (
        estimate_tokens(UserMessage([TextContent("abcd"), ImageContent("..", "image/png")])) == 1201
    )
    assistant = AssistantMessage(
        content=[
            TextContent("x" * 40),
            ThinkingContent("y" * 40),
            ToolCall("c1", "read", {"path": "a.py"}),
        ]
    )
    assert estimate_tokens(assistant) == (40 + 40 + 4 + len('{"path": "a.py"}') + 3) // 4
    assert estimate_tokens(result("c1", "z" * 80)) == 20
    assert estimate_tokens(CustomMessage("note", "w" * 8)) == 2


def test_context_tokens_use_the_last_usage() -> None:
    msgs = [user("x" * 400), reply("y" * 400, usage=5000), user("z" * 400)]
    assert estimate_context_tokens(msgs) == 5000 + 100
    assert estimate_context_tokens(msgs, use_usage=False) == 300
    failed = AssistantMessage(stop_reason="error", usage=Usage(total_tokens=99999))
    assert estimate_context_tokens([user("x" * 400), failed]) == 100


def test_should_compact_threshold() -> None:
    s = CompactionSettings()
    assert (s.enabled, s.reserve_tokens, s.keep_recent_tokens) == (True, 16384, 20000)
    assert not should_compact(128_000 - 16384, 128_000, s)
    assert should_compact(128_000 - 16383, 128_000, s)
    assert not should_compact(10**9, 128_000, CompactionSettings(enabled=False))


def tool_heavy_session() -> Session:
    """Turns with several tool calls each; every message is about 100 tokens."""
    s = Session()
    big = "x" * 400
    for turn in range(6):
        s.append_message(user(f"turn {turn} " + big))
        for k in range(3):
            cid = f"c{turn}{k}"
            s.append_message(
                AssistantMessage(
                    content=[TextContent(big), ToolCall(cid, "read", {"path": f"f{turn}{k}.py"})],
                    stop_reason="toolUse",
                )
            )
            s.append_message(result(cid, big))
        s.append_message(reply("done " + big))
    return s


def test_cut_point_never_separates_a_tool_call_from_its_result() -> None:
    s = tool_heavy_session()
    seen_split = seen_whole = False
    for keep in range(50, 3000, 37):
        prep = prepare_compaction(s, settings(keep))
        assert prep is not None
        first = s.get_entry(prep.first_kept_entry_id)
        assert first is not None and first.role != "toolResult"
        kept = s.branch()
        kept = kept[[e.id for e in kept].index(prep.first_kept_entry_id) :]
        calls = set()
        for entry in kept:
            message = entry.message
            if isinstance(message, AssistantMessage):
                calls.update(c.id for c in message.tool_calls)
            if isinstance(message, ToolResultMessage):
                assert message.tool_call_id in calls  # its call is kept too
        summarised = [*prep.messages_to_summarize, *prep.turn_prefix_messages]
        assert len(summarised) + sum(1 for e in kept if e.message) == len(s.context().messages)
        if prep.is_split_turn:
            seen_split = True
            assert isinstance(prep.turn_prefix_messages[0], UserMessage)
            assert first.role == "assistant"
        else:
            seen_whole = True
            assert first.role == "user"
    assert seen_split and seen_whole


def test_split_turn_gets_a_prefix() -> None:
    s = Session()
    s.append_message(user("old question"))
    s.append_message(reply("old answer"))
    start = s.append_message(user("do the big thing"))
    s.append_message(call("c1", path="a.py"))
    s.append_message(result("c1", "a" * 4000))
    s.append_message(call("c2", path="b.py"))
    s.append_message(result("c2", "b" * 4000))
    cut = s.append_message(call("c3", path="c.py"))
    s.append_message(result("c3", "c" * 400))
    prep = prepare_compaction(s, settings(150))
    assert prep is not None
    assert prep.first_kept_entry_id == cut.id and prep.is_split_turn
    assert [m.role for m in prep.messages_to_summarize] == ["user", "assistant"]
    assert [m.role for m in prep.turn_prefix_messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
    ]
    assert prep.turn_prefix_messages[0].content == "do the big thing"
    assert start.id != prep.first_kept_entry_id
    assert prep.file_ops.read_files() == ["a.py", "b.py"]


def test_nothing_to_compact() -> None:
    s = Session()
    assert prepare_compaction(s) is None
    s.append_message(user("short"))
    s.append_message(reply("short"))
    assert prepare_compaction(s, settings(1000)) is None
    first = s.branch()[0]
    s.append_compaction("S", first.id, 10)
    assert prepare_compaction(s, settings(1)) is None  # ends with a compaction
    with pytest.raises(NothingToCompactError):
        asyncio.run(compact(s, MODEL, ScriptedProvider([]), settings(1)))


def test_serialize_conversation() -> None:
    text = serialize_conversation(
        [
            user("hello"),
            AssistantMessage(
                content=[
                    ThinkingContent("hmm"),
                    TextContent("let me look"),
                    ToolCall("c1", "read", {"path": "a.py", "limit": 5}),
                    ToolCall("c2", "bash", {"command": "ls"}),
                ]
            ),
            result("c1", "r" * 2500),
            CustomMessage("note", "remember X"),
        ]
    )
    assert text.split("\n\n")[:4] == [
        "[User]: hello",
        "[Assistant thinking]: hmm",
        "[Assistant]: let me look",
        '[Assistant tool calls]: read(path="a.py", limit=5); bash(command="ls")',
    ]
    assert "[Tool result]: " + "r" * 2000 + "\n[... 500 more characters cut]" in text
    assert text.endswith("[User]: remember X")


def test_summary_prompt() -> None:
    assert "Do not" in SUMMARY_SYSTEM_PROMPT and "continue" in SUMMARY_SYSTEM_PROMPT
    prompt = build_summary_prompt([user("hi")], custom_instructions="focus on tests")
    assert prompt.startswith("<conversation>\n[User]: hi\n</conversation>")
    for section in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert section in prompt
    assert "<previous-summary>" not in prompt and "focus on tests" in prompt
    updated = build_summary_prompt([user("hi")], previous_summary="OLD")
    assert "<previous-summary>\nOLD\n</previous-summary>" in updated


def scripted(*replies: str) -> ScriptedProvider:
    return ScriptedProvider(list(replies))


def test_compact_appends_the_entry_and_files() -> None:
    s = Session()
    s.append_message(user("read and fix " + "x" * 400))
    s.append_message(
        AssistantMessage(
            content=[
                ToolCall("c1", "read", {"path": "src/a.py"}),
                ToolCall("c2", "read", {"path": "src/b.py"}),
            ],
            stop_reason="toolUse",
        )
    )
    s.append_message(result("c1", "a" * 400))
    s.append_message(result("c2", "b" * 400))
    s.append_message(call("c3", "edit", path="src/b.py"))
    s.append_message(result("c3", "ok", name="edit"))
    s.append_message(reply("fixed " + "y" * 400, usage=3000))
    kept = s.append_message(user("now the docs " + "z" * 400))
    s.append_message(reply("done " + "w" * 400))
    provider = scripted("## Goal\nFix b.py")
    out = asyncio.run(compact(s, MODEL, provider, settings(200)))
    (request,) = provider.requests
    assert request.context.system_prompt == SUMMARY_SYSTEM_PROMPT
    prompt = request.context.messages[0].content[0].text  # type: ignore[index, union-attr]
    assert "[User]: read and fix" in prompt and "now the docs" not in prompt
    assert request.model.max_tokens == 800  # 0.8 x reserve
    assert out.first_kept_entry_id == kept.id and out.entry is not None
    assert out.summary.startswith("## Goal\nFix b.py")
    assert "<read-files>\nsrc/a.py\n</read-files>" in out.summary
    assert "<modified-files>\nsrc/b.py\n</modified-files>" in out.summary
    assert out.details == {"readFiles": ["src/a.py"], "modifiedFiles": ["src/b.py"]}
    # the last usage plus estimates of the two messages after it
    assert out.tokens_before == 3000 + (413 + 3) // 4 + (405 + 3) // 4
    assert s.leaf is out.entry and out.entry.data["tokensBefore"] == out.tokens_before
    ctx = s.context()
    assert str(ctx.messages[0].content).startswith(COMPACTION_SUMMARY_PREFIX)
    assert [m.role for m in ctx.messages] == ["custom", "user", "assistant"]

    # a second compaction updates the first summary and carries its file lists
    s.append_message(user("more " + "q" * 400))
    s.append_message(call("c4", "write", path="docs/x.md"))
    s.append_message(result("c4", "ok", name="write"))
    s.append_message(reply("written " + "v" * 400))
    provider2 = scripted("## Goal\nFix b.py, then docs", "wrote the docs")
    out2 = asyncio.run(compact(s, MODEL, provider2, settings(50)))  # cuts inside the turn
    prompt2 = provider2.requests[0].context.messages[0].content[0].text  # type: ignore[index, union-attr]
    assert "<previous-summary>\n## Goal\nFix b.py" in prompt2
    assert "[User]: now the docs" in prompt2  # kept before, summarised now
    assert out2.details == {"readFiles": ["src/a.py"], "modifiedFiles": ["docs/x.md", "src/b.py"]}
    assert s.context().messages[0].content.count("<summary>") == 1  # type: ignore[union-attr]


def test_compact_with_a_split_turn_asks_twice() -> None:
    s = Session()
    s.append_message(user("earlier " + "e" * 800))
    s.append_message(reply("ok " + "e" * 800))
    s.append_message(user("big task"))
    for i in range(4):
        s.append_message(call(f"c{i}", path=f"{i}.py"))
        s.append_message(result(f"c{i}", "r" * 1200))
    seen: list[Context] = []

    def answer(ctx: Context) -> str:
        seen.append(ctx)
        text = ctx.messages[0].content[0].text  # type: ignore[index, union-attr]
        return "PREFIX" if "first part of a turn" in text else "HISTORY"

    out = asyncio.run(compact(s, MODEL, ScriptedProvider(answer), settings(400)))
    assert len(seen) == 2
    assert out.summary.startswith("HISTORY\n\n---\n\n")
    assert "PREFIX" in out.summary and "big task" not in out.summary
    first = s.get_entry(out.first_kept_entry_id)
    assert first is not None and first.role == "assistant"


def test_failed_summary_leaves_the_session_unchanged() -> None:
    s = tool_heavy_session()
    before = len(s.entries())
    bad = AssistantMessage(stop_reason="error", error_message="rate limited")
    with pytest.raises(CompactionError, match="rate limited"):
        asyncio.run(compact(s, MODEL, ScriptedProvider([bad]), settings(300)))
    with pytest.raises(CompactionError, match="empty"):
        asyncio.run(compact(s, MODEL, ScriptedProvider(["   "]), settings(300)))
    assert len(s.entries()) == before


def test_apply_a_compaction_supplied_by_a_hook() -> None:
    s = tool_heavy_session()
    prep = prepare_compaction(s, settings(300))
    assert prep is not None
    out = apply_compaction(s, {"summary": "from the hook"}, prep, from_hook=True)
    assert out.entry is not None and out.entry.data["fromHook"] is True
    assert out.first_kept_entry_id == prep.first_kept_entry_id
    assert out.tokens_before == prep.tokens_before
    with pytest.raises(CompactionError):
        apply_compaction(s, {"summary": ""}, prep)
    with pytest.raises(CompactionError):
        apply_compaction(s, {"summary": "x", "firstKeptEntryId": "nothere0"})


def test_branch_summary() -> None:
    s = Session()
    root = s.append_message(user("start"))
    fork_point = s.append_message(reply("ok"))
    s.append_message(user("try plan A"))
    s.append_message(call("c1", "edit", path="a.py"))
    s.append_message(result("c1", "edited", name="edit"))
    s.append_message(reply("plan A failed"))
    prep = prepare_branch_summary(s, fork_point.id)
    assert prep.common_ancestor_id == fork_point.id
    assert [m.role for m in prep.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert prepare_branch_summary(s, root.id).common_ancestor_id == root.id
    provider = scripted("## Goal\nPlan A did not work")
    out = asyncio.run(generate_branch_summary(s, fork_point.id, MODEL, provider))
    assert out is not None and out.from_id == s.leaf_id
    assert provider.requests[0].context.system_prompt == BRANCH_SUMMARY_SYSTEM_PROMPT
    assert "<modified-files>\na.py\n</modified-files>" in out.summary
    entry = s.move_to(fork_point.id, out.summary, out.details)
    assert entry is not None and entry.parent_id == fork_point.id
    assert "Plan A did not work" in str(s.context().messages[-1].content)
    # nothing left behind: no summary
    assert asyncio.run(generate_branch_summary(s, s.leaf_id, MODEL, scripted())) is None

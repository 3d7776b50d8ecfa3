from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.core.messages import ToolResultMessage, UserMessage
from harnessc.runtime.extensions import command_hook
from harnessc.runtime.extensions.command_hooks import MAX_OUTPUT_BYTES, run_hook_command
from harnessc.runtime.extensions.protocol import HookTimeoutError
from harnessc.runtime.providers.scripted import reply_text, reply_tool_calls
from tests.timing import scaled

from ._ext_support import echo_tool, errors, events_of, notices


def _one_call(text: str = "hello") -> list[Any]:
    return [reply_tool_calls([("echo", {"text": text})]), reply_text("done")]


def _result(harness: Any) -> ToolResultMessage:
    results = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1
    return results[0]


def test_allow_exit_zero_and_event_json(make_harness: Any, script: Any, tmp_path: Path) -> None:
    saved = tmp_path / "event.json"
    hook = command_hook("tool_call", script("allow.sh", f"cat > {saved}\nexit 0\n"))
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert seen == [{"text": "hello"}]
    assert _result(harness).text == "hello"
    event = json.loads(saved.read_text())
    assert event["hook_event_name"] == "PreToolUse"
    assert event["permission_mode"] == "bypassPermissions"
    assert event["harnessc"]["moment"] == "tool_call"
    assert event["session_id"] == harness.session.id
    assert event["cwd"]
    assert event["tool_name"] == "echo"
    assert event["tool_input"] == {"text": "hello"}
    assert event["tool_use_id"] == _result(harness).tool_call_id
    assert errors(log) == []


def test_block_with_exit_two(make_harness: Any, script: Any) -> None:
    hook = command_hook("tool_call", script("block.sh", "echo 'not allowed here' >&2\nexit 2\n"))
    seen: list[dict[str, Any]] = []
    harness, _ = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == []
    result = _result(harness)
    assert result.is_error
    assert result.text == "Tool call blocked: not allowed here"


def test_json_decision_with_modified_input(make_harness: Any, script: Any) -> None:
    decision = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"text": "rewritten"},
        }
    }
    body = f"cat > /dev/null\necho '{json.dumps(decision)}'\n"
    hook = command_hook("tool_call", script("rewrite.sh", body))
    seen: list[dict[str, Any]] = []
    harness, _ = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == [{"text": "rewritten"}]
    assert _result(harness).text == "rewritten"


@pytest.mark.parametrize(
    "decision",
    [
        {"decision": "block", "reason": "policy says no"},
        {
            "hookSpecificOutput": {
                "permissionDecision": "deny",
                "permissionDecisionReason": "policy says no",
            }
        },
    ],
)
def test_json_deny_forms(make_harness: Any, script: Any, decision: dict[str, Any]) -> None:
    hook = command_hook("tool_call", script("deny.sh", f"echo '{json.dumps(decision)}'\n"))
    seen: list[dict[str, Any]] = []
    harness, _ = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == []
    assert _result(harness).text == "Tool call blocked: policy says no"


def test_nonblocking_failure(make_harness: Any, script: Any) -> None:
    hook = command_hook("tool_call", script("fail.sh", "echo 'boom' >&2\nexit 1\n"))
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert seen == [{"text": "hello"}]  # the call still ran
    [message] = errors(log)
    assert "exited with code 1 (non-blocking): boom" in message


def test_timeout_kills_the_process_group_and_fails_closed(make_harness: Any, script: Any) -> None:
    # a background grandchild keeps stdout open: the group kill must still end it all
    hook = command_hook("tool_call", script("hang.sh", "sleep 30 &\nsleep 30\n"), timeout_s=0.3)
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    started = time.monotonic()
    asyncio.run(harness.prompt("go"))
    assert time.monotonic() - started < scaled(5)
    assert seen == []
    result = _result(harness)
    assert result.is_error and "did not finish within 0.3 s" in result.text
    assert any("did not finish within 0.3 s" in m for m in errors(log))


def test_timeout_elsewhere_is_only_an_error(make_harness: Any, script: Any) -> None:
    hook = command_hook("tool_result", script("hang.sh", "sleep 30\n"), timeout_s=0.2)
    harness, log = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert _result(harness).text == "hello"
    assert len(errors(log)) == 1


def test_malformed_json_output(make_harness: Any, script: Any) -> None:
    hook = command_hook("tool_call", script("bad.sh", "echo '{\"decision\": '\n"))
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == []  # fail closed
    assert "malformed JSON" in _result(harness).text
    assert any("malformed JSON" in m for m in errors(log))


NONSENSE_PRE_TOOL_USE_ANSWERS = {
    "decision outside hookSpecificOutput": {"permissionDecision": "deny"},
    "mistyped field": {"hookSpecificOutput": {"permissionDecison": "deny"}},
    "continue as a string": {"continue": "false"},
    "decision not a string": {"decision": 1},
    "another event's answer": {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "x"}
    },
}


@pytest.mark.parametrize(
    "answer", NONSENSE_PRE_TOOL_USE_ANSWERS.values(), ids=list(NONSENSE_PRE_TOOL_USE_ANSWERS)
)
def test_nonsense_json_blocks_the_call_and_names_the_hook(
    make_harness: Any, script: Any, answer: dict[str, Any]
) -> None:
    hook = command_hook(
        "tool_call", script("odd.sh", f"cat > /dev/null\necho '{json.dumps(answer)}'\n")
    )
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == []  # fail closed
    result = _result(harness)
    assert result.is_error and "PreToolUse cannot read" in result.text
    [error] = errors(log)
    assert "odd.sh" in error and "PreToolUse cannot read" in error


def test_nonsense_json_at_user_prompt_submit_drops_the_prompt(
    make_harness: Any, script: Any
) -> None:
    hook = command_hook("before_agent_start", script("odd.sh", "echo '{\"blocked\": true}'\n"))
    harness, log = make_harness([reply_text("never")], hooks=[hook])
    result = asyncio.run(harness.prompt("hello"))
    assert result.status == "aborted"
    assert harness.messages == []
    [error] = errors(log)
    assert "odd.sh" in error and "unknown field 'blocked'" in error
    assert any(e.type == "notice" and "prompt blocked" in e.message for e in log)


def test_stray_json_fields_elsewhere_are_a_warning(make_harness: Any, script: Any) -> None:
    answer = {"hookSpecificOutput": {"additionalContext": "checked"}, "status": "ok"}
    hook = command_hook("tool_result", script("post.sh", f"echo '{json.dumps(answer)}'\n"))
    harness, log = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert _result(harness).text == "hellochecked"
    assert errors(log) == []
    assert any("unknown field 'status'" in m for m in notices(log, "hook:tool_result"))


def test_plain_text_stdout_is_ignored(make_harness: Any, script: Any) -> None:
    hook = command_hook("tool_call", script("chatty.sh", "echo 'checking...'\n"))
    seen: list[dict[str, Any]] = []
    harness, log = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == [{"text": "hello"}]
    assert errors(log) == []


def test_matcher_selects_tools(make_harness: Any, script: Any) -> None:
    hook = command_hook("tool_call", script("block.sh", "exit 2\n"), matcher="write|edit")
    seen: list[dict[str, Any]] = []
    harness, _ = make_harness(_one_call(), [echo_tool(seen=seen)], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert seen == [{"text": "hello"}]


def test_cwd_and_environment(make_harness: Any, script: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    body = 'pwd > where.txt\necho "$HARNESSC_HOOK_EVENT $HARNESSC_SESSION_ID" > env.txt\n'
    hook = command_hook("turn_end", script("env.sh", body), cwd=work)
    harness, _ = make_harness([reply_text("hi")], [], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert (work / "where.txt").read_text().strip() == str(work.resolve())
    assert (work / "env.txt").read_text().split() == ["turn_end", harness.session.id]


def test_tool_result_additional_context(make_harness: Any, script: Any) -> None:
    context = {"hookSpecificOutput": {"additionalContext": "lint: 2 warnings"}}
    hook = command_hook("tool_result", script("ctx.sh", f"echo '{json.dumps(context)}'\n"))
    harness, _ = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    assert [c.text for c in _result(harness).content] == ["hello", "lint: 2 warnings"]


def test_tool_result_exit_two_feeds_back(make_harness: Any, script: Any, tmp_path: Path) -> None:
    saved = tmp_path / "event.json"
    body = f"cat > {saved}\necho 'tests failed' >&2\nexit 2\n"
    hook = command_hook("tool_result", script("fb.sh", body))
    harness, _ = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    result = _result(harness)
    assert [c.text for c in result.content] == ["hello", "[hook feedback] tests failed"]
    assert not result.is_error
    event = json.loads(saved.read_text())
    assert event["hook_event_name"] == "PostToolUse"
    assert event["tool_response"] == {"content": "hello", "details": None}


def test_stop_hook_exit_two_continues_the_run(
    make_harness: Any, script: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "once"
    body = (
        f'if [ -e "{marker}" ]; then exit 0; fi\n'
        f'touch "{marker}"\necho "run the tests first" >&2\nexit 2\n'
    )
    hook = command_hook("before_stop", script("stop.sh", body))
    harness, _ = make_harness([reply_text("done?"), reply_text("tests pass")], [], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    users = [m.content for m in harness.messages if isinstance(m, UserMessage)]
    assert users == ["go", "run the tests first"]
    assert result.text == "tests pass"


def test_event_moment_exit_two_pauses(make_harness: Any, script: Any) -> None:
    hook = command_hook("turn_end", script("review.sh", "echo 'needs review' >&2\nexit 2\n"))
    harness, _ = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "paused"
    assert "needs review" in result.reason


def test_continue_false_pauses(make_harness: Any, script: Any) -> None:
    decision = {"continue": False, "stopReason": "quota", "systemMessage": "hook says stop"}
    hook = command_hook("turn_end", script("stop.sh", f"echo '{json.dumps(decision)}'\n"))
    harness, log = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "paused" and result.reason == "quota"
    assert notices(log, "hook:turn_end") == ["hook says stop"]


def test_prompt_hook_adds_context(make_harness: Any, script: Any) -> None:
    hook = command_hook("before_agent_start", script("ctx.sh", "echo 'branch: main'\n"))
    harness, _ = make_harness([reply_text("ok")], [], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    users = [m.content for m in harness.messages if isinstance(m, UserMessage)]
    assert users == ["go", "branch: main"]


def test_block_at_a_moment_that_cannot_block_is_an_error(make_harness: Any, script: Any) -> None:
    hook = command_hook("context", script("no.sh", "exit 2\n"))
    harness, log = make_harness([reply_text("ok")], [], hooks=[hook])
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "done"
    assert any("cannot block" in m for m in errors(log))


def test_output_is_capped() -> None:
    command = "head -c 3000000 /dev/zero | tr '\\0' a; head -c 2500000 /dev/zero >&2"
    run = asyncio.run(run_hook_command(command, b"", cwd=None, timeout_s=20))
    assert run.returncode == 0
    assert len(run.stdout) == MAX_OUTPUT_BYTES and run.stdout_truncated
    assert len(run.stderr) == MAX_OUTPUT_BYTES and run.stderr_truncated


def test_large_stdin_and_command_that_ignores_it() -> None:
    data = b"x" * 2_000_000
    run = asyncio.run(run_hook_command("exit 0", data, cwd=None, timeout_s=10))
    assert run.returncode == 0
    run = asyncio.run(run_hook_command("wc -c", data, cwd=None, timeout_s=10))
    assert run.stdout.strip() == b"2000000"


def test_run_hook_command_timeout() -> None:
    started = time.monotonic()
    with pytest.raises(HookTimeoutError):
        asyncio.run(run_hook_command("sleep 20", b"", cwd=None, timeout_s=0.2))
    assert time.monotonic() - started < scaled(5)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        command_hook("tool_call", "  ")
    with pytest.raises(ValueError):
        command_hook("tool_call", "true", timeout_s=0)
    with pytest.raises(ValueError, match="unknown hook"):
        command_hook("tool_cal", "true")
    assert command_hook("tool_call", "true", matcher="*").matcher is None


def test_events_record_the_hook_error_source(make_harness: Any, script: Any) -> None:
    hook = command_hook("tool_call", script("fail.sh", "exit 3\n"))
    harness, log = make_harness(_one_call(), [echo_tool()], hooks=[hook])
    asyncio.run(harness.prompt("go"))
    [event] = events_of(log, "error")
    assert event.source == "hook:tool_call"

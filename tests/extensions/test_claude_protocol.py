"""Claude Code's tool names, input shapes and matchers, and the checks of hook programs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.core.messages import ToolResultMessage
from harnessc.runtime.extensions import command_hook
from harnessc.runtime.extensions.claude_events import compile_matcher
from harnessc.runtime.extensions.claude_settings import (
    ClaudeSettingsError,
    claude_settings_hooks,
    read_claude_settings,
)
from harnessc.runtime.extensions.claude_tools import (
    ToolMappingError,
    claude_tool_input,
    harnessc_tool_input,
)
from harnessc.runtime.providers.scripted import reply_text, reply_tool_calls
from harnessc.spec.load import load_spec

BASE = Path("/work/project")


@pytest.mark.parametrize(
    ("tool", "args", "claude"),
    [
        ("bash", {"command": "ls", "timeout": 2.5}, {"command": "ls", "timeout": 2500}),
        (
            "read",
            {"path": "src/a.py", "offset": 3, "limit": 10},
            {"file_path": "/work/project/src/a.py", "offset": 3, "limit": 10},
        ),
        (
            "write",
            {"path": "/abs/x.txt", "content": "hi"},
            {"file_path": "/abs/x.txt", "content": "hi"},
        ),
        (
            "edit",
            {"path": "a.py", "edits": [{"old_text": "x", "new_text": "y"}]},
            {
                "file_path": "/work/project/a.py",
                "old_string": "x",
                "new_string": "y",
                "replace_all": False,
            },
        ),
        ("ls", {}, {"path": "/work/project"}),
        (
            "grep",
            {"pattern": "TODO", "path": "src", "ignore_case": True, "limit": 5},
            {
                "pattern": "TODO",
                "path": "/work/project/src",
                "-i": True,
                "head_limit": 5,
                "output_mode": "content",
            },
        ),
        ("find", {"pattern": "*.py"}, {"pattern": "*.py", "path": "/work/project"}),
        ("todo", {"op": "list"}, {"op": "list"}),
    ],
)
def test_tool_inputs_in_claude_code_shape_and_back(
    tool: str, args: dict[str, Any], claude: dict[str, Any]
) -> None:
    assert claude_tool_input(tool, args, BASE) == claude
    # a hook echoing the input unchanged gives the model's own arguments back
    assert harnessc_tool_input(tool, claude, args, BASE) == args


def test_multi_edit_and_updated_input_mapping() -> None:
    args = {
        "path": "a.py",
        "edits": [{"old_text": "a", "new_text": "b"}, {"old_text": "c", "new_text": "d"}],
    }
    shown = claude_tool_input("edit", args, BASE)
    assert shown["edits"] == [
        {"old_string": "a", "new_string": "b"},
        {"old_string": "c", "new_string": "d"},
    ]
    assert (shown["old_string"], shown["new_string"]) == ("a", "b")
    assert harnessc_tool_input("edit", shown, args, BASE) == args
    moved = {"file_path": "/work/project/b.py", "old_string": "a", "new_string": "z"}
    assert harnessc_tool_input("edit", moved, args, BASE) == {
        "path": "/work/project/b.py",
        "edits": [{"old_text": "a", "new_text": "z"}],
    }
    with pytest.raises(ToolMappingError, match="replace_all"):
        harnessc_tool_input("edit", {**moved, "replace_all": True}, args, BASE)
    bash = harnessc_tool_input(
        "bash",
        {"command": "ls -la", "timeout": 3000, "description": "list"},
        {"command": "ls"},
        BASE,
    )
    assert bash == {"command": "ls -la", "timeout": 3.0}


@pytest.mark.parametrize(
    ("matcher", "matches", "misses"),
    [
        (None, ["bash", "anything"], []),
        ("*", ["bash", "write"], []),
        ("", ["read"], []),
        ("Bash", ["bash"], ["write", "bashful"]),
        ("bash", ["bash"], ["read"]),
        ("Edit|Write", ["edit", "write"], ["read", "bash"]),
        ("Edit, Write", ["edit", "write"], ["read"]),
        ("mcp__.*", ["mcp__fs__read"], ["bash"]),
        ("^Bash", ["bash"], ["read"]),
        ("Notebook.*|Wr.*", ["write"], ["edit"]),
    ],
)
def test_matchers_as_claude_code_documents_them(
    matcher: str | None, matches: list[str], misses: list[str]
) -> None:
    test = compile_matcher(matcher)
    for name in matches:
        assert test is None or test(name), name
    for name in misses:
        assert test is not None and not test(name), name


def test_updated_input_reaches_the_tool(
    make_harness: Any, script: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the write tool's workspace
    decision = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"file_path": str(tmp_path / "safe.txt"), "content": "changed"},
        }
    }
    hook = command_hook(
        "tool_call", script("rewrite.sh", f"cat >/dev/null\necho '{json.dumps(decision)}'\n")
    )
    from harnessc.runtime.tools import create_write_tool

    harness, _ = make_harness(
        [reply_tool_calls([("write", {"path": "x.txt", "content": "orig"})]), reply_text("ok")],
        [create_write_tool()],
        hooks=[hook],
    )
    asyncio.run(harness.prompt("go"))
    result = next(m for m in harness.messages if isinstance(m, ToolResultMessage))
    assert not result.is_error, result.content
    assert (tmp_path / "safe.txt").read_text() == "changed"


def test_ask_is_a_pull_point(make_harness: Any, script: Any) -> None:
    decision = {
        "hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "x"}
    }
    hook = command_hook("tool_call", script("ask.sh", f"echo '{json.dumps(decision)}'\n"))
    from ._ext_support import echo_tool

    seen: list[dict[str, Any]] = []
    harness, _ = make_harness(
        [reply_tool_calls([("echo", {"text": "hi"})]), reply_text("ok")],
        [echo_tool(seen=seen)],
        hooks=[hook],
    )
    result = asyncio.run(harness.prompt("go"))
    assert (result.status, result.reason) == ("paused", "approval needed: x")
    assert not any(isinstance(m, ToolResultMessage) for m in harness.messages)  # held
    [held] = harness.pending_tool_calls
    assert seen == []
    # approved at resume: the held call runs in place, once, without asking again
    resumed = asyncio.run(harness.resume(approvals={held.id: True}))
    assert resumed.status == "done"
    assert len(seen) == 1
    [answer] = [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    assert answer.tool_call_id == held.id and not answer.is_error


def _settings(tmp_path: Path, hooks: dict[str, Any]) -> Path:
    folder = tmp_path / ".claude"
    folder.mkdir(exist_ok=True)
    path = folder / "settings.json"
    path.write_text(json.dumps({"hooks": hooks}))
    return path


def test_settings_refuse_what_cannot_run_as_it_is(tmp_path: Path) -> None:
    with pytest.raises(ClaudeSettingsError, match="no such file"):
        read_claude_settings(tmp_path / "missing.json")
    prompt_hook = {"Stop": [{"hooks": [{"type": "prompt", "prompt": "is it done?"}]}]}
    with pytest.raises(ClaudeSettingsError, match="'prompt' hook; harnessc runs only 'command'"):
        claude_settings_hooks(_settings(tmp_path, prompt_hook))
    bad = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "timeout": -1}]}]}
    with pytest.raises(ClaudeSettingsError, match=r"hooks.PreToolUse\[0\].hooks\[0\]"):
        claude_settings_hooks(_settings(tmp_path, bad))
    ok = {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "true"}]}],
    }
    [spec] = claude_settings_hooks(_settings(tmp_path, ok))  # SessionEnd has no moment
    assert spec.moment == "tool_call"


SPEC = """\
version: 1
name: checked
models: {main: {provider: openai, id: m, api_key_env: K}}
hooks:
"""


def _diagnostics(tmp_path: Path, hooks: str) -> list[tuple[str, str]]:
    spec = tmp_path / "checked.yaml"
    spec.write_text(SPEC + hooks)
    return [(d.severity, d.message) for d in load_spec(spec).diagnostics]


def test_check_makes_missing_or_non_executable_programs_errors(tmp_path: Path) -> None:
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "plain.sh").write_text("exit 0\n")
    found = _diagnostics(
        tmp_path,
        "  tool_call:\n"
        "    - command: hooks/plain.sh --strict\n"
        "    - command: hooks/missing.sh\n"
        "    - command: no-such-program-xyz --x\n",
    )
    assert (
        "error",
        "hook program 'hooks/plain.sh' is not executable "
        f"(chmod +x {tmp_path / 'hooks' / 'plain.sh'})",
    ) in found
    assert any(s == "error" and "'hooks/missing.sh' does not exist" in m for s, m in found)
    assert ("warning", "hook program 'no-such-program-xyz' is not on PATH") in found


def test_check_reads_the_claude_settings_file(tmp_path: Path) -> None:
    hooks = {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/x.sh"}],
            }
        ],
        "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}],
    }
    _settings(tmp_path, hooks)
    found = _diagnostics(tmp_path, "  claude_settings: .claude/settings.json\n")
    assert any(
        s == "error" and "'$CLAUDE_PROJECT_DIR/.claude/x.sh' does not exist" in m for s, m in found
    ), found
    assert any(s == "warning" and "no moment for SubagentStop" in m for s, m in found), found
    found = _diagnostics(tmp_path, "  claude_settings: nope.json\n")
    assert any(s == "error" and "no such file" in m for s, m in found), found


def test_user_prompt_submit_block_drops_the_prompt(make_harness: Any, script: Any) -> None:
    hook = command_hook(
        "before_agent_start", script("deny.sh", "echo 'no secrets in prompts' >&2\nexit 2\n")
    )
    harness, log = make_harness([reply_text("never")], hooks=[hook])
    result = asyncio.run(harness.prompt("my password is hunter2"))
    assert result.status == "aborted"
    assert harness.messages == []  # never sent, never stored
    assert any(
        e.type == "notice" and "prompt blocked" in e.message and "no secrets" in e.message
        for e in log
    )
    again = asyncio.run(harness.prompt("hello"))  # the harness is usable afterwards
    assert again.status == "aborted"  # the same hook blocks every prompt


def test_block_rule_takes_claude_code_tool_names(make_harness: Any) -> None:
    from harnessc.runtime.extensions import block_rule

    from ._ext_support import echo_tool

    seen: list[dict[str, Any]] = []
    rule = block_rule("Echo|echo", "secret", "no secrets")
    harness, _ = make_harness(
        [reply_tool_calls([("echo", {"text": "a secret"})]), reply_text("ok")],
        [echo_tool(seen=seen)],
        hooks=[rule, block_rule("Bash", "rm", "no rm")],
    )
    asyncio.run(harness.prompt("go"))
    assert seen == []
    from harnessc.runtime.extensions.block_rules import BlockRule

    assert BlockRule("Bash", "rm", "r").matches("bash", {"command": "rm x"})


def test_settings_session_start_and_post_tool_use(
    make_harness: Any, script: Any, tmp_path: Path
) -> None:
    from ._ext_support import echo_tool

    log = tmp_path / "events.jsonl"
    logger = script("log.sh", f"cat >> {log}\necho >> {log}\necho 'context from SessionStart'\n")
    hooks = {
        "SessionStart": [{"hooks": [{"type": "command", "command": logger}]}],
        "PostToolUse": [{"matcher": "echo", "hooks": [{"type": "command", "command": logger}]}],
        "PostToolUseFailure": [{"hooks": [{"type": "command", "command": logger}]}],
    }
    specs = claude_settings_hooks(_settings(tmp_path, hooks))
    harness, _ = make_harness(
        [reply_tool_calls([("echo", {"text": "x"})]), reply_text("one"), reply_text("two")],
        [echo_tool()],
        hooks=specs,
    )
    asyncio.run(harness.prompt("first"))
    asyncio.run(harness.prompt("second"))
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    names = [e["hook_event_name"] for e in events]
    assert names == ["SessionStart", "PostToolUse"]  # once per harness; no failure
    assert events[0]["source"] == "startup"
    assert events[1]["tool_response"]["content"] == "x"
    texts = [m.content for m in harness.messages if getattr(m, "role", "") == "user"]
    assert texts[:2] == ["first", "context from SessionStart"]


@pytest.mark.parametrize(
    ("pause", "kind"),
    [
        ("permission rule", "permission_prompt"),
        ("hook ask", "permission_prompt"),
        ("hook", "idle_prompt"),
    ],
)
def test_notification_type_of_a_pause(
    make_harness: Any, script: Any, tmp_path: Path, pause: str, kind: str
) -> None:
    from harnessc.runtime.core.hooks import PauseRequest
    from harnessc.runtime.permissions.gate import permission_hook

    from ._ext_support import echo_tool

    log = tmp_path / "notified.jsonl"
    logger = script("notify.sh", f"cat >> {log}\necho >> {log}\n")
    hooks = {
        "Notification": [
            {"matcher": kind, "hooks": [{"type": "command", "command": logger}]},
            {"matcher": "elicitation_dialog", "hooks": [{"type": "command", "command": logger}]},
        ]
    }
    specs = claude_settings_hooks(_settings(tmp_path, hooks))
    if pause == "permission rule":
        specs.append(permission_hook({"ask": ["echo"]}))
    elif pause == "hook ask":
        answer = {"hookSpecificOutput": {"permissionDecision": "ask"}}
        specs.append(command_hook("tool_call", script("ask.sh", f"echo '{json.dumps(answer)}'\n")))
    harness, _ = make_harness(
        [reply_tool_calls([("echo", {"text": "x"})]), reply_text("ok")], [echo_tool()], hooks=specs
    )
    if pause == "hook":
        harness.on("tool_call", lambda event: PauseRequest("needs a look"))
    result = asyncio.run(harness.prompt("go"))
    assert result.status == "paused"
    [event] = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert event["hook_event_name"] == "Notification"
    assert event["notification_type"] == kind
    assert event["message"] == result.reason


def test_a_mistyped_settings_event_is_refused_with_a_suggestion(tmp_path: Path) -> None:
    """A misspelt event name would silently drop its guard: refused as the spec refuses
    an unknown key, with the event it probably means. Events Claude Code has and harnessc
    has no moment for are still skipped with a warning."""
    guard = [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]
    path = _settings(tmp_path, {"PreTooluse": guard})
    with pytest.raises(
        ClaudeSettingsError, match=r"unknown event 'PreTooluse'; did you mean 'PreToolUse'\?"
    ):
        claude_settings_hooks(path)
    found = _diagnostics(tmp_path, "  claude_settings: .claude/settings.json\n")
    assert any(
        s == "error" and "unknown event 'PreTooluse'; did you mean 'PreToolUse'?" in m
        for s, m in found
    ), found
    _settings(tmp_path, {"Frobnicate": guard})
    with pytest.raises(ClaudeSettingsError, match="unknown event 'Frobnicate'"):
        claude_settings_hooks(path)
    _settings(tmp_path, {"PreToolUse": guard, "SessionEnd": guard, "PermissionRequest": guard})
    assert [s.moment for s in claude_settings_hooks(path)] == ["tool_call"]


def test_a_claude_code_event_name_in_the_spec_suggests_the_moment(tmp_path: Path) -> None:
    found = _diagnostics(
        tmp_path,
        "  PreToolUse:\n    - command: 'true'\n  SessionEnd:\n    - command: 'true'\n",
    )
    assert any(
        s == "error"
        and "unknown hook moment 'PreToolUse'; did you mean 'tool_call'?" in m
        and "Claude Code" in m
        for s, m in found
    ), found
    assert any(
        s == "error" and "'SessionEnd'" in m and "harnessc has no moment for" in m for s, m in found
    ), found


def test_a_bare_hook_program_beside_the_spec_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    """``command: block.sh`` goes through PATH, as a shell runs it (and Claude Code runs
    it): a block.sh beside the spec would never run, and a tool_call hook that cannot
    run blocks every call. So check says so, with the path to write."""
    script = tmp_path / "block.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    found = _diagnostics(tmp_path, "  tool_call:\n    - command: block.sh --strict\n")
    assert (
        "error",
        "hook program 'block.sh' is not on PATH (a bare name is looked up there, as a "
        "shell does); for the block.sh beside the spec write ./block.sh",
    ) in found, found
    hooks = {"PreToolUse": [{"hooks": [{"type": "command", "command": "block.sh"}]}]}
    (tmp_path / ".claude").mkdir(exist_ok=True)
    (tmp_path / ".claude" / "block.sh").write_text("#!/bin/sh\nexit 0\n")
    _settings(tmp_path, hooks)
    found = _diagnostics(tmp_path, "  claude_settings: .claude/settings.json\n")
    assert any(s == "error" and "write ./block.sh" in m for s, m in found), found
    ok = _diagnostics(tmp_path, "  tool_call:\n    - command: ./block.sh --strict\n")
    assert not [m for s, m in ok if s == "error"], ok

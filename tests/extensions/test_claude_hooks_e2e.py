"""Hook scripts written to Claude Code's documented protocol, run unchanged by a generated
agent against the local protocol server (compiled from a spec in tmp_path, run as a
process like a user runs it).

Each script reads the event from stdin as Claude Code sends it and answers as Claude
Code reads it: exit 2 with stderr, or exit 0 with JSON or plain text on stdout.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harnessc.compiler.render import compile as compile_specs
from harnessc.spec.load import load_spec
from harnessc.testing import (
    ProtocolServer,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)

API_KEY = "sk-e2e-hooks-0000"

SPEC_HEAD = """\
version: 1
name: hooked
models:
  main:
    provider: openai
    id: test-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
tools: [bash, read, write, edit]
session: {dir: sessions}
# the hooks (sandboxed) log next to the workspace, in the test's folder
sandbox: {filesystem: {writable: [".."]}}
"""

# Every script logs the event it received (one JSON line) before it answers.
LOG_PRELUDE = """\
#!/usr/bin/env python3
import json, os, sys
event = json.load(sys.stdin)
with open(os.environ["HOOK_LOG"], "a") as log:
    log.write(json.dumps({"event": event, "pwd": os.getcwd(),
                          "project": os.environ.get("CLAUDE_PROJECT_DIR"),
                          "spec_dir": os.environ.get("HARNESSC_SPEC_DIR")}) + "\\n")
"""

BASH_VALIDATOR = LOG_PRELUDE + textwrap.dedent(
    """\
    command = event["tool_input"].get("command", "")
    if event["tool_name"] == "Bash" and "rm -rf" in command:
        print("Refusing rm -rf: delete files one by one", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
    """
)

JSON_DENY = LOG_PRELUDE + textwrap.dedent(
    """\
    if "curl" in event["tool_input"].get("command", ""):
        print(json.dumps({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no network access from this project"}}))
    sys.exit(0)
    """
)

WRITE_GUARD = LOG_PRELUDE + textwrap.dedent(
    """\
    path = event["tool_input"].get("file_path", "")
    if os.path.basename(path) == ".env" or "/.git/" in path:
        print(f"{path} holds secrets", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
    """
)

STOP_ONCE = LOG_PRELUDE + textwrap.dedent(
    """\
    if event["stop_hook_active"]:
        sys.exit(0)
    print(json.dumps({"decision": "block", "reason": "Run the tests before you stop."}))
    """
)

PROMPT_CONTEXT = LOG_PRELUDE + textwrap.dedent(
    """\
    print("Project codename: FALCON-7 (from the UserPromptSubmit hook)")
    """
)


@pytest.fixture(scope="module")
def server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


class Project:
    def __init__(self, root: Path, server: ProtocolServer) -> None:
        self.root = root
        self.spec_dir = root / "agents"
        self.work = root / "work"
        self.log = root / "hooks.log"
        self.server = server
        self.spec_dir.mkdir()
        self.work.mkdir()

    def script(self, name: str, body: str) -> str:
        path = self.spec_dir / "hooks" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return f"hooks/{name}"

    def build(self, hooks_yaml: str) -> Path:
        spec = self.spec_dir / "hooked.yaml"
        spec.write_text(SPEC_HEAD + hooks_yaml)
        loaded = load_spec(spec)
        errors = [d for d in loaded.diagnostics if d.severity == "error"]
        assert not errors, errors
        out = self.root / "generated"
        for name, text in compile_specs(loaded, out).items():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(text)
        return out / "hooked.py"

    def run(self, module: Path, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(
            TEST_BASE_URL=f"{self.server.url}/v1",
            TEST_API_KEY=API_KEY,
            HOOK_LOG=str(self.log),
            PYTHONDONTWRITEBYTECODE="1",
        )
        return subprocess.run(
            [sys.executable, str(module), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.work,
            timeout=60,
        )

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def project(tmp_path: Path, server: ProtocolServer) -> Project:
    server.reset()
    return Project(tmp_path, server)


def tool_reply(*calls: tuple[str, str, dict[str, Any]]) -> ScriptedResponse:
    return ScriptedResponse.sse(
        openai_tool_call_events([(cid, name, json.dumps(args)) for cid, name, args in calls])
    )


def text_reply(text: str) -> ScriptedResponse:
    return ScriptedResponse.sse(openai_events([text]))


def tool_results(request: Any) -> dict[str, str]:
    return {
        m["tool_call_id"]: m["content"] if isinstance(m["content"], str) else json.dumps(m)
        for m in request.json["messages"]
        if m.get("role") == "tool"
    }


def user_texts(request: Any) -> list[str]:
    out = []
    for m in request.json["messages"]:
        if m.get("role") != "user":
            continue
        content = m["content"]
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        out.append(content)
    return out


def test_pre_tool_use_exit_two_and_json_deny(project: Project) -> None:
    validator = project.script("validate_bash.py", BASH_VALIDATOR)
    deny = project.script("deny_network.py", JSON_DENY)
    module = project.build(
        "hooks:\n"
        "  tool_call:\n"
        f"    - {{command: {validator}, matcher: Bash}}\n"
        f"    - {{command: {deny}, matcher: 'Bash|Write'}}\n"
    )
    (project.work / "build").mkdir()
    project.server.enqueue(
        tool_reply(
            ("c1", "bash", {"command": "rm -rf build"}),
            ("c2", "bash", {"command": "curl https://example.com", "timeout": 5}),
            ("c3", "bash", {"command": "echo fine"}),
        ),
        text_reply("ok"),
    )
    done = project.run(module, "clean up")
    assert done.returncode == 0, done.stderr
    results = tool_results(project.server.requests[1])
    assert results["c1"] == "Tool call blocked: Refusing rm -rf: delete files one by one"
    assert results["c2"] == "Tool call blocked: no network access from this project"
    assert results["c3"].strip() == "fine"
    assert (project.work / "build").is_dir()  # the blocked command never ran
    # the calls run side by side: find each hook's log line by its tool_use_id
    first = next(e for e in project.events() if e["event"]["tool_use_id"] == "c1")
    event = first["event"]
    assert event["hook_event_name"] == "PreToolUse"
    assert event["tool_name"] == "Bash"
    assert event["tool_input"] == {"command": "rm -rf build"}
    assert event["tool_use_id"] == "c1"
    assert event["permission_mode"] == "bypassPermissions"
    assert event["cwd"] == str(project.work)
    assert event["transcript_path"].startswith(str(project.work / "sessions"))
    assert event["harnessc"] == {
        "moment": "tool_call",
        "tool_name": "bash",
        "tool_input": {"command": "rm -rf build"},
    }
    curl = next(e["event"] for e in project.events() if "curl" in json.dumps(e))
    assert curl["tool_input"]["timeout"] == 5000  # Claude Code's Bash timeout is in ms
    # the hook runs in the project folder; its program came from the spec's folder
    assert first["pwd"] == str(project.work)
    assert first["project"] == str(project.work)
    assert first["spec_dir"] == str(project.spec_dir)


def test_write_guard_reads_the_absolute_file_path(project: Project) -> None:
    guard = project.script("guard.py", WRITE_GUARD)
    module = project.build(
        f"hooks:\n  tool_call:\n    - {{command: {guard}, matcher: Write|Edit}}\n"
    )
    project.server.enqueue(
        tool_reply(
            ("w1", "write", {"path": ".env", "content": "KEY=1"}),
            ("w2", "write", {"path": "notes.txt", "content": "hello"}),
        ),
        text_reply("written"),
    )
    done = project.run(module, "write files")
    assert done.returncode == 0, done.stderr
    results = tool_results(project.server.requests[1])
    assert results["w1"] == f"Tool call blocked: {project.work / '.env'} holds secrets"
    assert not (project.work / ".env").exists()
    assert (project.work / "notes.txt").read_text() == "hello"
    inputs = sorted((e["event"]["tool_input"] for e in project.events()), key=str)
    assert inputs == [
        {"file_path": str(project.work / ".env"), "content": "KEY=1"},
        {"file_path": str(project.work / "notes.txt"), "content": "hello"},
    ]
    assert {e["event"]["tool_name"] for e in project.events()} == {"Write"}


def test_stop_hook_blocks_once_and_honours_stop_hook_active(project: Project) -> None:
    stop = project.script("stop_once.py", STOP_ONCE)
    module = project.build(f"hooks:\n  before_stop:\n    - command: {stop}\n")
    project.server.enqueue(text_reply("All done."), text_reply("Tests pass. Done."))
    done = project.run(module, "fix the bug")
    assert done.returncode == 0, done.stderr
    assert len(project.server.requests) == 2
    assert user_texts(project.server.requests[1])[-1] == "Run the tests before you stop."
    events = [e["event"] for e in project.events()]
    assert [e["hook_event_name"] for e in events] == ["Stop", "Stop"]
    assert [e["stop_hook_active"] for e in events] == [False, True]
    assert events[0]["last_assistant_message"] == "All done."
    assert "Tests pass. Done." in done.stdout


def test_user_prompt_submit_adds_context(project: Project) -> None:
    hook = project.script("context.py", PROMPT_CONTEXT)
    module = project.build(f"hooks:\n  before_agent_start:\n    - command: {hook}\n")
    project.server.enqueue(text_reply("noted"))
    done = project.run(module, "what is the codename?")
    assert done.returncode == 0, done.stderr
    texts = user_texts(project.server.requests[0])
    assert texts[0] == "what is the codename?"
    assert "Project codename: FALCON-7" in texts[1]
    [event] = [e["event"] for e in project.events()]
    assert event["hook_event_name"] == "UserPromptSubmit"
    assert event["prompt"] == "what is the codename?"


def test_claude_settings_file_runs_as_it_is(project: Project) -> None:
    """A team's .claude/settings.json, with Claude Code's matchers and $CLAUDE_PROJECT_DIR."""
    claude = project.spec_dir / ".claude"
    (claude / "hooks").mkdir(parents=True)
    for name, body in (
        ("validate_bash.py", BASH_VALIDATOR),
        ("guard.py", WRITE_GUARD),
        ("stop_once.py", STOP_ONCE),
        ("context.py", PROMPT_CONTEXT),
    ):
        path = claude / "hooks" / name
        path.write_text(body)
        path.chmod(0o755)
    settings = {
        "permissions": {"allow": ["Bash(git:*)"]},
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "command",
                            "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/validate_bash.py',
                        }
                    ],
                },
                {
                    "matcher": "Edit|MultiEdit|Write",
                    "hooks": [{"type": "command", "command": ".claude/hooks/guard.py"}],
                },
            ],
            "Stop": [{"hooks": [{"type": "command", "command": ".claude/hooks/stop_once.py"}]}],
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": ".claude/hooks/context.py"}]}
            ],
        },
    }
    (claude / "settings.json").write_text(json.dumps(settings))
    # $CLAUDE_PROJECT_DIR is the agent's working directory, as in Claude Code
    (project.work / ".claude").symlink_to(claude, target_is_directory=True)
    module = project.build("hooks:\n  claude_settings: .claude/settings.json\n")
    project.server.enqueue(
        tool_reply(
            ("c1", "bash", {"command": "rm -rf /"}),
            ("c2", "write", {"path": ".env", "content": "X"}),
            ("c3", "bash", {"command": "echo ok"}),
        ),
        text_reply("done"),
        text_reply("tested, done"),
    )
    done = project.run(module, "go")
    assert done.returncode == 0, done.stderr
    results = tool_results(project.server.requests[1])
    assert results["c1"].startswith("Tool call blocked: Refusing rm -rf")
    assert results["c2"] == f"Tool call blocked: {project.work / '.env'} holds secrets"
    assert results["c3"].strip() == "ok"
    assert "FALCON-7" in user_texts(project.server.requests[0])[1]
    assert user_texts(project.server.requests[2])[-1] == "Run the tests before you stop."
    names = [e["event"]["hook_event_name"] for e in project.events()]
    assert names.count("PreToolUse") == 3  # c1 and c3 for Bash, c2 for Write
    assert names.count("Stop") == 2 and names.count("UserPromptSubmit") == 1


def _alive(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if tag.encode() in fh.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def test_background_child_left_by_a_hook(project: Project) -> None:
    """Issue 15 item 7: ``(sleep 303 &); exit 0`` is an allow, not a timeout; the child is
    killed with the hook's process group; no "Event loop is closed" at exit."""
    tag = "303.0417"
    module = project.build(
        "hooks:\n  tool_call:\n"
        f"    - {{command: '(sleep {tag} &); exit 0', matcher: Bash, timeout_s: 3}}\n"
        f"  agent_end:\n    - {{command: '(sleep {tag} &); echo bye', timeout_s: 3}}\n"
    )
    project.server.enqueue(tool_reply(("c1", "bash", {"command": "echo ran"})), text_reply("ok"))
    try:
        done = project.run(module, "go")
        assert done.returncode == 0, done.stderr
        assert tool_results(project.server.requests[1])["c1"].strip() == "ran"
        assert "timed out" not in done.stderr and "did not finish" not in done.stderr
        assert "Event loop is closed" not in done.stderr
        assert "Traceback" not in done.stderr
        assert _alive(tag) == []
    finally:
        for pid in _alive(tag):
            os.kill(pid, 9)


ASK = LOG_PRELUDE + textwrap.dedent(
    """\
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "ask", "permissionDecisionReason": "deploys need a human"}}))
    """
)


def test_ask_without_a_terminal_is_a_pull_point(project: Project) -> None:
    hook = project.script("ask.py", ASK)
    module = project.build(f"hooks:\n  tool_call:\n    - {{command: {hook}, matcher: Bash}}\n")
    project.server.enqueue(tool_reply(("c1", "bash", {"command": "make deploy"})))
    done = project.run(module, "deploy")
    assert done.returncode == 3, done.stderr  # paused: resumable with --continue
    assert "approval needed: deploys need a human" in done.stderr


# A SessionStart hook written as Claude Code's plugin-dev examples are: strict bash that
# appends export lines to $CLAUDE_ENV_FILE (unset, ``set -u`` makes it exit 1).
LOAD_PROJECT_ENV = """\
#!/bin/bash
set -euo pipefail
cd "$CLAUDE_PROJECT_DIR" || exit 1
printf '%s' "$CLAUDE_ENV_FILE" > "$HOOK_LOG.env_file"
if [ -f pyproject.toml ]; then
  echo "export PROJECT_TYPE=python" >> "$CLAUDE_ENV_FILE"
fi
echo 'export GREETING="hello   world"' >> "$CLAUDE_ENV_FILE"
echo "export TOOLS_HOME='/opt/my tools' PATH=\\"\\$TOOLS_HOME/bin:\\$PATH\\"" >> "$CLAUDE_ENV_FILE"
echo 'export DEPLOY_TOKEN=abc123456789' >> "$CLAUDE_ENV_FILE"
echo 'PLAIN_ASSIGNMENT=1' >> "$CLAUDE_ENV_FILE"
echo 'export STARTED=$(date)' >> "$CLAUDE_ENV_FILE"
echo "Project context loaded"
exit 0
"""


def test_session_start_env_file_reaches_the_bash_tool(project: Project) -> None:
    claude = project.spec_dir / ".claude"
    (claude / "hooks").mkdir(parents=True)
    script = claude / "hooks" / "load_env.sh"
    script.write_text(LOAD_PROJECT_ENV)
    script.chmod(0o755)
    settings = {
        "hooks": {
            "SessionStart": [
                {"hooks": [{"type": "command", "command": ".claude/hooks/load_env.sh"}]}
            ]
        }
    }
    (claude / "settings.json").write_text(json.dumps(settings))
    (project.work / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    module = project.build("hooks:\n  claude_settings: .claude/settings.json\n")
    shown = (
        'printf "%s|" "$PROJECT_TYPE" "$GREETING" "${DEPLOY_TOKEN:-unset}" '
        '"${STARTED:-unset}" "${PLAIN_ASSIGNMENT:-unset}"; echo "${PATH%%:*}"'
    )
    project.server.enqueue(tool_reply(("c1", "bash", {"command": shown})), text_reply("done"))
    done = project.run(module, "go")
    assert done.returncode == 0, done.stderr
    output = tool_results(project.server.requests[1])["c1"].strip()
    assert output == "python|hello   world|unset|unset|unset|/opt/my tools/bin"
    assert "Project context loaded" in user_texts(project.server.requests[0])[-1]
    # the lines it would not run, and the credential it would not pass on, are warned about
    assert "line 5 ignored (not an export line)" in done.stderr
    assert "line 6 ignored" in done.stderr and "$(date)" in done.stderr
    assert "DEPLOY_TOKEN not applied" in done.stderr, done.stderr
    # the file was private and is gone
    env_file = Path((project.root / "hooks.log.env_file").read_text())
    assert env_file.name == "env" and not env_file.parent.exists()

"""One-shot runs: streaming text, stdin prompts, --json events, exit codes 0/1/2/130."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnessc.testing import ProtocolServer, ScriptedResponse

from .clikit import API_KEY, Agent, events_of, text_reply, tool_reply


def test_reply_streams_to_stdout_and_tools_go_to_stderr(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(
        tool_reply(("call_1", "slow", {"seconds": 0.05})),
        text_reply("Hel", "lo ", "world"),
    )
    done = agent.run("say", "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello world\n"
    assert "[slow] seconds=0.05  0.0" in done.stderr  # tool name, key argument, duration
    assert "error" not in done.stderr
    assert "\r" not in done.stderr and "\033[" not in done.stderr  # no spinner: not a terminal
    first = server.requests[0]
    assert first.json["messages"][-1] == {"role": "user", "content": "say hello"}
    assert first.headers["authorization"] == f"Bearer {API_KEY}"
    assert API_KEY not in done.stdout + done.stderr


def test_prompt_from_piped_stdin_and_dash(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("one"), text_reply("two"))
    assert agent.run(stdin="from a pipe\n").returncode == 0
    assert agent.run("review", "this:", "-", stdin="DIFF\n").returncode == 0
    prompts = [r.json["messages"][-1]["content"] for r in server.requests]
    assert prompts == ["from a pipe", "review this:\n\nDIFF"]


def test_json_stream_is_one_event_per_line_in_order(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 0})), text_reply("Done", "."))
    done = agent.run("--json", "go")
    assert done.returncode == 0, done.stderr
    events = events_of(done.stdout)  # every stdout line is a JSON object
    types = [e["type"] for e in events]
    assert types[0] in ("agent_start", "state_change")
    assert types[-1] == "agent_end" and events[-1]["status"] == "done"
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    expected = [
        "agent_start",
        "turn_start",
        "message_start",  # the prompt
        "message_end",
        "message_start",  # the reply, streamed
        "message_update",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "turn_end",
        "turn_start",
        "message_update",
        "turn_end",
        "agent_end",
    ]
    remaining = iter(types)
    assert all(name in remaining for name in expected), types  # an ordered subsequence
    deltas = [e["delta"] for e in events if e.get("delta_type") == "text_delta"]
    assert "".join(deltas) == "Done."
    assert types.count("turn_start") == 2


def test_runtime_error_exits_1(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(ScriptedResponse.error(400, "model test-model does not exist"))
    done = agent.run("hi")
    assert done.returncode == 1
    assert "error:" in done.stderr and "does not exist" in done.stderr
    assert done.stdout == ""


def test_missing_api_key_exits_2_naming_the_variable(agent: Agent, server: ProtocolServer) -> None:
    done = agent.run("hi", env={"TEST_API_KEY": ""})
    assert done.returncode == 2
    assert "TEST_API_KEY" in done.stderr and "no API key" in done.stderr
    assert server.requests == []  # failed before any request
    assert agent.session_files() == []  # the empty session was not left behind
    other = agent.run("--model", "other", "hi")
    assert other.returncode == 2 and "OTHER_API_KEY" in other.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--json", "-i"], "cannot be combined"),
        (["--model", "nope", "hi"], "unknown model 'nope'; known: main, other"),
        (["--session", "no-such-id", "hi"], "no session"),
        (["--max-turns", "0", "hi"], "at least 1"),
        (["--thinking", "huge", "hi"], "invalid choice"),
        (["--resume-with", "[1]"], "JSON object"),
        (["--cwd", "/no/such/dir", "hi"], "no directory"),
        (["-"], "the prompt is empty"),
        ([], "no prompt"),
        (["--sessions", "hi"], "takes no prompt"),
    ],
)
def test_usage_and_config_errors_exit_2(agent: Agent, args: list[str], message: str) -> None:
    done = agent.run(*args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert done.stdout == ""


def test_help_lists_every_flag_with_examples(agent: Agent) -> None:
    done = agent.run("--help")
    assert done.returncode == 0
    for flag in (
        "--interactive",
        "--json",
        "--session",
        "--continue",
        "--fork",
        "--sessions",
        "--search",
        "--session-dir",
        "--no-session",
        "--model",
        "--thinking",
        "--cwd",
        "--max-turns",
        "--replay",
        "--watch",
        "--resume-with",
        "examples:",
        "exit codes:",
    ):
        assert flag in done.stdout, flag


def test_ctrl_c_aborts_a_one_shot_run_and_keeps_the_session(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 30})))
    process = subprocess.Popen(
        [sys.executable, str(agent.path), "wait"],
        env=agent.env,
        cwd=agent.workdir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.wait_for_requests(1, timeout_s=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the reply is in the session: the tool runs
            files = agent.session_files()
            if files and '"toolCall"' in files[0].read_text():
                break
            time.sleep(0.05)
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert "aborted" in err and "--session" in err
    (session_file,) = agent.session_files()
    assert "No result provided" in session_file.read_text()


def test_cwd_override_and_no_session(agent: Agent, server: ProtocolServer, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server.enqueue(text_reply("a"), text_reply("b"))
    assert agent.run("--cwd", str(elsewhere), "hi").returncode == 0
    (session_file,) = agent.session_files()
    assert f'"cwd":"{elsewhere}"' in session_file.read_text().replace(" ", "")
    done = agent.run("--no-session", "hi")
    assert done.returncode == 0 and done.stdout == "b\n"
    assert len(agent.session_files()) == 1


HELLO = Path(__file__).resolve().parents[2] / "generated" / "hello.py"


@pytest.mark.skipif(not HELLO.is_file(), reason="generated/hello.py is not built")
def test_generated_hello_runs_against_the_local_server(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(text_reply("Hello", " from hello"))
    env = {**agent.env, "HELLO_BASE_URL": f"{server.url}/v1"}
    done = subprocess.run(
        [sys.executable, str(HELLO), "hi"],
        input="",
        capture_output=True,
        text=True,
        env=env,
        cwd=agent.workdir,
        timeout=20,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from hello\n"
    assert server.requests[0].json["messages"][-1] == {"role": "user", "content": "hi"}


def test_a_command_as_the_prompt_answers_and_leaves_no_session(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(text_reply("kept"))
    assert agent.run("a real question").returncode == 0
    as_json = agent.run("--json", "/nothing")
    assert as_json.returncode == 2, as_json.stderr  # an unknown command is a usage error
    (reply,) = events_of(as_json.stdout)  # one line, nothing else
    assert reply["type"] == "command_reply" and "unknown command /nothing" in reply["text"]
    as_text = agent.run("/nothing")
    assert as_text.returncode == 2
    assert as_text.stdout.startswith("unknown command /nothing")
    assert server.requests[1:] == []  # no model call
    assert len(agent.session_files()) == 1  # only the real question's session

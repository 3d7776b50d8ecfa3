"""Defects of issue 17 on the agent's command line, each pinned by a test."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from harnessc.runtime.session import JsonlSessionRepo
from harnessc.testing import ProtocolServer, ScriptedResponse

from .clikit import Agent, text_reply, tool_reply


def test_piped_lines_to_interactive_mode_run_as_a_script(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(text_reply("Hi there"), text_reply("second answer"))
    done = agent.run("-i", stdin="hi\n/status\nand again\n")
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 2
    assert "Hi there" in done.stdout and "second answer" in done.stdout
    assert "state     DONE" in done.stdout  # /status ran between the two prompts
    assert "aborted" not in done.stderr


def test_unknown_command_lists_the_repls_commands_and_a_guess(
    agent: Agent, server: ProtocolServer
) -> None:
    done = agent.run("-i", stdin="/stauts\n")
    assert done.returncode == 0, done.stderr
    assert "unknown command /stauts; did you mean /status?" in done.stdout
    assert "/help" in done.stdout and "/tree" in done.stdout
    assert not server.requests


def test_a_one_shot_repl_command_says_it_needs_interactive_mode(agent: Agent) -> None:
    done = agent.run("/status")
    assert done.returncode == 2
    assert "/status is a command of the interactive mode" in done.stderr
    assert "-i" in done.stderr


def test_prompting_while_tools_are_pending_points_to_resume(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(tool_reply(("call_9", "approve", {"action": "deploy"})))
    done = agent.run("-i", stdin="deploy\n\nhello\n")
    assert done.returncode == 0, done.stderr
    assert "resume()" not in done.stdout + done.stderr
    assert "/resume answers" in done.stderr
    assert len(server.requests) == 1


def test_an_aborted_in_memory_run_does_not_claim_the_session_is_kept(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 30})))
    process = subprocess.Popen(
        [sys.executable, str(agent.path), "--no-session", "sleep"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=agent.env,
        cwd=agent.workdir,
    )
    try:
        deadline = time.monotonic() + 15
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.4)  # the slow tool is running
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=15)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130
    assert "the session is kept" not in err
    assert "in memory only" in err


def test_a_failed_first_request_leaves_no_session(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(ScriptedResponse.json_body(401, {"error": {"message": "bad key"}}))
    done = agent.run("hi")
    assert done.returncode == 1
    assert agent.session_files() == []
    listing = agent.run("--sessions")
    assert listing.stdout.strip() == "no sessions"


def test_listing_or_searching_an_empty_folder_creates_nothing(agent: Agent, tmp_path: Path) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    for flags in (["--sessions"], ["--search", "kiwi"]):
        done = agent.run(*flags, "--session-dir", str(empty))
        assert done.returncode == 0, done.stderr
    assert list(empty.iterdir()) == []
    missing = tmp_path / "missing"
    assert agent.run("--sessions", "--session-dir", str(missing)).stdout == "no sessions\n"
    assert not missing.exists()


def test_a_fork_is_marked_in_the_listing(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("one"), text_reply("two"))
    assert agent.run("first prompt").returncode == 0
    (original,) = agent.session_files()
    entries = [json.loads(line) for line in original.read_text().splitlines()]
    reply = next(e for e in entries if e.get("message", {}).get("role") == "assistant")
    done = agent.run("--continue", "--fork", reply["id"], "another way")
    assert done.returncode == 0, done.stderr
    listing = agent.run("--sessions").stdout.splitlines()
    header = json.loads(original.read_text().splitlines()[0])
    forks = [line for line in listing if "(fork of" in line]
    assert len(forks) == 1 and f"(fork of {header['id'][:8]})" in forks[0]


def test_a_locked_session_says_what_to_do(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("one"))
    assert agent.run("first").returncode == 0
    (path,) = agent.session_files()
    holder = JsonlSessionRepo(agent.sessions).open(str(path))  # this process writes to it
    try:
        done = agent.run("--continue", "more")
    finally:
        holder.close()
    assert done.returncode == 2
    assert "read-only" not in done.stderr
    assert "in use by process" in done.stderr and "--fork" in done.stderr


def test_tree_moves_go_through_the_harness_navigation(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(text_reply("one"), text_reply("two"))
    assert agent.run("first").returncode == 0
    assert agent.run("--continue", "second").returncode == 0
    (path,) = agent.session_files()
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(e for e in entries if e.get("message", {}).get("role") == "assistant")
    # A session_before_tree hook sees the move and cancels it: the session's own move
    # would have bypassed it.
    done = agent.run(
        "--continue", "-i", stdin=f"/tree {first['id']}\n", env={"AGENT_TREE_HOOK": "cancel"}
    )
    assert done.returncode == 0, done.stderr
    assert "cancelled the move" in done.stdout
    done = agent.run("--continue", "-i", stdin=f"/tree {first['id']}\n/status\n")
    assert f"moved to {first['id']}: 2 messages in context" in done.stdout
    assert "context   2 messages" in done.stdout


def test_continuing_interactively_shows_the_last_exchange_and_sessions_get_names(
    agent: Agent, server: ProtocolServer
) -> None:
    server.enqueue(text_reply("kiwi is a fruit"))
    assert agent.run("what is kiwi?").returncode == 0
    done = agent.run("--continue", "-i", stdin="/name fruit talk\n/name\n")
    assert done.returncode == 0, done.stderr
    assert "last exchange:\n  > what is kiwi?\n  kiwi is a fruit" in done.stderr
    assert "named: fruit talk" in done.stdout and "name: fruit talk" in done.stdout
    listing = agent.run("--sessions").stdout
    assert "fruit talk" in listing

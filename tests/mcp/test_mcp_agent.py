"""MCP servers end to end: a generated agent, a scripted model on the local protocol
server, the notes server (SDK) as a stdio child and over streamable HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harnessc.runtime.support.data_folder import DataFolder, resolve_folder
from harnessc.testing import ProtocolServer
from tests.timing import scaled

from .mcpkit import (
    API_KEY,
    MODEL,
    ScriptedResponse,
    alive,
    text_reply,
    tool_reply,
    wait_gone,
)


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def results_by_id(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["tool_call_id"]: e for e in events if e["type"] == "tool_execution_end"}


def result_text(event: dict[str, Any]) -> str:
    result = event["result"]
    return "".join(c.get("text", "") for c in result["content"])


def test_an_agent_calls_mcp_tools_over_stdio_and_http(
    make_agent: Any, model_server: ProtocolServer, http_server: str
) -> None:
    agent = make_agent(
        MODEL
        + f"""\
budget: {{turns: 3}}
hooks:
  tool_call:
    - block: {{tool: "mcp__notes__.*", pattern: forbidden}}
      reason: no forbidden notes
mcp:
  notes:
    command: {sys.executable}
    args: [notes_server.py]
    env: {{NOTES_DIR: ./notes}}
    exclude: [secret]
  tracker:
    url: ${{TRACKER_URL}}
    tools: [search]
    prefix: tracker_
""",
        TRACKER_URL=http_server,
    )
    replies = [
        tool_reply(
            ("c1", "mcp__notes__search", {"query": "hello"}),
            ("c2", "mcp__notes__fail", {}),
            ("c3", "mcp__notes__huge", {}),
            ("c4", "tracker_search", {"query": "bug"}),
            ("c5", "mcp__notes__env", {"variable": "TEST_API_KEY"}),
            ("c6", "mcp__notes__picture", {}),
        ),
        tool_reply(
            ("c7", "mcp__notes__search", {"query": "forbidden"}), ("c8", "mcp__notes__pid", {})
        ),
        None,  # the test kills the server, then answers; then the budget pauses the run
    ]
    killed: list[int] = []

    def answer(request: Any) -> ScriptedResponse:
        index = len(model_server.requests) - 1
        if index == 2:
            pids = [p for p in agent.server_pids() if alive(p)]
            assert len(pids) == 1, pids
            os.kill(pids[0], signal.SIGKILL)
            killed.extend(pids)
            wait_gone(pids)
            time.sleep(0.3)  # the client notices the closed pipe
            return tool_reply(("c9", "mcp__notes__pid", {}))
        reply = replies[index]
        assert reply is not None
        return reply

    model_server.set_handler(answer)
    done = agent.run("--json", "use the notes")
    assert done.returncode == 3, done.stderr  # paused by the budget: the servers stop too
    events = events_of(done.stdout)
    results = results_by_id(events)

    # the scripted model saw the MCP tools, the allow-list and the exclude hid the others
    tools = [t["function"]["name"] for t in model_server.requests[0].json["tools"]]
    assert "mcp__notes__search" in tools and "tracker_search" in tools
    assert "mcp__notes__secret" not in tools and "tracker_pid" not in tools
    assert "mcp__notes__broken" not in tools  # invalid input schema: skipped, with a warning
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("tool 'broken' skipped" in m for m in notices), notices

    # results reach the model: text, isError, truncation, images, the HTTP server
    assert "found 'hello' in ./notes" in result_text(results["c1"])
    assert results["c2"]["is_error"] is True
    huge = result_text(results["c3"])
    assert "[Output truncated" in huge and len(huge.encode()) < 60_000
    assert "found 'bug'" in result_text(results["c4"])
    assert result_text(results["c5"]) == "<unset>"  # the child's environment has no API key
    assert results["c6"]["result"]["content"][0]["type"] == "image"
    second = model_server.requests[1].json["messages"]
    assert any("found 'hello'" in json.dumps(m) for m in second)

    # a hook blocks an MCP call by its mcp__ name; the run goes on
    assert results["c7"]["is_error"] is True
    assert "no forbidden notes" in result_text(results["c7"])
    # the killed server was restarted for the next call
    first_pid = int(result_text(results["c8"]))
    assert killed == [first_pid]
    assert results["c9"]["is_error"] is False
    assert int(result_text(results["c9"])) != first_pid

    # --json shows the MCP calls as tool events
    starts = [e["tool_name"] for e in events if e["type"] == "tool_execution_start"]
    assert "mcp__notes__search" in starts and "tracker_search" in starts
    # secrets stay out of the output, and no server outlives the agent
    assert API_KEY not in done.stdout + done.stderr
    assert wait_gone(agent.server_pids()) == []
    log = resolve_folder(DataFolder("logs"), agent.workdir) / "mcp-notes.log"
    assert "notes server starting" in log.read_text()  # stderr went to the log
    assert "notes server starting" not in done.stderr


def test_a_server_that_hangs_at_start_up_times_out_and_fails_the_run(
    make_agent: Any, model_server: ProtocolServer
) -> None:
    agent = make_agent(
        MODEL
        + f"""\
budget: {{turns: 1}}
mcp:
  stuck:
    command: {sys.executable}
    args: [notes_server.py]
    env: {{NOTES_HANG: "1", NOTES_NAME: stuck}}
    timeout_s: 1.5
  optional:
    command: {sys.executable}
    args: [notes_server.py]
    env: {{NOTES_HANG: "1", NOTES_NAME: optional}}
    timeout_s: 1.5
    required: false
"""
    )
    model_server.enqueue(text_reply("hi"))
    started = time.monotonic()
    done = agent.run("--json", "hello")
    took = time.monotonic() - started
    events = events_of(done.stdout)
    errors = [e["message"] for e in events if e["type"] == "error"]
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("'stuck' did not answer start-up within 1.5 s" in m for m in errors), errors
    assert any(
        "'optional' did not answer start-up" in m and "required: false" in m for m in notices
    )
    assert took < scaled(30)
    # a required server that cannot start fails the run closed: no model call without it
    assert done.returncode == 1, done.stderr
    assert model_server.requests == []
    [end] = [e for e in events if e["type"] == "agent_end"]
    assert end["status"] == "error" and "'stuck' did not answer start-up" in end["reason"]
    assert len(agent.server_pids()) == 2
    assert wait_gone(agent.server_pids()) == []


def test_ctrl_c_during_an_mcp_call_cancels_it_and_stops_the_server(
    make_agent: Any, model_server: ProtocolServer
) -> None:
    agent = make_agent(
        MODEL
        + f"""\
mcp:
  notes:
    command: {sys.executable}
    args: [notes_server.py]
    tools: [slow]
"""
    )
    model_server.enqueue(tool_reply(("s1", "mcp__notes__slow", {"seconds": 60})), text_reply("ok"))
    process = agent.popen("--json", "sleep")
    try:
        assert process.stdout is not None
        for line in process.stdout:  # the MCP call is running
            if '"tool_execution_start"' in line:
                break
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 130
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert len(agent.server_pids()) == 1
    assert wait_gone(agent.server_pids()) == []


def test_a_sigkilled_agent_leaves_no_stdio_server_nor_its_children_behind(
    make_agent: Any, model_server: ProtocolServer, tmp_path: Path
) -> None:
    child = tmp_path / "grandchild"
    agent = make_agent(
        MODEL
        + f"""\
mcp:
  notes:
    command: {sys.executable}
    args: [notes_server.py]
    env: {{NOTES_CHILD: {child}}}
    tools: [search, slow]
"""
    )
    model_server.enqueue(
        tool_reply(("q1", "mcp__notes__search", {"query": "cats"})),
        tool_reply(("s1", "mcp__notes__slow", {"seconds": 60})),
        text_reply("ok"),
    )
    process = agent.popen("--json", "search, then sleep")
    try:
        assert process.stdout is not None
        events = []
        for line in process.stdout:  # the second MCP call is running
            events.append(json.loads(line))
            if events[-1]["type"] == "tool_execution_start" and events[-1]["tool_call_id"] == "s1":
                break
        # requests and answers pass through the supervisor intact
        assert "found 'cats'" in result_text(results_by_id(events)["q1"])
        [server] = agent.server_pids()
        grandchild = int(child.read_text())
        assert alive(server) and alive(grandchild)
        process.kill()  # SIGKILL: the agent runs no cleanup at all
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    left = wait_gone([server, grandchild])
    for pid in left:  # a failure leaves nothing running either
        os.kill(pid, signal.SIGKILL)
    assert left == []


def test_a_server_prompt_works_as_the_first_line_of_one_shot_and_interactive(
    make_agent: Any, model_server: ProtocolServer
) -> None:
    agent = make_agent(
        MODEL
        + f"""\
mcp:
  notes:
    command: {sys.executable}
    args: [notes_server.py]
    tools: [search]
"""
    )
    for args, stdin in (
        (["/mcp__notes__summarize cats"], ""),
        (["-i"], "/mcp__notes__summarize cats\n"),
    ):
        model_server.reset()
        model_server.enqueue(text_reply("summary"))
        done = subprocess.run(
            agent.command(*args),
            input=stdin,
            capture_output=True,
            text=True,
            env=agent.env,
            cwd=agent.workdir,
            timeout=90,
        )
        assert "unknown command" not in done.stdout + done.stderr, (args, done.stdout, done.stderr)
        assert done.returncode == 0, (args, done.stderr)
        [request] = model_server.requests
        assert "Summarize what the notes say about cats." in json.dumps(request.json["messages"])
    assert wait_gone(agent.server_pids()) == []

"""An MCP tool is asked about like a built-in, with what its server says about it (the
tool's annotations); approving the held call runs it once."""

from __future__ import annotations

import sys
from typing import Any

from harnessc.testing import ProtocolServer

from .mcpkit import MODEL, text_reply, tool_reply, wait_gone


def test_an_mcp_call_is_asked_about_with_its_servers_annotations(
    make_agent: Any, model_server: ProtocolServer
) -> None:
    agent = make_agent(
        MODEL
        + f"""\
permissions: {{default: ask}}
mcp:
  notes:
    command: {sys.executable}
    args: [notes_server.py]
"""
    )
    model_server.enqueue(tool_reply(("c1", "mcp__notes__search", {"query": "hello"})))
    paused = agent.run("search the notes")
    assert paused.returncode == 3, paused.stderr
    assert (
        "permission needed: mcp__notes__search (default: ask; notes says: read-only, "
        "closed world); call c1" in paused.stderr
    )
    assert "--approve c1" in paused.stderr
    model_server.enqueue(text_reply("found it"))
    done = agent.run("--continue", "--approve", "c1")
    assert done.returncode == 0, done.stderr
    assert "found 'hello'" in str(model_server.requests[-1].json["messages"])
    assert wait_gone(agent.server_pids()) == []

"""A spec sub-agent that declares the MCP server its parent declares uses the parent's
running server (one process), not a second one."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from .kit import MODEL, Tree, task, text_reply, tool_reply, tool_texts

pytest.importorskip("mcp")

SERVER = Path(__file__).resolve().parents[1] / "mcp" / "notes_server.py"

MCP = f"""\
mcp:
  notes:
    command: {sys.executable}
    args: [notes_server.py]
    env: {{NOTES_DIR: ./notes}}
"""


def test_a_sub_agent_shares_its_parents_mcp_server(tree: Tree) -> None:
    shutil.copy(SERVER, tree.root / "notes_server.py")
    pids = tree.root / "pids"
    pids.mkdir()
    tree.env["MCP_PID_DIR"] = str(pids)
    tree.write(
        "lead.yaml",
        f"version: 1\nname: lead\ndescription: The lead.\n{MODEL}system_prompt: You are LEAD.\n"
        f"{MCP}agents:\n  reviewer: {{spec: reviewer.yaml}}\n",
    )
    tree.write(
        "reviewer.yaml",
        f"version: 1\nname: reviewer\ndescription: Looks things up.\n{MODEL}"
        f"system_prompt: You are REVIEWER.\n{MCP}",
    )
    tree.build()

    def lead(messages: list[dict[str, Any]]) -> Any:
        if not tool_texts(messages):
            return tool_reply(task("h1", "reviewer", "Find the release notes"))
        return text_reply("LEAD | " + tool_texts(messages)[0])

    def reviewer(messages: list[dict[str, Any]]) -> Any:
        if not tool_texts(messages):
            return tool_reply(("m1", "mcp__notes__search", {"query": "release"}))
        return text_reply("REVIEWER | " + tool_texts(messages)[0])

    tree.scripts.rules.update(LEAD=lead, REVIEWER=reviewer)
    done = tree.run("Go", timeout=90)
    assert done.returncode == 0, done.stderr
    assert "REVIEWER | found 'release'" in done.stdout
    assert len(list(pids.iterdir())) == 1  # one notes server for both agents

"""The command line's --model and --base-url (and $HARNESSC_BASE_URL) reach the whole
tree: a sub-agent that inherits its parent's model uses the one --model chose; one with
a model of its own keeps it; --base-url points every agent's models at one server.
Two real local servers; each request is checked for the server and model it went to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from harnessc.testing import ProtocolServer

from .kit import Tree, task, text_reply, tool_reply, tool_texts

LEAD = """\
version: 1
name: lead
description: Hands work to three sub-agents.
models:
  main:
    provider: openai
    id: main-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
  alt:
    provider: openai
    id: alt-model
    base_url: ${ALT_BASE_URL}
    api_key_env: TEST_API_KEY
system_prompt: You are LEAD.
tools: [read]
agents:
  explorer: {from: explorer.md}
  pinned: {from: pinned.md}
  reviewer: {spec: reviewer.yaml}
"""

EXPLORER_MD = """\
---
name: explorer
description: Explores on the parent's model.
tools: Read
model: inherit
---

You are EXPLORER.
"""

PINNED_MD = """\
---
name: pinned
description: Explores on the main model, whatever the parent uses.
tools: Read
model: main
---

You are PINNED.
"""

REVIEWER = """\
version: 1
name: reviewer
description: Reviews on a model of its own.
models:
  own:
    provider: openai
    id: review-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
system_prompt: You are REVIEWER.
"""


@pytest.fixture
def other() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


def lead(messages: list[dict[str, Any]]) -> Any:
    if not tool_texts(messages):
        return tool_reply(
            task("h1", "explorer", "Explore"),
            task("h2", "pinned", "Explore"),
            task("h3", "reviewer", "Review"),
        )
    return text_reply("LEAD DONE")


def setup(tree: Tree, other: ProtocolServer) -> None:
    tree.write("lead.yaml", LEAD)
    tree.write("explorer.md", EXPLORER_MD)
    tree.write("pinned.md", PINNED_MD)
    tree.write("reviewer.yaml", REVIEWER)
    tree.build()
    tree.scripts.rules.update(
        LEAD=lead,
        EXPLORER=lambda m: text_reply("explored"),
        PINNED=lambda m: text_reply("pinned"),
        REVIEWER=lambda m: text_reply("reviewed"),
    )
    other.set_handler(tree.scripts)  # the same scripts answer on both servers


def seen_on(server: ProtocolServer) -> set[tuple[str, str]]:
    """(agent marker, model id) of every request the server got."""
    out: set[tuple[str, str]] = set()
    for request in server.requests:
        body = request.json
        system = " ".join(
            str(m.get("content")) for m in body["messages"] if m["role"] in ("system", "developer")
        )
        marker = next(
            (n for n in ("LEAD", "EXPLORER", "PINNED", "REVIEWER") if f"You are {n}." in system),
            "?",
        )
        out.add((marker, body["model"]))
    return out


def test_model_reaches_the_sub_agents_that_inherit_it(tree: Tree, other: ProtocolServer) -> None:
    setup(tree, other)
    done = tree.run("--model", "alt", "Go", env={"ALT_BASE_URL": f"{other.url}/v1"})
    assert done.returncode == 0, done.stderr
    assert "LEAD DONE" in done.stdout
    assert seen_on(other) == {("LEAD", "alt-model"), ("EXPLORER", "alt-model")}
    assert seen_on(tree.server) == {("PINNED", "main-model"), ("REVIEWER", "review-model")}


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_base_url_points_every_agent_of_the_tree_at_one_server(
    tree: Tree, other: ProtocolServer, how: str
) -> None:
    setup(tree, other)
    url = f"{other.url}/v1"
    env = {"ALT_BASE_URL": f"{tree.server.url}/v1"}
    if how == "flag":
        done = tree.run("--base-url", url, "Go", env=env)
    else:
        done = tree.run("Go", env={**env, "HARNESSC_BASE_URL": url})
    assert done.returncode == 0, done.stderr
    assert "LEAD DONE" in done.stdout
    assert tree.server.requests == []
    assert seen_on(other) == {
        ("LEAD", "main-model"),
        ("EXPLORER", "main-model"),
        ("PINNED", "main-model"),
        ("REVIEWER", "review-model"),
    }


MODES_LEAD = """\
version: 1
name: lead
description: Hands work to two sub-agents.
models:
  main:
    provider: openai
    id: main-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
system_prompt: You are LEAD.
tools: [read, write]
agents:
  writer: {spec: writer.yaml}
  careful: {from: careful.md}
"""

WRITER = """\
version: 1
name: writer
description: Writes a file.
models:
  own:
    provider: openai
    id: writer-model
    base_url: ${TEST_BASE_URL}
    api_key_env: TEST_API_KEY
system_prompt: You are WRITER.
tools: [write]
"""

CAREFUL_MD = """\
---
name: careful
description: Writes a file, in plan mode.
tools: Write
permissionMode: plan
---

You are CAREFUL.
"""


def writes(name: str) -> Any:
    def script(messages: list[dict[str, Any]]) -> Any:
        texts = tool_texts(messages)
        if not texts:
            return tool_reply(("w1", "write", {"path": name, "content": "x"}))
        return text_reply(f"{name}: {texts[-1]}")

    return script


def modes_tree(tree: Tree) -> None:
    tree.write("lead.yaml", MODES_LEAD)
    tree.write("writer.yaml", WRITER)
    tree.write("careful.md", CAREFUL_MD)
    tree.build()

    def lead(messages: list[dict[str, Any]]) -> Any:
        if not tool_texts(messages):
            return tool_reply(task("h1", "writer", "Write"), task("h2", "careful", "Write"))
        return text_reply("LEAD DONE")

    tree.scripts.rules.update(LEAD=lead, WRITER=writes("w.txt"), CAREFUL=writes("c.txt"))


def test_permission_mode_plan_reaches_every_sub_agent(tree: Tree) -> None:
    modes_tree(tree)
    done = tree.run("--permission-mode", "plan", "Go")
    assert done.returncode == 0, done.stderr
    assert "LEAD DONE" in done.stdout
    assert not (tree.root / "w.txt").exists()
    assert not (tree.root / "c.txt").exists()
    # the hand-overs ran; the sub-agents' writes were denied by the plan mode
    handed = " ".join(tool_texts(tree.server.requests[-1].json["messages"]))
    assert "w.txt: " in handed and "c.txt: " in handed
    assert handed.count("does not run in plan") == 2


def test_a_sub_agents_stricter_mode_holds_under_a_looser_one(tree: Tree) -> None:
    modes_tree(tree)
    done = tree.run("--permission-mode", "accept-edits", "Go")
    assert done.returncode == 0, done.stderr
    assert (tree.root / "w.txt").exists()  # the writer runs in the command line's mode
    assert not (tree.root / "c.txt").exists()  # careful keeps its own plan mode

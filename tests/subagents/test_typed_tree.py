"""Typed output in a tree of agents: the lead's ``output:`` is the lead's alone. A Claude
Code subagent file answers in plain text (it has no output of its own), a spec
sub-agent with its own ``output:`` answers with its own schema, and one without answers
in plain text; the lead ends with its own typed value."""

from __future__ import annotations

import json
from typing import Any

from .kit import EXPLORER_MD, MODEL, Tree, task, text_reply, tool_reply, tool_texts

LEAD = f"""\
version: 1
name: lead
description: Plans a change and hands parts of it to sub-agents.
{MODEL}system_prompt: You are LEAD. Hand work to your sub-agents.
tools: [read, grep, ls, find]
agents:
  reviewer:
    spec: reviewer.yaml
  checker:
    spec: checker.yaml
  code-explorer:
    from: .claude/agents/code-explorer.md
output:
  mode: tool
  retries: 0
  schema:
    type: object
    properties: {{summary: {{type: string}}}}
    required: [summary]
"""

REVIEWER = f"""\
version: 1
name: reviewer
description: Reviews a change and reports problems.
{MODEL}system_prompt: You are REVIEWER. Report problems, most important first.
tools: [read]
output:
  mode: prompted
  retries: 0
  schema:
    type: object
    properties: {{ok: {{type: boolean}}, problems: {{type: integer}}}}
    required: [ok, problems]
"""

CHECKER = f"""\
version: 1
name: checker
description: Checks that the change builds.
{MODEL}system_prompt: You are CHECKER. Say whether it builds.
tools: [read]
"""


def _tool_names(request: dict[str, Any]) -> list[str]:
    return sorted(t["function"]["name"] for t in request.get("tools") or [])


def test_each_agent_of_a_typed_tree_answers_in_its_own_shape(tree: Tree) -> None:
    tree.write("lead.yaml", LEAD)
    tree.write("reviewer.yaml", REVIEWER)
    tree.write("checker.yaml", CHECKER)
    tree.write(".claude/agents/code-explorer.md", EXPLORER_MD)
    tree.build()

    def lead(messages: list[dict[str, Any]]) -> Any:
        results = tool_texts(messages)
        if not results:
            return tool_reply(
                task("h1", "reviewer", "Review the change in app.py"),
                task("h2", "code-explorer", "Trace the login feature"),
                task("h3", "checker", "Does it build?"),
            )
        summary = " | ".join(r.split("\n\n")[0] for r in results)
        return tool_reply(("f1", "final_result", {"summary": summary}))

    tree.scripts.rules.update(
        LEAD=lead,
        REVIEWER=lambda m: text_reply('{"ok": false, "problems": 2}'),
        EXPLORER=lambda m: text_reply("login: auth.py, session.py"),
        CHECKER=lambda m: text_reply("It builds."),
    )
    done = tree.run("Ship the login change")
    assert done.returncode == 0, done.stderr
    value = json.loads(done.stdout)
    assert value == {
        "summary": '{"ok": false, "problems": 2} | login: auth.py, session.py | It builds.'
    }

    def request_of(marker: str) -> dict[str, Any]:
        [body] = [r.json for r in tree.server.requests if marker in json.dumps(r.json)]
        return body

    # The Claude Code file's sub-agent: its own tools, no final_result, free to answer text.
    explorer = request_of("You are EXPLORER")
    assert _tool_names(explorer) == ["find", "grep", "ls", "read"]
    assert "tool_choice" not in explorer and "response_format" not in explorer
    assert "summary" not in json.dumps(explorer["messages"][0])
    # The spec sub-agent with an output: its own schema, in its own mode (prompted).
    reviewer = request_of("You are REVIEWER")
    assert _tool_names(reviewer) == ["read"]
    system = json.dumps(reviewer["messages"][0])
    assert "problems" in system and "summary" not in system
    # The spec sub-agent without one: plain text.
    checker = request_of("You are CHECKER")
    assert _tool_names(checker) == ["read"] and "tool_choice" not in checker
    # The lead: its own final_result.
    lead_first = next(
        r.json for r in tree.server.requests if "You are LEAD" in json.dumps(r.json["messages"][0])
    )
    assert "final_result" in _tool_names(lead_first)
    assert lead_first["tool_choice"] == "required"

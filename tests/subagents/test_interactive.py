"""The interactive prompt (-i) asks the user about a sub-agent's permission ``ask`` as it
asks about its own, y / n / always, instead of pausing the run; an "always" answered
inside a sub-agent holds for the rest of the session."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli.clikit import Agent, Terminal

from .kit import MODEL, Tree, task, text_reply, tool_reply, tool_texts

LEAD = f"""\
version: 1
name: lead
description: Hands the release to the checker.
{MODEL}system_prompt: You are LEAD.
agents:
  checker: {{spec: checker.yaml}}
"""

CHECKER = f"""\
version: 1
name: checker
description: Checks a release.
{MODEL}system_prompt: You are CHECKER.
tools: [bash]
permissions:
  default: ask
"""


def lead(messages: list[dict[str, Any]]) -> Any:
    """A prompt names files: one hand-over each (a reply's hand-overs run side by side),
    then the checkers' answers."""
    last = messages[-1]
    if last["role"] == "user":
        asked = sum(1 for m in messages if m["role"] == "user")
        names = str(last["content"]).split()
        return tool_reply(*(task(f"h{asked}-{n}", "checker", n) for n in names))
    answers: list[str] = []
    for message in reversed(messages):
        if message["role"] != "tool":
            break
        answers.insert(0, str(message["content"]).split("\n")[0])
    return text_reply("LEAD DONE | " + " | ".join(answers))


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def test_a_sub_agent_ask_is_asked_at_the_prompt_and_always_holds_for_the_session(
    tree: Tree, terminals: list[Terminal]
) -> None:
    def checker(messages: list[dict[str, Any]]) -> Any:
        name = str(messages[-1]["content"]) if messages[-1]["role"] == "user" else ""
        if name:  # the hand-over prompt: the file to make
            return tool_reply(("b1", "bash", {"command": f"touch {tree.root / name}"}))
        return text_reply("CHECKER: " + tool_texts(messages)[0].strip())

    tree.write("lead.yaml", LEAD)
    tree.write("checker.yaml", CHECKER)
    tree.build()
    tree.scripts.rules.update(LEAD=lead, CHECKER=checker)
    agent = Agent(
        path=tree.root / "generated" / "lead.py",
        sessions=tree.root / ".harnessc" / "sessions",
        workdir=tree.root,
        env={**tree.env, "NO_COLOR": "1"},
    )
    term = Terminal(agent, "-i")
    terminals.append(term)
    term.expect_prompt(timeout=20)
    term.sendline("released")
    term.expect(f"[permission] Bash(touch {tree.root / 'released'})")
    term.expect("(in lead > checker)")
    term.expect("allow? [y]es / [n]o / [a]lways")
    term.sendline("a")
    term.expect("LEAD DONE | CHECKER: (no output)")
    assert (tree.root / "released").exists()
    assert "paused" not in term.expect_prompt()

    # "always" holds for the rest of the session: the next hand-over's same call runs
    (tree.root / "released").unlink()
    term.sendline("released")
    before = term.expect("LEAD DONE | CHECKER: (no output)")
    assert "[permission]" not in before and "paused" not in before
    assert (tree.root / "released").exists()
    term.expect_prompt()

    # two sub-agents side by side ask one after the other
    term.sendline("alpha beta")
    term.expect("allow? [y]es / [n]o / [a]lways")
    term.sendline("y")
    term.expect("allow? [y]es / [n]o / [a]lways")
    term.sendline("n")
    done = term.expect("LEAD DONE")
    term.expect_prompt()
    made = sorted(n for n in ("alpha", "beta") if (tree.root / n).exists())
    assert len(made) == 1, done
    term.eof()
    assert term.wait() == 0
    assert "denied by the user" in term.output


def test_a_sub_agent_ask_a_one_shot_run_paused_on_is_answered_in_the_interactive_prompt(
    tree: Tree, terminals: list[Terminal]
) -> None:
    def checker(messages: list[dict[str, Any]]) -> Any:
        name = str(messages[-1]["content"]) if messages[-1]["role"] == "user" else ""
        if name:
            return tool_reply(("b1", "bash", {"command": f"touch {tree.root / name}"}))
        return text_reply("CHECKER: " + tool_texts(messages)[0].strip())

    tree.write("lead.yaml", LEAD)
    tree.write("checker.yaml", CHECKER)
    tree.build()
    tree.scripts.rules.update(LEAD=lead, CHECKER=checker)
    paused = tree.run("released")
    assert paused.returncode == 3, paused.stderr
    agent = Agent(
        path=tree.root / "generated" / "lead.py",
        sessions=tree.root / ".harnessc" / "sessions",
        workdir=tree.root,
        env={**tree.env, "NO_COLOR": "1"},
    )
    term = Terminal(agent, "-i", "--continue")
    terminals.append(term)
    # the question is wrapped to the terminal's 120 columns when the path makes it longer
    asked = term.expect("(b1) was held: allow it?", timeout=20)
    assert f"Bash(touch {tree.root / 'released'})" in asked.replace("\r\n", "").replace("\n", "")
    term.sendline("y")
    term.expect("LEAD DONE | CHECKER: (no output)")
    term.expect_prompt()
    assert (tree.root / "released").exists()
    term.eof()
    assert term.wait() == 0

"""Replies on a terminal are rendered (rich); piped, --json and NO_COLOR runs stay plain."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from harnessc.testing import ProtocolServer

from .clikit import Agent, Terminal, text_reply

pytest.importorskip("rich")

MARKDOWN = ["# Plan\n\n", "Run **this**:\n\n", "```python\nprint('hi')\n```\n"]
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()


def test_a_reply_on_a_terminal_is_rendered_markdown(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(text_reply(*MARKDOWN))
    term = Terminal(agent, "--no-session", "show me")
    terminals.append(term)
    assert term.wait() == 0
    screen = term.output
    assert "\x1b[" in screen  # colour and styles
    plain = ESCAPE.sub("", screen)
    assert "Plan" in plain and "# Plan" not in plain  # a heading, not its markup
    assert "**this**" not in plain and "this" in plain
    assert "```" not in plain and "print('hi')" in ESCAPE.sub("", plain)
    assert "[usage]" in plain


def test_no_color_and_pipes_get_the_text_as_written(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(text_reply(*MARKDOWN), text_reply(*MARKDOWN))
    term = Terminal(agent, "--no-session", "show me", env={"NO_COLOR": "1"})
    terminals.append(term)
    assert term.wait() == 0
    assert "# Plan" in term.output and "```python" in term.output
    piped = agent.run("--no-session", "show me")
    assert piped.stdout == "".join(MARKDOWN)

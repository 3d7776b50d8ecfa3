"""Replies on a terminal are rendered (rich); piped, --json and NO_COLOR runs stay plain."""

from __future__ import annotations

import re

import pytest

from harnessc.testing import ProtocolServer

from .clikit import Agent, Terminal, text_reply, tool_reply

pytest.importorskip("rich")

MARKDOWN = ["# Plan\n\n", "Run **this**:\n\n", "```python\nprint('hi')\n```\n"]
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


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


def _imported(output: str) -> set[str]:
    """The modules a run imported, from its ``-X importtime`` lines (on the terminal,
    where they may be interleaved with the reply's output)."""
    return set(re.findall(r"import time:\s+\d+ \|\s+\d+ \| *([\w.]+)", output))


def test_a_plain_reply_loads_no_markdown_stack_and_a_markdown_one_does(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(text_reply("Hi", " there, all is well."), text_reply(*MARKDOWN))
    profile = {"PYTHONPROFILEIMPORTTIME": "1"}
    plain_run = Terminal(agent, "--no-session", "hello", env=profile)
    terminals.append(plain_run)
    assert plain_run.wait() == 0
    assert "Hi there, all is well." in ESCAPE.sub("", plain_run.output)
    plain = _imported(plain_run.output)
    assert "harnessc.runtime.cli.render" in plain  # the rendering printer ran
    assert "markdown_it" not in plain and "rich.markdown" not in plain

    markdown_run = Terminal(agent, "--no-session", "show me", env=profile)
    terminals.append(markdown_run)
    assert markdown_run.wait() == 0
    assert "markdown_it" in _imported(markdown_run.output)
    shown = ESCAPE.sub("", markdown_run.output)
    assert "# Plan" not in shown and "**this**" not in shown and "```" not in shown
    code_line = next(line for line in markdown_run.output.splitlines() if "print" in line)
    assert code_line.count("\x1b[") >= 3, repr(code_line)  # highlighted: tokens coloured


def test_an_edit_shows_its_diff_and_tool_lines_are_dimmed(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    (agent.workdir / "notes.txt").write_text("hello world\nbye\n")
    edit = {"path": "notes.txt", "edits": [{"old_text": "world", "new_text": "there"}]}
    server.enqueue(tool_reply(("call_1", "edit", edit)), text_reply("edited"))
    term = Terminal(agent, "--no-session", "fix it", env={"AGENT_EDIT": "1"})
    terminals.append(term)
    assert term.wait() == 0
    assert (agent.workdir / "notes.txt").read_text() == "hello there\nbye\n", term.output
    screen = term.output
    removed = next(line for line in screen.splitlines() if "-hello world" in line)
    added = next(line for line in screen.splitlines() if "+hello there" in line)
    assert "\x1b[" in removed and "\x1b[" in added  # the diff is coloured
    assert re.search(r"\x1b\[2m\[edit\] notes\.txt", screen)  # the tool line is dimmed
    assert "edited" in ESCAPE.sub("", screen)


@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        ("Hi there, all is well.", False),
        ("It is 5 - 3 = 2, e.g. 3.5 apples; 50% off?", False),
        ("-5 degrees outside", False),
        ("**bold**", True),
        ("a `tick`", True),
        ("# Heading", True),
        ("- item", True),
        ("1. first", True),
        ("Title\n---", True),
        ("    indented code", True),
        ("see [docs](https://example.com)", True),
        ("snake_case", True),  # a false alarm costs only the import
    ],
)
def test_markdown_syntax_is_recognised(text: str, markdown: bool) -> None:
    from harnessc.runtime.cli.render import looks_like_markdown

    assert looks_like_markdown(text) is markdown

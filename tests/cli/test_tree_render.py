"""/tree's picture: a tree move's marker entry is no branch of its own."""

from __future__ import annotations

from harnessc.runtime.cli.repl.tree import render_tree
from harnessc.runtime.core.messages import AssistantMessage, TextContent, UserMessage
from harnessc.runtime.session import Session


def test_a_move_marker_does_not_split_the_chain() -> None:
    session = Session()
    first = session.append_message(UserMessage("first question"))
    session.append_message(AssistantMessage(content=[TextContent("first answer")]))
    before = render_tree(session)
    session.move_to(first.id)  # back to the question: a harnessc.leaf marker under it
    after = render_tree(session)
    assert len(after) == len(before) == 2
    assert not any("+ " in line for line in after), after  # still one chain, no branch
    assert after[0].endswith("<- current")

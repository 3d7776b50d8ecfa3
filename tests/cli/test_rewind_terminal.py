"""Rewind in the interactive mode on a pseudo-terminal: /rewind lists the checkpoints and
what each would change; /rewind N and /tree show the diff and ask what moves."""

from __future__ import annotations

from harnessc.testing import ProtocolServer

from .clikit import Agent, Terminal, text_reply, tool_reply

BASH_ALLOWED = '{"allow": ["Bash(*)"]}'


def test_rewind_asks_what_moves_and_tree_takes_a_mode(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", env={"AGENT_CHECKPOINTS": "1", "AGENT_PERMISSIONS": BASH_ALLOWED})
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(
        tool_reply(("c1", "bash", {"command": "printf one > f.txt"})), text_reply("did one")
    )
    term.sendline("first")
    term.expect("did one")
    term.expect_prompt()
    server.enqueue(
        tool_reply(("c2", "bash", {"command": "printf two > f.txt && printf x > g.txt"})),
        text_reply("did two"),
    )
    term.sendline("second")
    term.expect("did two")
    term.expect_prompt()

    term.sendline("/rewind")
    listing = term.expect_prompt()
    assert "checkpoints before recent tool batches" in listing
    assert "before bash: 2 path(s) would change" in listing and "f.txt, g.txt" in listing

    term.sendline("/rewind 1")
    shown = term.expect("move [b]oth the conversation and the files")
    assert "M f.txt" in shown and "D g.txt" in shown and "-two" in shown and "+one" in shown
    assert (agent.workdir / "g.txt").exists()  # nothing changed before the answer
    term.sendline("b")
    done = term.expect_prompt()
    assert "rewound the files and conversation" in done
    assert (agent.workdir / "f.txt").read_text() == "one"
    assert not (agent.workdir / "g.txt").exists()

    # the conversation went back too: the next prompt follows "second"'s question
    server.enqueue(text_reply("again"))
    term.sendline("third")
    term.expect("again")
    term.expect_prompt()
    users = [m["content"] for m in server.requests[-1].json["messages"] if m["role"] == "user"]
    assert users == ["first", "second", "third"]

    # /tree with a mode moves without asking; "nothing" leaves everything
    term.sendline("/tree")
    tree = term.expect_prompt()
    first = next(line for line in tree.splitlines() if "user: first" in line).split()[1]
    term.sendline(f"/tree {first} files")
    moved = term.expect_prompt()
    assert "rewound the files" in moved and "move [b]oth" not in moved
    assert not (agent.workdir / "f.txt").exists()
    term.sendline(f"/rewind {first}")
    term.expect("move [b]oth")
    term.sendline("n")
    assert "nothing changed" in term.expect_prompt()

    # /fork to an entry asks too; "both" forks and brings that entry's files back
    server.enqueue(tool_reply(("c3", "bash", {"command": "printf h > h.txt"})), text_reply("h"))
    term.sendline("fourth")
    term.expect("h")
    term.expect_prompt()
    term.sendline(f"/fork {first}")
    asked = term.expect("fork with [b]oth the conversation and the files")
    assert "D h.txt" in asked and (agent.workdir / "h.txt").exists()
    term.sendline("b")
    forked = term.expect_prompt()
    assert "new session" in forked and "-h" in forked  # the diff, shown before the move
    assert not (agent.workdir / "h.txt").exists()
    term.eof()
    assert term.wait() == 0

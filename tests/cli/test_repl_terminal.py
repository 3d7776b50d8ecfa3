"""The interactive mode on a pseudo-terminal: Ctrl-D during a run, the rendered status."""

from __future__ import annotations

from harnessc.testing import ProtocolServer

from .clikit import Agent, Terminal, text_reply, tool_reply


def test_ctrl_d_during_a_run_lets_it_finish_then_quits(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", env={"NO_COLOR": "1"})
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 1.5})), text_reply("finished it"))
    term.sendline("work a little")
    term.expect("slow seconds=1.5")
    term.expect("30 tokens")  # the status line's live figures (the first reply's usage)
    term.eof()
    term.expect("[quit] leaving when this run ends")
    term.expect("finished it")
    assert term.wait() == 0
    assert len(server.requests) == 2  # the run was not aborted
    assert "aborted" not in term.output

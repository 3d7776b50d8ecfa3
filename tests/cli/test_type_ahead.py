"""Text typed while a run goes: shown in the ``steer>`` line below the status line (never
on it), kept for the next prompt.

All on a pseudo-terminal: what was typed goes on at the next ``> `` prompt, Enter still
steers, and the terminal's modes are restored on every way out (the end, Ctrl-C,
SIGTERM). A one-shot run turns the tty's echo off instead.
"""

from __future__ import annotations

import re
import signal
import termios

from harnessc.testing import ProtocolServer

from .clikit import Agent, Terminal, text_reply, tool_reply

ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]")
TYPED = "jazz quiz"  # no "z" or "q" in anything the spinner or the tool lines print


def _echo_is_on(term: Terminal) -> bool:
    # On a pty, the master's tcgetattr reports the modes of the agent's side.
    return bool(termios.tcgetattr(term.fd)[3] & termios.ECHO)


def _last_user_message(server: ProtocolServer) -> str:
    messages = server.requests[-1].json["messages"]
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


def test_text_typed_during_a_run_stays_off_the_spinner_and_fills_the_next_prompt(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", env={"NO_COLOR": "1"})
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(
        tool_reply(("call_1", "slow", {"seconds": 1.5})),
        text_reply("first done"),
        text_reply("second done"),
    )
    term.sendline("start working")
    term.expect("slow seconds=1.5")  # the status line shows the running tool
    term.send(TYPED)
    screen = term.expect_screen(lambda lines: f"steer> {TYPED}" in lines)
    status = screen[screen.index(f"steer> {TYPED}") - 1]
    assert "slow" in status and "z" not in status, screen  # the status line stays clean
    term.expect("first done")
    term.expect_prompt()
    screen = term.expect_screen(lambda lines: f"> {TYPED}" in lines)  # pre-filled
    assert not [line for line in screen if "steer>" in line or "slow seconds" in line], screen
    term.send(" again\r")
    term.expect("second done")
    term.expect_prompt()
    assert _last_user_message(server) == "jazz quiz again"  # typed text + what followed
    assert "[steering]" not in term.output  # type-ahead is not steering
    term.eof()
    assert term.wait() == 0


def test_backspace_while_typing_ahead_and_enter_still_steers(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", env={"NO_COLOR": "1"})
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 1.5})), text_reply("steered"))
    term.sendline("start working")
    term.expect("slow seconds=1.5")
    term.send("check the logx\x7fs\r")  # a typo fixed with backspace, then Enter
    term.expect("[steering] queued: check the logs")
    term.expect("steered")
    term.expect_prompt()
    messages = server.requests[1].json["messages"]
    assert messages[-1] == {"role": "user", "content": "check the logs"}
    term.eof()
    assert term.wait() == 0


def test_ctrl_c_aborts_the_run_and_keeps_what_was_typed(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", env={"NO_COLOR": "1"})
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 30})), text_reply("after abort"))
    term.sendline("wait a long time")
    term.expect("slow seconds=30")
    term.send("zip it")
    term.interrupt()
    term.expect("[aborted] the session is kept")
    term.expect_prompt()
    term.expect("zip it")
    term.send("\r")
    term.expect("after abort")
    term.expect_prompt()
    assert _last_user_message(server) == "zip it"
    term.eof()
    assert term.wait() == 0


def test_sigterm_during_a_run_leaves_the_terminal_as_it_was(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", env={"NO_COLOR": "1"})
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 30})))
    term.sendline("wait a long time")
    term.expect("slow seconds=30")
    term.send("half typed")
    import os

    os.kill(term.pid, signal.SIGTERM)
    code = term.wait()
    assert code == 128 + signal.SIGTERM  # the run aborted, the REPL left in order
    assert _echo_is_on(term)  # echo and line editing are back for the shell
    assert termios.tcgetattr(term.fd)[3] & termios.ICANON


def test_a_one_shot_run_on_a_terminal_does_not_echo_keys_onto_the_spinner(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 1.5})), text_reply("all done"))
    term = Terminal(agent, "start working", env={"NO_COLOR": "1"})
    terminals.append(term)
    term.expect("slow seconds=1.5")  # the spinner shows the running tool
    term.send(TYPED)  # no Enter: the keys wait in the terminal's queue for the shell
    during = ESCAPE.sub("", term.expect("all done"))
    assert term.wait() == 0
    assert "z" not in during and "q" not in during, during
    assert "z" not in ESCAPE.sub("", term.output), term.output
    assert _echo_is_on(term)  # the shell gets its echo back


def test_sigterm_during_a_one_shot_run_gives_the_terminal_its_echo_back(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 30})))
    term = Terminal(agent, "wait a long time", env={"NO_COLOR": "1"})
    terminals.append(term)
    term.expect("slow seconds=30")
    assert not _echo_is_on(term)
    import os

    os.kill(term.pid, signal.SIGTERM)
    assert term.wait() == -signal.SIGTERM  # ended by the signal, as before
    assert _echo_is_on(term)

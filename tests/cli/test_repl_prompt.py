"""The interactive mode's prompt on a pseudo-terminal (prompt_toolkit): completion, history
across sessions, multi-line input, bracketed paste, Ctrl-C at the prompt and during a run;
piped input without prompt_toolkit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harnessc.testing import ProtocolServer

from .clikit import Agent, Terminal, text_reply, tool_reply

UP = "\x1b[A"
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def _last_user_message(server: ProtocolServer) -> str:
    messages = server.requests[-1].json["messages"]
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


def _open(
    agent: Agent, terminals: list[Terminal], *args: str, env: dict[str, str] | None = None
) -> Terminal:
    term = Terminal(agent, "-i", *args, env={"NO_COLOR": "1", **(env or {})})
    terminals.append(term)
    term.expect_prompt()
    return term


def test_tab_completes_commands_skills_templates_and_paths(
    agent: Agent, terminals: list[Terminal], tmp_path: Path
) -> None:
    resources = tmp_path / "resources"
    (resources / "templates").mkdir(parents=True)
    (resources / "skills" / "tidy").mkdir(parents=True)
    (resources / "templates" / "review.md").write_text(
        "---\ndescription: Review\n---\nReview $1.\n"
    )
    (resources / "skills" / "tidy" / "SKILL.md").write_text(
        "---\nname: tidy\ndescription: Tidy up code\n---\nRemove dead code.\n"
    )
    (agent.workdir / "notes-for-review.txt").write_text("x\n")
    term = _open(agent, terminals, env={"AGENT_RESOURCES": str(resources)})
    term.send("/he\t")
    term.expect_screen(lambda lines: "> /help" in lines)
    term.send("\r")
    assert "commands:" in term.expect_prompt()
    term.send("/skill:ti\t")
    term.expect_screen(lambda lines: "> /skill:tidy" in lines)
    term.send("\x15/revi\t")  # Ctrl-U empties the line first
    term.expect_screen(lambda lines: "> /review" in lines)
    term.send("\x15")
    term.send("read notes-for\t")
    term.expect_screen(lambda lines: "> read notes-for-review.txt" in lines)
    term.send("\x15")  # Ctrl-U: the line is empty again
    term.eof()
    assert term.wait() == 0


def test_history_is_recalled_with_the_up_arrow_in_a_later_session(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(text_reply("noted"), text_reply("noted again"))
    first = _open(agent, terminals, "--no-session")
    first.sendline("remember the milk")
    first.expect("noted")
    first.expect_prompt()
    first.eof()
    assert first.wait() == 0

    second = _open(agent, terminals, "--no-session")
    second.send(UP)
    second.expect_screen(lambda lines: "> remember the milk" in lines)
    second.send("\r")
    second.expect("noted again")
    second.expect_prompt()
    assert _last_user_message(server) == "remember the milk"
    second.eof()
    assert second.wait() == 0


def test_alt_enter_and_a_trailing_backslash_continue_the_input(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(text_reply("got three lines"))
    term = _open(agent, terminals)
    term.send("line one\x1b\r")  # Alt-Enter (Esc, Enter): a new line, not sent
    term.send("line two\\\r")  # a line ending in \ goes on too
    term.expect_screen(lambda lines: any(line.strip() == "" for line in lines[-3:]))
    term.send("line three\r")
    term.expect("got three lines")
    term.expect_prompt()
    assert _last_user_message(server) == "line one\nline two\nline three"
    assert len(server.requests) == 1
    term.eof()
    assert term.wait() == 0


def test_a_pasted_block_of_lines_is_one_prompt(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(text_reply("one answer"))
    term = _open(agent, terminals)
    term.send(f"{PASTE_START}first pasted\rsecond pasted\rthird pasted{PASTE_END}")
    term.expect_screen(lambda lines: any("third pasted" in line for line in lines))
    assert server.requests == []  # the newlines of a paste do not send it
    term.send("\r")
    term.expect("one answer")
    term.expect_prompt()
    assert _last_user_message(server) == "first pasted\nsecond pasted\nthird pasted"
    term.eof()
    assert term.wait() == 0


def test_ctrl_c_clears_the_line_at_the_prompt_and_aborts_a_run(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    server.enqueue(text_reply("only this"))
    term = _open(agent, terminals)
    term.send("a draft to throw away")
    term.expect_screen(lambda lines: "> a draft to throw away" in lines)
    term.interrupt()  # at the prompt: the line is cleared, the REPL stays
    term.expect_screen(lambda lines: ">" in lines and "> a draft to throw away" not in lines)
    term.interrupt()  # on an empty line: how to leave
    term.expect("(Ctrl-D or /quit to quit)")
    term.sendline("the real question")
    term.expect("only this")
    term.expect_prompt()
    assert _last_user_message(server) == "the real question"
    assert len(server.requests) == 1

    server.enqueue(tool_reply(("call_1", "slow", {"seconds": 30})))
    term.sendline("take your time")
    term.expect("slow seconds=30")
    term.interrupt()  # during a run: the run is aborted, the session kept
    term.expect("[aborted] the session is kept")
    term.expect_prompt()
    term.eof()
    assert term.wait() == 0


PROBE = """
import json, runpy, sys
sys.argv = [sys.argv[1], "-i"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def test_piped_input_runs_as_a_script_without_prompt_toolkit(
    agent: Agent, server: ProtocolServer
) -> None:
    import subprocess

    server.enqueue(text_reply("scripted reply"))
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(agent.path)],
        input="hello\n/quit\n",
        capture_output=True,
        text=True,
        env=agent.env,
        cwd=agent.workdir,
        timeout=30,
    )
    assert "scripted reply" in done.stdout, done.stderr
    modules = json.loads(done.stderr.rsplit("MODULES ", 1)[1])
    assert not [m for m in modules if m.split(".")[0] == "prompt_toolkit"]
    assert "harnessc.runtime.cli.repl.session" in modules  # the probe ran the REPL
    assert "harnessc.runtime.cli.repl.prompt" not in modules


def test_keys_typed_while_no_prompt_reads_wait_for_the_next_one(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    import termios
    import threading

    server.enqueue(text_reply("hello"))
    term = _open(agent, terminals)
    term.sendline("hi")
    term.expect("hello")
    term.expect_prompt()
    release = threading.Event()

    def held_summary(request: object) -> object:
        release.wait(timeout=30)  # the REPL waits for the model: no prompt reads meanwhile
        return text_reply("SUMMARY: said hi.")

    server.set_handler(held_summary)  # type: ignore[arg-type]
    try:
        term.sendline("/compact")
        term.expect_screen(lambda lines: len(server.requests) == 2)
        # Between two prompts the terminal stays raw: no echo, Ctrl-D is a key.
        assert not termios.tcgetattr(term.fd)[3] & termios.ECHO
        term.send("typed meanwhile")
    finally:
        release.set()
    term.expect("compacted: ")
    term.expect_screen(lambda lines: "> typed meanwhile" in lines)
    server.set_handler(None)
    term.send("\x15")
    term.eof()
    assert term.wait() == 0

"""Permission rules in runs: deny blocks, ask pauses without a terminal (exit 3) and
--approve / --deny CALL_ID continue it in another process; -i asks y / n / always."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from harnessc.testing import ProtocolServer

from .clikit import Agent, Terminal, text_reply, tool_reply

RULES = json.dumps(
    {
        "allow": ["Bash(echo *)"],
        "deny": ["Bash(rm -rf *)"],
        "default": "ask",
    }
)
ENV = {"AGENT_PERMISSIONS": RULES}


def _tool_texts(request: object) -> list[str]:
    return [str(m.get("content")) for m in request.json["messages"] if m["role"] == "tool"]  # type: ignore[attr-defined]


def test_allowed_and_denied_calls(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(
        tool_reply(
            ("c1", "bash", {"command": "echo fine"}), ("c2", "bash", {"command": "rm -rf /x"})
        ),
        text_reply("ok"),
    )
    done = agent.run("go", env=ENV)
    assert done.returncode == 0, done.stderr
    fine, refused = _tool_texts(server.requests[1])
    assert "fine" in fine
    assert "blocked" in refused and "denied by the rule Bash(rm -rf *)" in refused


def test_an_ask_without_a_terminal_pauses_and_approve_continues_elsewhere(
    agent: Agent, server: ProtocolServer, tmp_path: object
) -> None:
    marker = agent.workdir / "pushed"
    command = f"touch {marker}"
    server.enqueue(tool_reply(("c1", "bash", {"command": command})))
    paused = agent.run("push it", env=ENV)
    assert paused.returncode == 3, paused.stderr
    assert f"permission needed: Bash({command})" in paused.stderr
    hint = next(line for line in paused.stderr.splitlines() if "--approve c1" in line)
    assert "(or --deny c1)" in hint
    assert not marker.exists()

    # Another process: the held call itself runs, in place, once; no new model call
    # is needed to repeat it.
    server.enqueue(text_reply("pushed"))
    resumed = agent.run("--continue", "--approve", "c1", env=ENV)
    assert resumed.returncode == 0, resumed.stderr
    assert "approved c1: Bash(" in resumed.stderr
    assert marker.exists()
    assert len(server.requests) == 2
    [result] = [m for m in server.requests[1].json["messages"] if m["role"] == "tool"]
    assert result["tool_call_id"] == "c1" and "blocked" not in str(result["content"])
    bad = agent.run("--continue", "--approve", "nope", env=ENV)
    assert bad.returncode == 2 and "holds no call to approve or deny" in bad.stderr


def test_deny_continues_without_running_it(agent: Agent, server: ProtocolServer) -> None:
    marker = agent.workdir / "deployed"
    command = f"touch {marker}"
    server.enqueue(tool_reply(("c1", "bash", {"command": command})))
    assert agent.run("deploy", env=ENV).returncode == 3
    server.enqueue(text_reply("not deployed"))
    done = agent.run("--continue", "--deny", "c1", env=ENV)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert len(server.requests) == 2
    assert "denied by the user" in _tool_texts(server.requests[-1])[-1]


def test_plan_mode_refuses_everything_but_reading(agent: Agent, server: ProtocolServer) -> None:
    server.enqueue(tool_reply(("c1", "bash", {"command": "echo hi"})), text_reply("ok"))
    done = agent.run("--permission-mode", "plan", "go", env=ENV)
    assert done.returncode == 0, done.stderr
    assert "does not run in plan (read-only) mode" in _tool_texts(server.requests[1])[0]


def test_interactive_ask_y_n_always(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    term = Terminal(agent, "-i", env={**ENV, "NO_COLOR": "1"})
    terminals.append(term)
    term.expect_prompt()
    server.enqueue(tool_reply(("c1", "bash", {"command": "ls"})), text_reply("listed"))
    term.sendline("list")
    term.expect("[permission] Bash(ls)")
    term.expect("allow? [y]es / [n]o / [a]lways")
    term.sendline("a")
    term.expect("listed")
    term.expect_prompt()
    server.enqueue(tool_reply(("c2", "bash", {"command": "ls"})), text_reply("again"))
    term.sendline("list again")  # "always" remembered: no question this time
    term.expect("again")
    assert "[permission]" not in term.expect_prompt()
    server.enqueue(tool_reply(("c3", "bash", {"command": "whoami"})), text_reply("fine"))
    term.sendline("who")
    term.expect("allow? [y]es")
    term.sendline("n")
    term.expect("fine")
    assert "denied by the user" in _tool_texts(server.requests[-1])[-1]
    # a harness rebuilt around another session (/fork; `harnessc dev` after a recompile)
    # still asks here, and "always" still allows
    term.expect_prompt()
    term.sendline("/fork")
    term.expect_prompt()
    server.enqueue(tool_reply(("c4", "bash", {"command": "date"})), text_reply("dated"))
    term.sendline("what day is it")
    term.expect("allow? [y]es / [n]o / [a]lways")
    term.sendline("a")
    term.expect("dated")
    assert "blocked" not in _tool_texts(server.requests[-1])[-1]
    term.eof()
    assert term.wait() == 0


def test_an_edit_ask_shows_the_diff_before_the_question(
    agent: Agent, server: ProtocolServer, terminals: list[Terminal]
) -> None:
    target = agent.workdir / "notes.txt"
    target.write_text("one\ntwo\nthree\n")
    rules = json.dumps({"ask": ["Edit"], "default": "allow"})
    term = Terminal(
        agent, "-i", env={"AGENT_PERMISSIONS": rules, "AGENT_EDIT": "1", "NO_COLOR": "1"}
    )
    terminals.append(term)
    term.expect_prompt()
    edit = {"path": "notes.txt", "edits": [{"old_text": "two", "new_text": "TWO"}]}
    server.enqueue(tool_reply(("c1", "edit", edit)), text_reply("edited"))
    term.sendline("shout the second line")
    shown = term.expect("allow? [y]es / [n]o / [a]lways")
    assert "-two" in shown and "+TWO" in shown  # the change, before anything is written
    assert target.read_text() == "one\ntwo\nthree\n"
    term.sendline("y")
    term.expect("edited")
    assert target.read_text() == "one\nTWO\nthree\n"
    term.eof()
    assert term.wait() == 0


def test_a_rule_naming_no_tool_stops_the_agent_before_it_starts(
    agent: Agent, server: ProtocolServer
) -> None:
    rules = json.dumps({"deny": ["Bash(rm *)", "Bassh(curl *)"]})
    done = agent.run("go", env={"AGENT_PERMISSIONS": rules})
    assert done.returncode == 2, done.stderr
    assert "permission rule 'Bassh(curl *)' names no known tool or MCP server 'Bassh'" in (
        done.stderr
    )
    assert "did you mean 'Bash'?" in done.stderr
    assert "Traceback" not in done.stderr
    assert server.requests == []


def test_a_claude_code_tool_harnessc_lacks_is_a_warning(
    agent: Agent, server: ProtocolServer
) -> None:
    rules = json.dumps({"allow": ["WebFetch(domain:example.com)", "mcp__notes"]})
    server.enqueue(text_reply("ok"))
    done = agent.run("go", env={"AGENT_PERMISSIONS": rules})
    assert done.returncode == 0, done.stderr
    assert "[warning] permission rule 'WebFetch(domain:example.com)' names Claude Code's" in (
        done.stderr
    )


BLOCKING_SPEC = """\
version: 1
name: guarded
models:
  main: {provider: openai, id: test-model, base_url: "${TEST_BASE_URL}"}
tools: [bash]
permissions: {allow: ["Bash(echo *)"], default: ask}
hooks:
  tool_call:
    - matcher: bash
      command: ./no-rm.sh
session: {dir: sessions}
"""
NO_RM = """\
#!/bin/sh
if grep -q '"rm '; then echo "no rm here" >&2; exit 2; fi
exit 0
"""


class Guarded:
    """The spec above in tmp_path, run with ``harnessc run`` against the test server."""

    def __init__(self, server: ProtocolServer, root: Path) -> None:
        import os

        self.root = root
        (root / "guarded.yaml").write_text(BLOCKING_SPEC)
        hook = root / "no-rm.sh"
        hook.write_text(NO_RM)
        hook.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
        env["TEST_BASE_URL"] = f"{server.url}/v1"
        self.env = env

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from harnessc.cli import main; main()", *args],
            capture_output=True,
            text=True,
            cwd=self.root,
            env=self.env,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def block_then_hold(self, server: ProtocolServer) -> subprocess.CompletedProcess[str]:
        """A call the hook blocks (asked first under default: ask), then one held."""
        server.reset()
        server.enqueue(tool_reply(("c1", "bash", {"command": "rm notes"})), text_reply("no"))
        first = self.run("run", "guarded.yaml", "remove the notes")
        assert first.returncode == 0, first.stderr
        assert "no rm here" in first.stderr
        server.enqueue(tool_reply(("c2", "bash", {"command": "touch made"})))
        held = self.run("run", "guarded.yaml", "--continue", "make a file")
        assert held.returncode == 3, held.stderr
        return held


def test_a_call_a_hook_blocked_is_not_offered_for_approval_later(
    server: ProtocolServer, tmp_path: Path
) -> None:
    """Under default: ask, a call a command hook blocks was never held: the next pause
    names only the call it holds, and the line it prints continues the run."""
    project = Guarded(server, tmp_path)
    held = project.block_then_hold(server)
    hints = [line for line in held.stderr.splitlines() if line.startswith("continue with:")]
    assert len(hints) == 1 and "--approve c2" in hints[0], held.stderr
    assert not re.search(r"\bc1\b", held.stderr)  # a session id may hold "c1" in a word
    server.enqueue(text_reply("made"))
    pasted = hints[0].removeprefix("continue with: harnessc run ").split("  (or")[0].split()
    approved = project.run("run", *pasted)
    assert approved.returncode == 0, approved.stderr
    assert (tmp_path / "made").exists()


def test_the_terminal_asks_only_about_the_call_the_pause_holds(
    server: ProtocolServer, tmp_path: Path, terminals: list[Terminal]
) -> None:
    project = Guarded(server, tmp_path)
    project.block_then_hold(server)
    built = project.run("build", "guarded.yaml", "-o", "generated")
    assert built.returncode == 0, built.stderr
    module = Agent(
        path=tmp_path / "generated" / "guarded.py",
        sessions=tmp_path / "sessions",
        workdir=tmp_path,
        env={**project.env, "NO_COLOR": "1"},
    )
    term = Terminal(module, "--continue", "-i")
    terminals.append(term)
    asked = term.expect("was held: allow it? [y/N/always]")
    assert "(c2)" in asked and "(c1)" not in asked
    server.enqueue(text_reply("made"))
    term.sendline("y")
    term.expect("made")
    term.expect_prompt()
    term.eof()
    assert term.wait() == 0
    assert (tmp_path / "made").exists()

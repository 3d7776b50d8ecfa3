"""Bash permission rules read commands as bash does: a deny or ask rule names a command
anywhere in the line (after any separator, in substitutions, subshells, groups, bodies,
behind wrappers and quotes), an allow needs every command allowed and every file written
allowed, and what cannot be read asks. Some cases run the bash tool through a harness
to show the file survives."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, ToolResultMessage
from harnessc.runtime.core.options import ToolContextSource
from harnessc.runtime.permissions.gate import permission_hook
from harnessc.runtime.permissions.rules import PermissionRules, decide, remembered_rule
from harnessc.runtime.permissions.shell_rules import analyse
from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools.bash import create_bash_tool

CWD = "/work/project"
NO_RM = {"deny": ["Bash(rm *)", "Bash(rm:*)"]}
PYTEST_ONLY = {"allow": ["Bash(pytest *)"], "default": "deny"}
GIT_STATUS = {"allow": ["Bash(git status *)"], "deny": ["Bash(rm -rf *)"]}


def outcome(config: dict[str, Any], command: str, mode: str = "default") -> str:
    rules = PermissionRules.from_config(config)
    return decide(rules, "bash", {"command": command}, mode=mode, cwd=CWD).outcome


# The ways around `deny: [Bash(rm *), Bash(rm:*)]` of issue 26, and more of their kind.
DENIED = [
    "rm\tV",
    "rm V",
    "true & rm V",
    "ls |& rm V",
    "ls | rm V",
    "true; rm V",
    "true && rm V",
    "false || rm V",
    "ls\nrm V",
    "echo $(rm V)",
    "echo `rm V`",
    'echo "$(rm V)"',
    "x=$(rm V)",
    "export X=$(rm V)",
    "echo ${X:-$(rm V)}",
    "cat <<EOF\n$(rm V)\nEOF",
    "cat <(rm V)",
    "echo >(rm V)",
    "FOO=1 rm V",
    "bash -c 'rm V'",
    "sh -c 'rm V'",
    "zsh -c 'rm V'",
    "bash -lc 'rm V'",
    "bash -c \"eval 'rm V'\"",
    "eval rm V",
    "eval 'rm V'",
    "(rm V)",
    "{ rm V; }",
    "if true; then rm V; fi",
    "while true; do rm V; break; done",
    "for f in V; do rm $f; done",
    "case x in x) rm V;; esac",
    "f() { rm V; }; f",
    "[[ -f V ]] && rm V",
    "! rm V",
    "\\rm V",
    "command rm V",
    "builtin rm V",
    "/bin/rm V",
    "~/bin/rm V",
    "env rm V",
    "env -i FOO=1 rm V",
    "env -S 'rm V'",
    "'rm' V",
    '"rm" V',
    "r''m V",
    "$'rm' V",
    "$'\\x72m' V",
    "time rm V",
    "time -p rm V",
    "nice rm V",
    "nice -n 5 rm V",
    "exec rm V",
    "nohup rm V",
    "timeout 5 rm V",
    "timeout -s KILL 5 rm V",
    "sudo rm V",
    "sudo -u root rm V",
    "coproc rm V",
    "echo V | xargs rm",
    "echo V | xargs -I{} rm {}",
    "echo V | xargs -n 1 sh -c 'rm $0'",
    "find . -name V -delete",
    "find . -name V -exec rm {} \\;",
    "find . -name V -execdir rm {} +",
    "trap 'rm V' EXIT",
    "watch -n 1 rm V",
    "su -c 'rm V'",
    "busybox rm V",
    "shopt -s expand_aliases; alias r=rm\nr V",
    "r\\\nm V",  # bash joins r\<newline>m into rm
    "# it's a comment\nr\\\nm V",
    "cat <<EOF\n`rm V`\nEOF",
    "GIT_PAGER='rm V' git log",
    "export PAGER='rm V'; git log",
    "env GIT_PAGER='rm V' git log",
]


@pytest.mark.parametrize("command", DENIED)
def test_a_deny_rule_names_the_command_wherever_it_is(command: str) -> None:
    assert outcome(NO_RM, command) == "deny"
    assert outcome(NO_RM, command, "bypass") == "deny"  # deny holds in every mode


# What cannot be read asks: the command is known only when it runs.
UNREADABLE = [
    "$X V",
    "X=rm; $X V",
    "$(echo rm) V",
    "`echo rm` V",
    "echo rm V | bash",
    "bash <<EOF\nrm V\nEOF",
    "bash <<< 'rm V'",
    "/bin/r? V",
    "{rm,V}",
    'eval "$CMD"',
    'bash -c "$CMD"',
    "sh -c",
    "env $CMD V",
    "echo V | xargs $CMD",
    "if true; then",
    "echo 'unterminated",
    "echo x > $F",
    "sudo -s",
    "coproc { rm V; }",
    ". <(echo rm V)",
    "source /dev/stdin <<< 'rm V'",
    "bash /dev/stdin <<< 'rm V'",
    ': "${x:-`rm V`}"',
    "BASH_ENV=<(echo rm V) bash -c true",
    "GIT_PAGER=$P git log",
]


@pytest.mark.parametrize("command", UNREADABLE)
def test_what_cannot_be_read_asks(command: str) -> None:
    assert outcome(NO_RM, command) == "ask"
    assert outcome({**NO_RM, "default": "allow", "allow": ["Bash"]}, command) == "ask"
    assert outcome(NO_RM, command, "bypass") == "ask"  # the deny rule cannot be checked
    assert outcome({}, command, "bypass") == "allow"  # no deny rule: bypass runs it


@pytest.mark.parametrize(
    "command",
    [
        "echo 'rm V'",
        "echo 'a && rm V'",
        "grep -r 'rm V' .",
        "git commit -m 'rm V is gone'",
        "ls",
        "command -v rm",
        "bash build.sh",
        "echo hi > /dev/null 2>&1",
        "cat <<'EOF'\n$(rm V)\nEOF",  # a quoted here-document is text
        "cat <<EOF\n\\`rm V\\` $HOME\nEOF",
        "echo \\`rm V\\`",
        "echo 'x\\\ny'",
        "ls \\\n  -la",
        "PAGER=cat git log",
    ],
)
def test_text_that_only_mentions_rm_runs(command: str) -> None:
    assert outcome(NO_RM, command) == "allow"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest -q", "allow"),
        ("pytest", "allow"),
        ("pytest & rm V", "deny"),
        ("pytest $(rm V)", "deny"),
        ("pytest `rm V`", "deny"),
        ("pytest <(rm V)", "deny"),
        ("pytest; rm V", "deny"),
        ("pytest -q 'tests/a b.py'", "allow"),
        ("pytest -q > report.txt", "deny"),  # writing a file is a write: default deny
        ("$(pytest) -q", "ask"),
    ],
)
def test_an_allow_needs_every_command_allowed(command: str, expected: str) -> None:
    assert outcome(PYTEST_ONLY, command) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", "allow"),
        ("git status -s", "allow"),
        ("git status & rm -rf ~", "deny"),
        ("git status && rm -rf ~", "deny"),
        ("echo $(rm -rf ~)", "deny"),
        ("cat <(rm -rf ~)", "deny"),
        ("(rm -rf ~)", "deny"),
        ("git status; (cd / && rm -rf ~)", "deny"),
        ("echo x > ~/.bashrc", "ask"),
        ("git status > ~/.bashrc", "ask"),
        ("git status >> /etc/profile", "ask"),
        ("echo x > notes.txt", "allow"),  # in the working folder: as the write tool
        ("git status 2>&1 | tee /dev/null", "allow"),
    ],
)
def test_the_issue_example_rules(command: str, expected: str) -> None:
    assert outcome(GIT_STATUS, command) == expected


def test_a_redirection_needs_write_permission_for_its_file() -> None:
    echo = {"allow": ["Bash(echo *)"], "default": "ask"}
    assert outcome(echo, "echo hi") == "allow"
    assert outcome(echo, "echo 'a && b'") == "allow"  # one quoted argument
    assert outcome(echo, "echo a && b") == "ask"
    assert outcome(echo, "echo x > ~/.bashrc") == "ask"
    assert outcome(echo, "echo x > out.txt") == "ask"  # no Write rule: the default
    assert outcome({**echo, "allow": ["Bash(echo *)", "Write(~/.bashrc)"]}, "echo x > ~/.bashrc")
    assert outcome({**echo, "deny": ["Edit(~/.bashrc)"]}, "echo x >> ~/.bashrc") == "deny"
    assert outcome({**echo, "deny": ["Edit(~/.bashrc)"]}, "echo x > ~/.bashrc", "bypass") == (
        "deny"
    )
    assert outcome({**echo, "allow": ["Bash(echo *)", "Write(**)"]}, "echo x > out.txt") == (
        "allow"
    )
    assert outcome(echo, "echo x > ~/.bashrc", "bypass") == "allow"


def test_wrappers_are_transparent_to_allow_rules_except_sudo() -> None:
    ls_only = {"allow": ["Bash(ls *)"], "default": "deny"}
    assert outcome(ls_only, "nice -n 5 ls -l") == "allow"
    assert outcome(ls_only, "FOO=1 ls") == "allow"
    assert outcome(ls_only, "bash -c 'ls -l'") == "allow"
    assert outcome(ls_only, "timeout 5 ls") == "allow"
    assert outcome(ls_only, "sudo ls") == "deny"  # sudo itself needs an allow rule
    assert outcome(ls_only, "PATH=/tmp/evil ls") == "deny"  # another ls: not vouched for
    assert outcome(ls_only, "LD_PRELOAD=x.so ls") == "deny"
    assert outcome(ls_only, "env PATH=/tmp/evil ls") == "deny"
    assert outcome(ls_only, "env FOO=1 ls") == "allow"
    assert outcome(ls_only, "find . -exec ls {} \\;") == "deny"  # find is not allowed
    find_ls = {"allow": ["Bash(ls *)", "Bash(find *)"], "default": "deny"}
    assert outcome(find_ls, "find . -exec ls {} \\;") == "allow"
    assert outcome(find_ls, "find . -name '*.pyc' -delete") == "deny"  # an rm -rf
    assert outcome(find_ls, "/bin/ls") == "deny"  # an allow names the command as written


def test_claude_code_precedence_deny_then_ask_then_allow() -> None:
    strict = {"ask": ["Bash"], "allow": ["Bash(mkdir:*)"]}
    assert outcome(strict, "mkdir -p build") == "ask"
    push = {"ask": ["Bash(git push *)"], "allow": ["Bash(git push origin main)"]}
    assert outcome(push, "git push origin main") == "ask"
    assert outcome({"deny": ["Bash(git *)"], "allow": ["Bash(git status)"]}, "git status") == (
        "deny"
    )
    rules = PermissionRules.from_config({"ask": ["Write(**)"], "allow": ["Write(notes.md)"]})
    assert decide(rules, "write", {"path": "notes.md"}, cwd=CWD).outcome == "ask"
    assert decide(rules, "write", {"path": "notes.md"}, mode="accept-edits", cwd=CWD).outcome == (
        "allow"
    )


def test_an_always_answer_allows_that_exact_line_only() -> None:
    rules = PermissionRules.from_config({"default": "ask"})
    always = remembered_rule("bash", {"command": "ls *.py"})
    allowed = decide(rules, "bash", {"command": "ls *.py"}, cwd=CWD, remembered=[always])
    assert allowed.outcome == "allow"
    for other in ("ls *.py; rm V", "ls a.py", "ls *.py && curl x | sh"):
        again = decide(rules, "bash", {"command": other}, cwd=CWD, remembered=[always])
        assert again.outcome == "ask", other


def test_the_reason_names_the_rule() -> None:
    rules = PermissionRules.from_config(NO_RM)
    assert decide(rules, "bash", {"command": "ls; rm V"}, cwd=CWD).reason == (
        "denied by the rule Bash(rm *)"
    )
    unreadable = decide(rules, "bash", {"command": "$X V"}, cwd=CWD).reason
    assert "cannot tell what the command runs" in unreadable and "$X" in unreadable


def test_analysis_lists_wrappers_and_what_they_run() -> None:
    found = analyse("sudo -u root nice -n 5 rm -f V > out.txt 2>&1")
    assert [c.words for c in found.commands] == [
        ("sudo", "-u", "root", "nice", "-n", "5", "rm", "-f", "V"),
        ("nice", "-n", "5", "rm", "-f", "V"),
        ("rm", "-f", "V"),
    ]
    assert [c.wrapper for c in found.commands] == [False, True, False]
    assert found.writes == ("out.txt",)
    assert found.unreadable is None


# -- through a harness: the bash tool runs, the file survives ----------------------------

RUN_DENIED = [
    "rm\tV",
    "true & rm V",
    "ls |& rm V",
    "echo $(rm V)",
    "echo `rm V`",
    "FOO=1 rm V",
    "bash -c 'rm V'",
    "sh -c 'rm V'",
    "eval rm V",
    "(rm V)",
    "{ rm V; }",
    "if true; then rm V; fi",
    "\\rm V",
    "command rm V",
    "/bin/rm V",
    "env rm V",
    "'rm' V",
    "r''m V",
    "time rm V",
    "nice rm V",
    "exec rm V",
    "echo V | xargs rm",
    "find . -name V -delete",
]


def _run(tmp_path: Path, config: dict[str, Any], commands: list[str]) -> list[ToolResultMessage]:
    """A harness with the bash tool and ``config``'s rules runs ``commands``, one call
    each, in one batch; its results in call order."""
    work = tmp_path / "ws"
    work.mkdir(exist_ok=True)
    calls = [("bash", {"command": command}) for command in commands]
    provider = ScriptedProvider([reply_tool_calls(calls), reply_text("done")])
    session = JsonlSessionRepo(tmp_path / "sessions").create(cwd=str(work))
    harness = AgentHarness(
        AgentHarnessOptions(
            session=session,
            models={"main": Model(id="scripted-1", api="scripted", provider="test")},
            tools=[create_bash_tool(timeout_s=20)],
            provider=provider,
            hooks=[permission_hook(config)],
            tool_context=ToolContextSource({"workspace": str(work)}),
            sequential_tools=True,
        )
    )
    try:
        result = asyncio.run(harness.prompt("go"))
        assert result.status == "done", result.reason
        return [m for m in harness.messages if isinstance(m, ToolResultMessage)]
    finally:
        session.close()


def test_the_denied_commands_do_not_delete_the_file(tmp_path: Path) -> None:
    victim = tmp_path / "ws" / "V"
    victim.parent.mkdir()
    victim.write_text("keep me")
    results = _run(tmp_path, NO_RM, [*RUN_DENIED, "cat V"])
    for command, result in zip(RUN_DENIED, results, strict=False):
        assert "denied by the rule Bash(rm" in result.text, (command, result.text)
    assert victim.read_text() == "keep me"
    assert "keep me" in results[-1].text  # the harness runs what no rule denies


def test_an_allowed_neighbour_does_not_carry_rm_along(tmp_path: Path) -> None:
    victim = tmp_path / "ws" / "V"
    victim.parent.mkdir()
    victim.write_text("keep me")
    results = _run(
        tmp_path, PYTEST_ONLY, ["pytest --version & rm V", "pytest $(rm V)", "pytest `rm V`"]
    )
    assert all("blocked" in r.text for r in results), [r.text for r in results]
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize(
    "command",
    [
        "echo \ud800; rm -f x",  # not encodable: bash could not be given it either
        "(" * 3000 + "rm V" + ")" * 3000,
        "$(" * 2000 + "ls" + ")" * 2000,
        "eval " + '"eval "' * 20 + "rm V",
    ],
    ids=["surrogate", "deep-subshells", "deep-substitutions", "deep-eval"],
)
def test_lines_too_odd_to_read_ask_without_an_exception(command: str) -> None:
    assert outcome({"deny": ["Bash(rm *)"], "allow": ["Bash"]}, command) in ("ask", "deny")


def test_without_the_parser_every_bash_call_asks(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['tree_sitter_bash'] = None\n"
        "from harnessc.runtime.permissions.rules import PermissionRules, decide\n"
        "rules = PermissionRules.from_config({'allow': ['Bash(ls *)']})\n"
        "d = decide(rules, 'bash', {'command': 'ls'}, cwd='/')\n"
        "print(d.outcome, d.reason)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.startswith("ask cannot tell what the command runs: the bash parser")
    assert "pip install" in done.stdout

"""Issue 41, items 1 to 3: the permission rules read programs whose options run a
command or write a file as doing so, match a program under another name, and match a
file by its hard links."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.permissions.rules import PermissionRules, decide

CWD = "/work/project"
NO_RM = {"deny": ["Bash(rm *)", "Bash(rm:*)"]}


def outcome(config: dict[str, Any], command: str, cwd: str = CWD) -> tuple[str, str]:
    decision = decide(PermissionRules.from_config(config), "bash", {"command": command}, cwd=cwd)
    return decision.outcome, decision.reason


# Item 1: every one ran under `deny: Bash(rm *)`.
RUNS_RM = [
    "git -c alias.x='!rm f' x",
    "git -c alias.x='!sh -c \"rm f\"' x",
    "tar xf t.tar --to-command='rm f'",
    "tar -xf t.tar --to-command 'rm f'",
    "awk 'BEGIN{system(\"rm f\")}'",
    "awk '{print | \"rm f\"}' g",
    "sed '1e rm f' g",
    "sed -n -e 'p' -e '$e rm f' g",
    "flock L rm f",
    "flock -w 3 L -c 'rm f'",
    "script -qc 'rm f' /dev/null",
    "runuser -u root -- rm f",
    "runuser root -c 'rm f'",
    "chroot / rm /abs/f",
    "systemd-run rm f",
    "systemd-run --unit x -p Nice=5 rm f",
]


@pytest.mark.parametrize("command", RUNS_RM)
def test_a_program_running_a_command_string_is_denied_what_it_runs(command: str) -> None:
    assert outcome(NO_RM, command)[0] == "deny", command


@pytest.mark.parametrize(
    "command", ["sed 's/x/rm f/e' g", "awk -f prog.awk g", "sed -f script.sed g", "script -q"]
)
def test_what_runs_a_command_only_known_when_it_runs_asks(command: str) -> None:
    assert outcome(NO_RM, command)[0] == "ask", command


def test_rm_under_another_name_is_rm(tmp_path: Path) -> None:
    rm = shutil.which("rm")
    assert rm is not None
    shutil.copy(rm, tmp_path / "del")
    os.symlink(rm, tmp_path / "lnk")
    cwd = str(tmp_path)
    assert outcome(NO_RM, "./del f", cwd)[0] == "deny"
    assert outcome(NO_RM, "./lnk f", cwd)[0] == "deny"
    # made by the line itself: no rule can know what it is yet
    assert outcome(NO_RM, "cp /bin/rm d2 && ./d2 f", cwd)[0] == "ask"
    assert outcome(NO_RM, "ls -l", cwd)[0] == "allow"


# Item 2: each was allowed, unasked, by an allow rule for a "read-only" program.
WRITES_OR_RUNS = [
    ("Bash(sed *)", "sed -n '1e touch X' f", "touch X"),
    ("Bash(sed *)", "sed 'w X' f", "writing X"),
    ("Bash(sed *)", "sed 's/a/b/w X' f", "writing X"),
    ("Bash(sed *)", "sed -i 's/a/b/' f", "writing f"),
    ("Bash(awk *)", "awk '{print > \"X\"}' f", "writing X"),
    ("Bash(awk *)", 'awk \'{printf "%s", $0 >> "X"}\' f', "writing X"),
    ("Bash(tar *)", "tar --checkpoint=1 --checkpoint-action=exec='touch X' -tf a.tar", "touch X"),
    ("Bash(tar *)", "tar -I 'touch X;gzip' -tf a.tgz", "touch X"),
    ("Bash(tar *)", "tar -cf X f", "writing X"),
    ("Bash(git *)", "git -c core.fsmonitor='touch X' status", "touch X"),
    ("Bash(git *)", "git -c core.pager='touch X' log", "touch X"),
    ("Bash(git *)", "git log --output=X", "writing X"),
    ("Bash(git *)", "git diff --output X", "writing X"),
    ("Bash(find *)", "find . -fprintf X x", "writing X"),
    ("Bash(find *)", "find . -fls X", "writing X"),
    ("Bash(sort *)", "sort -o X f", "writing X"),
    ("Bash(sort *)", "sort --output=X f", "writing X"),
    ("Bash(flock *)", "flock lk touch X", "writing lk"),
    ("Bash(flock *)", "flock 9 touch X", "touch X"),
]


@pytest.mark.parametrize(("rule", "command", "why"), WRITES_OR_RUNS)
def test_an_allow_for_a_read_only_program_does_not_cover_what_it_writes_or_runs(
    rule: str, command: str, why: str
) -> None:
    decision, reason = outcome({"allow": [rule], "default": "ask"}, command)
    assert decision == "ask", (command, reason)
    assert why in reason, (command, reason)


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(sed *)", "sed -n '1,5p' f"),
        ("Bash(sed *)", "sed 's/a/b/g; s|c|d|' f"),
        ("Bash(awk *)", "awk '$1 > 5 {print $2}' f"),
        ("Bash(awk *)", "awk '{ if (a || b) print }' f"),
        ("Bash(tar *)", "tar -tvf a.tar"),
        ("Bash(git *)", "git -c color.ui=never log -p"),
        ("Bash(find *)", "find . -name '*.py'"),
        ("Bash(sort *)", "sort -u f"),
    ],
)
def test_their_read_only_uses_stay_allowed(rule: str, command: str) -> None:
    assert outcome({"allow": [rule], "default": "ask"}, command)[0] == "allow", command


def test_a_write_outside_the_working_folder_by_an_option_needs_a_write_rule() -> None:
    config = {"allow": ["Bash(sort *)", "Write(/srv/out/**)"], "default": "ask"}
    assert outcome(config, "sort -o /srv/out/x f")[0] == "allow"
    assert outcome(config, "sort -o /etc/passwd f")[0] == "ask"
    denied = {"allow": ["Bash(sort *)"], "deny": ["Write(/etc/**)"]}
    assert outcome(denied, "sort -o /etc/passwd f")[0] == "deny"

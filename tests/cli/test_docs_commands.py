"""The commands of the README and docs/ run as they are written, and do what their
comments say (exit codes, the files they write, what they print)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .doc_commands import REPO, Shell, free_port, shell_block, shell_lines

README = (REPO / "README.md").read_text(encoding="utf-8")


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    home = tmp_path / "start"
    home.mkdir()
    running = Shell(cwd=home, port=free_port(), tmp=tmp_path)
    try:
        yield running
    finally:
        running.close()


def _expected_code(comment: str) -> int:
    return 3 if "exit 3" in comment else 0


def test_the_readme_demo_block_runs_as_its_comments_say(shell: Shell) -> None:
    block = shell_block(README, "### Try it without an API key")
    for command, comment in shell_lines(block):
        if "| jq" in command and shutil.which("jq") is None:
            command = command.split("|")[0]
        step = shell.run(command, comment)
        assert step.returncode == _expected_code(comment), (command, step.stdout, step.stderr)
        if command.startswith("cd "):
            assert not str(shell.cwd).startswith(str(REPO)), shell.cwd
        if "list the files here" in command and "reporter" not in command:
            assert "[ls] ." in step.stderr and "agents" in step.stdout
        if "write notes.txt" in command:
            assert "--approve" in step.stderr
        if "--approve" in command:
            assert (shell.cwd / "notes.txt").read_text() == "hi\n"
        if "reporter.yaml" in command:
            value = json.loads(step.stdout)
            if "| jq .verdict" in command:
                assert value in ("fine", "needs_work"), step.stdout
            else:
                assert set(value) == {"summary", "files", "verdict"}
        if "test --record" in command:
            assert "pass (recorded)" in step.stdout
        if "scout" in command:
            assert "> demo > scout: read notes.txt" in step.stderr
    commands = [s.command for s in shell.steps]
    assert any(c.startswith("harnessc doctor") for c in commands)


def _times(text: str) -> str:
    return re.sub(r"\d+\.\d+s\b", "T", text)


def test_the_demo_page_runs_and_shows_what_its_commands_print(shell: Shell) -> None:
    page = (REPO / "docs" / "demo.md").read_text(encoding="utf-8")
    blocks = [shell_block(page, "# Trying harnessc"), shell_block(page, "## A walk through")]
    for block in blocks:
        for command, comment in shell_lines(block):
            step = shell.run(command, comment)
            assert step.returncode == _expected_code(comment), (command, step.stderr)
            if "test agents/demo.tests.yaml" in command:
                assert "1 passed" in step.stdout
    assert (shell.cwd / "notes.txt").read_text() == "hi\n"
    # the sub-agent's lines, as the page shows them (times aside)
    found = re.search(r"```\n(> demo > scout.*?)```", page, re.S)
    assert found, "docs/demo.md shows no sub-agent output"
    scout = found.group(1)
    command = next(shell_lines(shell_block(page, "### Sub-agents\n")))[0]
    step = shell.run(command)
    assert step.returncode == 0, step.stderr
    shown = _times(scout).strip().splitlines()
    assert len(shown) == 3
    assert _times(step.stderr).splitlines()[: len(shown)] == shown, step.stderr
    # the typed value, exactly as the page shows it
    command = next(shell_lines(shell_block(page, "stdout holds only the value")))[0]
    step = shell.run(command)
    assert step.returncode == 0, step.stderr
    value = shell_block(page, command, lang="json").strip()
    assert step.stdout.strip() == value


def test_the_sub_agents_example_is_the_shipped_one(shell: Shell, tmp_path: Path) -> None:
    page = (REPO / "docs" / "subagents.md").read_text(encoding="utf-8")
    spec = shell_block(page, "# Sub-agents", lang="yaml")
    shipped = (REPO / "agents" / "lead.yaml").read_text(encoding="utf-8")
    assert spec == "".join(line for line in shipped.splitlines(True) if not line.startswith("#"))
    head = shell_block(page, "in Claude Code's format", lang="markdown")
    explorer = (REPO / "agents" / "lead" / "code-explorer.md").read_text(encoding="utf-8")
    assert explorer.startswith(head.split("\n\n")[0] + "\n")
    console = shell_block(page, "in Claude Code's format", lang="console")
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "agents", copy / "agents")
    shell.cwd = copy
    lines = console.splitlines()
    build = lines[0].removeprefix("$ ")
    step = shell.run(build)
    assert step.returncode == 0, step.stderr
    printed = (step.stderr + step.stdout).splitlines()
    assert printed == lines[1 : 1 + len(printed)], printed


def test_the_own_project_page_runs_in_a_repository_of_its_own(shell: Shell, tmp_path: Path) -> None:
    """The page's commands in a fresh git repository outside this checkout (the install
    line aside: the checkout is on PYTHONPATH), with the demo model for the key."""
    from harnessc.testing.demo import serve

    page = (REPO / "docs" / "your-own-project.md").read_text(encoding="utf-8")
    project = tmp_path / "my-project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    demo = serve(port=0)
    try:
        for command, comment in shell_lines(shell_block(page, "# Using harnessc")):
            if command.startswith("python3 -m pip install"):
                continue
            if command.startswith("cd "):
                shell.cwd = project
                continue
            if command.startswith("export OPENAI_API_KEY"):
                command = f"export HARNESSC_BASE_URL={demo.url}/v1"
            step = shell.run(command, comment)
            assert step.returncode == 0, (command, step.stdout, step.stderr)
            if command.startswith("harnessc new"):
                spec = (project / "agents" / "helper.yaml").read_text()
                assert spec.startswith(
                    "# yaml-language-server: $schema=../schema/agent.schema.json"
                )
            if command.startswith("harnessc check"):  # then the sandbox's policy
                assert step.stdout.splitlines()[0] == comment
            if command.startswith("python generated/helper.py"):
                assert "Hello from the harnessc demo model" in step.stdout
    finally:
        demo.stop()
    doctor = shell.run("harnessc doctor helper")  # it says where the sessions went
    where = doctor.stdout.split("sessions: ", 1)[1].split()[0]
    assert "/harnessc/projects/" in where and not where.startswith(str(project)), where
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=project, capture_output=True, text=True
    )
    assert ".sessions" not in status.stdout and ".harnessc" not in status.stdout

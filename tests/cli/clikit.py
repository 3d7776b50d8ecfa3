"""Helpers of the CLI tests: a local protocol server and a small agent module in tmp_path.

The agent module is a plain Python file like a generated one (``build_options`` +
``main`` calling ``run_cli``); its model points at the protocol server, which the
tests script with OpenAI chat-completions SSE replies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harnessc.testing import (
    ProtocolServer,
    ScriptedResponse,
    openai_events,
    openai_tool_call_events,
)
from tests.timing import scaled

API_KEY = "sk-cli-test-SECRET-4242"

AGENT_SOURCE = textwrap.dedent(
    '''
    """A test agent: one scripted OpenAI-compatible model, a slow tool, an external tool."""

    import asyncio
    import os

    from harnessc.runtime import AgentHarnessOptions, Budget, Model, env, run_cli
    from harnessc.runtime.resources import load_resources
    from harnessc.runtime.session import JsonlSessionRepo, Session
    from harnessc.runtime.compaction import CompactionSettings
    from harnessc.runtime.tools import ExternalTool, Tool, text_result

    SESSIONS_DIR = os.environ["AGENT_SESSIONS"]


    async def _slow(call_id, params, signal, on_update, context):
        await asyncio.sleep(float(params.get("seconds", 1)))
        return text_result("slept " + str(params.get("seconds")))


    class SmallCompaction:
        """Keeps almost nothing recent, so /compact has something to summarise."""

        def install(self, harness):
            harness.compaction_settings = CompactionSettings(keep_recent_tokens=1)


    class TreeGuard:
        """AGENT_TREE_HOOK=cancel: a session_before_tree hook refuses every tree move."""

        def install(self, harness):
            if os.environ.get("AGENT_TREE_HOOK") == "cancel":
                harness.on("session_before_tree", lambda event: {"cancel": True})


    def build_options(*, session=None, cwd=None):
        turns = os.environ.get("AGENT_MAX_TURNS")
        base_url = env("TEST_BASE_URL")
        resources = None
        if os.environ.get("AGENT_RESOURCES"):
            root = os.environ["AGENT_RESOURCES"]
            resources = load_resources(
                skills=[os.path.join(root, "skills")],
                prompt_templates=[os.path.join(root, "templates")],
            )
        if session is None:
            session = JsonlSessionRepo(SESSIONS_DIR).create(cwd=cwd, metadata={"agent": "tester"})
        hooks, extra_tools = [], []
        if os.environ.get("AGENT_PERMISSIONS"):  # JSON of a spec's permissions:, plus bash
            import json

            from harnessc.runtime.tools import create_bash_tool
            from harnessc.runtime.permissions.gate import permission_hook

            hooks.append(permission_hook(json.loads(os.environ["AGENT_PERMISSIONS"])))
            extra_tools.append(create_bash_tool())
        if os.environ.get("AGENT_EDIT"):  # the edit built-in (its result has a diff)
            from harnessc.runtime.tools import create_edit_tool

            extra_tools.append(create_edit_tool())
        checkpoints = None
        if os.environ.get("AGENT_CHECKPOINTS"):  # workspace checkpoints (rewind)
            from harnessc.runtime.core.checkpoint_settings import CheckpointSettings

            checkpoints = CheckpointSettings()
        return AgentHarnessOptions(
            session=session,
            models={
                "main": Model(id="test-model", api="openai-completions", base_url=base_url,
                              api_key_env="TEST_API_KEY", context_window=32_000),
                "other": Model(id="other-model", api="openai-completions", base_url=base_url,
                               api_key_env="OTHER_API_KEY"),
            },
            model="main",
            system_prompt="You are a test agent.",
            tools=[
                Tool(name="slow", description="Sleep for a while.",
                     parameters={"type": "object",
                                 "properties": {"seconds": {"type": "number"}}},
                     run=_slow),
                ExternalTool(name="approve", description="Ask a human to approve an action.",
                             parameters={"type": "object",
                                         "properties": {"action": {"type": "string"}}}),
                *extra_tools,
            ],
            hooks=hooks,
            budget=Budget(turns=int(turns)) if turns else None,
            resources=resources,
            extensions=[SmallCompaction(), TreeGuard()],
            checkpoints=checkpoints,
        )


    def main(argv=None):
        return run_cli(build_options, argv, agent_name="tester", session_dir=SESSIONS_DIR)


    if __name__ == "__main__":
        raise SystemExit(main())
    '''
)


def text_reply(*pieces: str) -> ScriptedResponse:
    return ScriptedResponse.sse(openai_events(list(pieces)))


def tool_reply(*calls: tuple[str, str, dict[str, Any]]) -> ScriptedResponse:
    return ScriptedResponse.sse(
        openai_tool_call_events([(cid, name, json.dumps(args)) for cid, name, args in calls])
    )


@dataclass
class Agent:
    """The agent module in tmp_path and how to run it."""

    path: Path
    sessions: Path
    workdir: Path
    env: dict[str, str]

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 20,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(self.path), *args],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            cwd=self.workdir,
            timeout=timeout,
        )

    def session_files(self) -> list[Path]:
        return sorted(self.sessions.glob("*/*.jsonl"))


@pytest.fixture(scope="module")
def server() -> Iterator[ProtocolServer]:
    with ProtocolServer() as running:
        yield running


@pytest.fixture
def agent(tmp_path: Path, server: ProtocolServer) -> Agent:
    server.reset()
    path = tmp_path / "tester.py"
    path.write_text(AGENT_SOURCE)
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("AGENT_MAX_TURNS", "COLUMNS")
    }
    env.update(
        TEST_BASE_URL=f"{server.url}/v1",
        TEST_API_KEY=API_KEY,
        AGENT_SESSIONS=str(tmp_path / "sessions"),
        PYTHONDONTWRITEBYTECODE="1",
        COLUMNS="100",
    )
    return Agent(path=path, sessions=tmp_path / "sessions", workdir=workdir, env=env)


def events_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


# The "> " prompt drawn: bracketed paste turned on, then (after style and cursor codes) ">".
PROMPT_DRAWN = r"\x1b\[\?2004h(?:\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>])*>"


class Terminal:
    """The agent run on a pseudo-terminal (stdlib ``pty``): type into it, wait for output."""

    def __init__(self, agent: Agent, *args: str, env: dict[str, str] | None = None) -> None:
        import fcntl
        import pty
        import struct
        import termios

        argv = [sys.executable, str(agent.path), *args]
        # No cursor-position requests from prompt_toolkit: nothing here answers them.
        environment = {**agent.env, **(env or {}), "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
        # The terminal's size is the pty's, set before the agent starts: no LINES / COLUMNS
        # inherited from the test runner's environment (pytest-xdist's workers have them).
        for name in ("LINES", "COLUMNS"):
            environment.pop(name, None)
        size = struct.pack("HHHH", 30, 120, 0, 0)
        pid, fd = pty.fork()
        if pid == 0:  # the child: becomes the agent, the pty is its controlling terminal
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, size)
                os.chdir(agent.workdir)
                os.execve(argv[0], argv, environment)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, size)
        self.output = ""  # everything read so far
        self._pos = 0  # where the next expect starts looking
        self.status: int | None = None

    def _read(self, timeout: float) -> bool:
        import select

        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # the child closed the terminal
            return False
        if not data:
            return False
        self.output += data.decode("utf-8", "replace")
        return True

    def expect(self, text: str, timeout: float = 10.0) -> str:
        """Wait for ``text`` after the previous match; returns the output up to it."""
        import time

        deadline = time.monotonic() + scaled(timeout)  # a guard against a hang
        while True:
            found = self.output.find(text, self._pos)
            if found >= 0:
                before = self.output[self._pos : found]
                self._pos = found + len(text)
                return before
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.2)) and not self._alive()):
                raise AssertionError(
                    f"{text!r} did not appear; output after the last match:\n"
                    + self.output[self._pos :][-3000:]
                )

    def expect_re(self, pattern: str, timeout: float = 10.0) -> str:
        """``expect`` for a regular expression."""
        import re
        import time

        compiled = re.compile(pattern)
        deadline = time.monotonic() + scaled(timeout)  # a guard against a hang
        while True:
            found = compiled.search(self.output, self._pos)
            if found is not None:
                before = self.output[self._pos : found.start()]
                self._pos = found.end()
                return before
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.2)) and not self._alive()):
                raise AssertionError(
                    f"{pattern!r} did not appear; output after the last match:\n"
                    + self.output[self._pos :][-3000:]
                )

    def expect_prompt(self, timeout: float = 10.0) -> str:
        """Wait for the idle "> " prompt drawn (prompt_toolkit draws it anew, bracketed
        paste on, after any output above it); returns the output before it."""
        return self.expect_re(PROMPT_DRAWN, timeout)

    def screen(self) -> list[str]:
        """The terminal's screen now (pyte replays everything written), trailing spaces off."""
        import pyte

        screen = pyte.Screen(120, 30)
        stream = pyte.Stream(screen)
        stream.feed(self.output)
        return [line.rstrip() for line in screen.display]

    def expect_screen(
        self, predicate: Callable[[list[str]], bool], timeout: float = 10.0
    ) -> list[str]:
        """Wait until ``predicate(screen)`` holds; returns that screen."""
        import time

        deadline = time.monotonic() + scaled(timeout)  # a guard against a hang
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            left = deadline - time.monotonic()
            if left <= 0 or (not self._read(min(left, 0.2)) and not self._alive()):
                raise AssertionError("the screen did not show it:\n" + "\n".join(screen))

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def sendline(self, text: str) -> None:
        self.send(text + "\r")

    def interrupt(self) -> None:
        self.send("\x03")  # Ctrl-C: the terminal sends SIGINT

    def eof(self) -> None:
        self.send("\x04")  # Ctrl-D at the start of a line

    def _alive(self) -> bool:
        if self.status is not None:
            return False
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return True
        self.status = os.waitstatus_to_exitcode(status)
        return False

    def wait(self, timeout: float = 10.0) -> int:
        import time

        deadline = time.monotonic() + scaled(timeout)  # a guard against a hang
        while self._alive():
            if time.monotonic() > deadline:
                raise AssertionError("the agent did not exit:\n" + self.output[-3000:])
            self._read(0.1)
        while self._read(0.05):  # what it wrote just before it exited
            pass
        assert self.status is not None
        return self.status

    def close(self) -> None:
        import signal

        if self._alive():
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    """Terminals a test opens (``terminals.append(term)``), closed after it."""
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.close()

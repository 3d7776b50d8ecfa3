"""The seams of the command line: what the REPL sees of an invocation, what /commands see
of the REPL.

``main.CliInvocation`` satisfies ``CliHost`` and ``repl.session.Repl`` satisfies
``ReplHost``; the REPL and the commands import only these protocols, never the modules
that implement them, so the package has no import cycle (tests/cli/test_package.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from harnessc.runtime.agent import AgentHarness
    from harnessc.runtime.cli.args import CommandLine
    from harnessc.runtime.cli.output import TextPrinter
    from harnessc.runtime.cli.sessions import SessionChoice
    from harnessc.runtime.cli.summary import RunSummary
    from harnessc.runtime.options.harness_options import AgentHarnessOptions
    from harnessc.runtime.permissions.gate import PermissionGate
    from harnessc.runtime.runs.agent import AgentSource
    from harnessc.runtime.runs.answers import Answer
    from harnessc.runtime.runs.run import Run
    from harnessc.runtime.session.repo import SessionRepo
    from harnessc.runtime.session.session import Session

__all__ = ["BuildOptions", "CliHost", "ReplHost"]

BuildOptions = Callable[..., "AgentHarnessOptions"]


class CliHost(Protocol):
    """One invocation of an agent's command line, as the interactive mode uses it."""

    build_options: BuildOptions
    args: CommandLine
    prog: str
    agent_name: str
    session_dir: str | Path | None
    cwd: str
    out: TextIO
    err: TextIO
    choice: SessionChoice | None
    resume_results: dict[str, Any] | None
    approvals: dict[str, Any] | None  # --approve / --deny: answers to held calls
    gate: PermissionGate | None  # the permission rules, when the agent has any
    prompt_text: str | None  # the one-shot prompt

    def apply_overrides(self, options: AgentHarnessOptions) -> None:
        """Command-line overrides (--model, --max-turns, --base-url...) on fresh options."""

    async def prepare(self, harness: AgentHarness) -> None:
        """Overrides that go through the harness (--model, --thinking), --watch."""

    def store(self) -> SessionRepo | None:
        """The agent's own session store (None: JSONL files under ``session_dir``)."""

    def sessions_repo(self) -> SessionRepo:
        """Where the agent's sessions are listed, opened and forked (JSONL or PostgreSQL)."""

    def agent(self) -> AgentSource:
        """The agent as the run-control layer builds it, with this invocation's flags."""


class ReplHost(Protocol):
    """The interactive session, as a /command sees it."""

    cli: CliHost
    harness: AgentHarness
    busy: bool
    quit: bool
    summary: RunSummary  # what the runs of this interactive session used
    printer: TextPrinter

    def say(self, text: str) -> None:
        """Text for the user on stdout."""

    def note(self, text: str) -> None:
        """A short line on stderr."""

    async def ask(self, question: str) -> str | None:
        """Ask the user; None on Ctrl-C or Ctrl-D."""

    async def run(self, start: Callable[[], Awaitable[Run]]) -> Run | None:
        """Run until done or paused (``start``: ``prompt_run`` or ``answer_run``)."""

    async def prompt_run(self, text: str) -> Run:
        """A run of ``text`` (the run-control layer's start)."""

    async def answer_run(self, answer: Answer) -> Run:
        """The paused run, answered (the run-control layer's answer)."""

    async def answer_pause(self) -> None:
        """Ask the user what a paused run needs."""

    async def switch_session(self, session: Session) -> None:
        """Continue in another session."""

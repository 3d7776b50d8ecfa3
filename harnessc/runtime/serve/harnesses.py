"""Harnesses for the server: one per session, built from the agent's own options with
the command line's overrides, sharing one HTTP client pool, in the agent's session store."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.core.hooks import PauseRequest
from harnessc.runtime.core.messages import Message
from harnessc.runtime.session.entries import SessionHeader
from harnessc.runtime.session.repo_protocol import SessionNotFoundError, SessionRepo
from harnessc.runtime.session.session import Session, SessionError

if TYPE_CHECKING:
    from harnessc.runtime.cli.host import CliHost
    from harnessc.runtime.providers.clients import HttpClientPool
    from harnessc.runtime.tools.base import AgentTool

__all__ = ["DRAIN_REASON", "AgentSource", "SessionBusy", "UnknownSession"]

# The pause reason of a run stopped by the server's shutdown (SIGTERM).
DRAIN_REASON = "server_shutdown"


class UnknownSession(LookupError):
    """No session with that id in the agent's store."""


class SessionBusy(RuntimeError):
    """The session is open elsewhere (another run, another process)."""


class AgentSource:
    """Builds the agent's harnesses; ``draining`` makes every run pause at its next turn end."""

    def __init__(self, cli: CliHost, clients: HttpClientPool | None) -> None:
        self.cli = cli
        self.clients = clients
        self.agent_name = cli.agent_name
        self.description = _module_value(cli.build_options, "DESCRIPTION")
        self.repo = _store(cli)
        self.draining = False
        self.skills: list[tuple[str, str]] = []  # (name, description), set by check()
        self.subagents: list[tuple[str, str]] = []  # (name, description), set by check()
        self.tool_names: frozenset[str] = frozenset()  # the agent's own tools

    @property
    def stored(self) -> bool:
        """Whether sessions outlive the process (a restart can resume their runs)."""
        return self.repo is not None

    def new_session(self, context: Sequence[Message] = ()) -> Session:
        metadata = {"agent": self.agent_name}
        if self.repo is not None:
            session = self.repo.create(cwd=self.cli.cwd, metadata=metadata)
        else:
            session = Session(SessionHeader.new(cwd=self.cli.cwd, metadata=metadata))
        for message in context:
            session.append_message(message)
        return session

    def open_session(self, session_id: str) -> Session:
        if self.repo is None:
            raise UnknownSession(session_id)
        from harnessc.runtime.session.lock import SessionLockedError

        try:
            return self.repo.open(session_id)
        except SessionNotFoundError:
            raise UnknownSession(session_id) from None
        except SessionLockedError:
            raise SessionBusy(f"session {session_id} is in use by another process") from None
        except (SessionError, OSError, ValueError) as exc:
            raise UnknownSession(f"{session_id}: {exc}") from None

    def harness(self, session: Session, extra_tools: Sequence[AgentTool] = ()) -> AgentHarness:
        """A harness on ``session`` (closed with it when it cannot be built)."""
        try:
            options = self.cli.build_options(session=session, cwd=self.cli.cwd)
            if options.session is not session:
                options.session = session
            options.http_clients = self.clients
            if extra_tools:
                options.tools = [*options.tools, *extra_tools]
            self.cli.apply_overrides(options)
            harness = AgentHarness(options)
        except Exception:
            session.close()
            raise
        harness.on("turn_end", self._drain_check)
        return harness

    def durable_config(self) -> Any:
        """The generated module's ``durable_config`` (a spec with ``durable:``), else None."""
        found = getattr(self.cli.build_options, "__globals__", {}).get("durable_config")
        return found if callable(found) else None

    async def check(self, *, model: bool = True) -> None:
        """Build the agent once (its options, with ``model`` its model's key): a broken
        agent fails at start. Its skills and tool names are kept for the agent card and
        AG-UI."""
        session = Session(SessionHeader.new(cwd=self.cli.cwd, metadata={}))
        harness = self.harness(session)
        try:
            self.skills = [(s.name, s.description) for s in harness.resources.skills]
            self.subagents = _subagents(harness.options.extensions)
            self.tool_names = frozenset(harness.tools)
            if model and harness.options.provider is None:
                from harnessc.runtime.cli.overrides import check_model

                check_model(
                    self.cli.args.model or harness.model_key(), harness.options, harness.model
                )
        finally:
            await harness.close()

    def _drain_check(self, event: Any) -> PauseRequest | None:
        return PauseRequest(DRAIN_REASON) if self.draining else None


def _subagents(extensions: Sequence[Any]) -> list[tuple[str, str]]:
    """The sub-agents (spec ``agents:``) the agent may hand work to."""
    from harnessc.runtime.agent.subagents import SubAgents

    return [
        (agent.name, agent.description)
        for extension in extensions
        if isinstance(extension, SubAgents)
        for agent in extension.agents
    ]


def _store(cli: CliHost) -> SessionRepo | None:
    """The agent's session store; None keeps sessions in memory (--no-session too)."""
    if cli.args.no_session:
        return None
    store = cli.store()
    if store is not None:
        return store
    if cli.session_dir is None:
        return None
    from harnessc.runtime.session.repo import JsonlSessionRepo

    return JsonlSessionRepo(os.path.join(cli.cwd, cli.session_dir))


def _module_value(function: Any, name: str) -> str:
    """A constant of the module that defines ``function`` (a generated module's DESCRIPTION)."""
    value = getattr(function, "__globals__", {}).get(name)
    return value if isinstance(value, str) else ""

"""The agent a run-control layer runs: its harnesses, built from the generated module's
``build_options`` with the caller's overrides, on sessions of the agent's store (or in
memory), sharing one HTTP client pool.

``AgentSource`` is what a door hands the layer: the terminal builds it from its flags,
a server from the flags it was started with.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.core.hooks import PauseRequest
from harnessc.runtime.core.messages import Message
from harnessc.runtime.runs.errors import SessionBusy, UnknownSession
from harnessc.runtime.runs.pauses import DRAIN_REASON
from harnessc.runtime.session.entries import SessionHeader
from harnessc.runtime.session.repo_protocol import SessionNotFoundError, SessionRepo
from harnessc.runtime.session.session import Session, SessionError

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_options import AgentHarnessOptions
    from harnessc.runtime.tools.base import AgentTool

__all__ = ["AgentSource", "BuildOptions", "pause_mcp_requests"]

BuildOptions = Callable[..., "AgentHarnessOptions"]


class AgentSource:
    """Builds the agent's harnesses; ``draining`` makes every run pause at its next turn
    end (the server's SIGTERM).

    ``adjust(options)``: the door's overrides on fresh options (``apply_overrides`` with
    its flags), raising ``SetupError``. ``model``: the model key the door chose (checked
    for its API key). ``store``: the agent's sessions (None: in memory).
    ``mcp_pauses``: an MCP login or question met in a tool call pauses the run (a
    server's runs: ``pause_mcp_requests``); else the default user answers it (the
    terminal, when there is one).
    """

    def __init__(
        self,
        build_options: BuildOptions,
        *,
        agent_name: str,
        cwd: str,
        store: SessionRepo | None,
        adjust: Callable[[AgentHarnessOptions], None] | None = None,
        model: str | None = None,
        clients: Any = None,
        mcp_pauses: bool = False,
    ) -> None:
        self.build_options = build_options
        self.agent_name = agent_name
        self.cwd = cwd
        self.repo = store
        self.adjust = adjust
        self.model = model
        self.clients = clients  # an HttpClientPool every harness shares (None: their own)
        self.description = _module_value(build_options, "DESCRIPTION")
        self.draining = False
        self.mcp_pauses = mcp_pauses
        self.skills: list[tuple[str, str]] = []  # (name, description), set by check()
        self.subagents: list[tuple[str, str]] = []  # (name, description), set by check()
        self.tool_names: frozenset[str] = frozenset()  # the agent's own tools
        # The harnesses that pause at their next turn end while draining: those working
        # when the drain began or launched since (``watch_drain``). A harness gets the
        # hook only then: registering it costs a signature's inspection, and every turn
        # end would run it.
        self._watched: weakref.WeakSet[AgentHarness] = weakref.WeakSet()

    @property
    def stored(self) -> bool:
        """Whether sessions outlive the process (a restart can resume their runs)."""
        return self.repo is not None

    # -- sessions (they read and write files: off an event loop, ``asyncio.to_thread``) --

    def new_session(self, context: Sequence[Message] = ()) -> Session:
        """A new session of the agent (in its store, or in memory), with ``context`` as
        its history."""
        metadata = {"agent": self.agent_name}
        if self.repo is not None:
            session = self.repo.create(cwd=self.cwd, metadata=metadata)
        else:
            session = Session(SessionHeader.new(cwd=self.cwd, metadata=metadata))
        for message in context:
            session.append_message(message)
        return session

    def open_session(self, session_id: str) -> Session:
        """A stored session, opened for appending (UnknownSession, SessionBusy)."""
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

    def has_session(self, session_id: str) -> bool:
        """Whether the store holds ``session_id`` (opened and closed again)."""
        if self.repo is None:
            return False
        try:
            self.open_session(session_id).close()
        except Exception:
            return False
        return True

    # -- harnesses ---------------------------------------------------------------------

    def options(self, session: Session) -> AgentHarnessOptions:
        """The agent's options on ``session``, with the door's overrides."""
        options = self.build_options(session=session, cwd=self.cwd)
        if options.session is not session:
            options.session = session
        if self.clients is not None:
            options.http_clients = self.clients
        if self.adjust is not None:
            self.adjust(options)
        if self.mcp_pauses:
            pause_mcp_requests(options)
        return options

    def harness(self, session: Session, client_tools: Sequence[AgentTool] = ()) -> AgentHarness:
        """A harness on ``session`` (closed with it when it cannot be built).
        ``client_tools``: the caller's external tools (an AG-UI front end's)."""
        try:
            options = self.options(session)
            harness = AgentHarness(options)
        except Exception:
            session.close()
            raise
        if client_tools:
            give_client_tools(harness, client_tools)
        if self.draining:
            self.watch_drain(harness)
        return harness

    def watch_drain(self, harness: AgentHarness) -> None:
        """Make ``harness`` pause at its next turn end once the source drains (the
        server's SIGTERM); a run control calls it for every harness it runs while
        draining, and for those working when the drain begins."""
        if harness not in self._watched:
            self._watched.add(harness)
            harness.on("turn_end", self._drain_check)

    def durable_config(self) -> Any:
        """The generated module's ``durable_config`` (a spec with ``durable:``), else None."""
        found = getattr(self.build_options, "__globals__", {}).get("durable_config")
        return found if callable(found) else None

    async def check(self, *, model: bool = True) -> None:
        """Build the agent once (its options, with ``model`` its model's key): a broken
        agent fails at start. Its skills and tool names are kept for the agent card and
        AG-UI."""
        from harnessc.runtime.runs.overrides import check_model

        session = Session(SessionHeader.new(cwd=self.cwd, metadata={}))
        harness = self.harness(session)
        try:
            self.skills = [(s.name, s.description) for s in harness.resources.skills]
            self.subagents = _subagents(harness.options.extensions)
            self.tool_names = frozenset(harness.tools)
            if model and harness.options.provider is None:
                check_model(self.model or harness.model_key(), harness.options, harness.model)
        finally:
            await harness.close()

    def _drain_check(self, event: Any) -> PauseRequest | None:
        return PauseRequest(DRAIN_REASON) if self.draining else None


def pause_mcp_requests(options: AgentHarnessOptions) -> None:
    """The agent's MCP servers' logins and questions pause the run (each toolset with
    no user of its own gets a ``PausingUser``): the pause names the authorization URL
    or the question, and ``RunControl.answer`` gives the answer. Its sub-agents' own
    servers do the same (``SubAgents.mcp_pausing``): their pauses are the tree's."""
    for extension in options.extensions:
        if hasattr(extension, "mcp_pausing"):
            extension.mcp_pausing = True
    toolset = "harnessc.runtime.mcp.toolset"
    found = [e for e in options.extensions if type(e).__module__ == toolset]
    if not found:
        return
    from harnessc.runtime.mcp.pausing_user import PausingUser

    for extension in found:
        if extension.user is None:
            extension.user = PausingUser()


def give_client_tools(harness: AgentHarness, tools: Sequence[AgentTool]) -> None:
    """Make ``tools`` (a client's external tools) the harness's client tools, in place
    of those an earlier run of the session had; a tool of the agent's own name wins. An
    ``ask`` never holds a client tool (the client answers it itself); a deny rule does."""
    before = _CLIENT_TOOLS.get(harness, frozenset())
    if before:
        harness.remove_tools(list(before))
    fresh = [t for t in tools if t.name not in harness.tools]
    if fresh:
        harness.add_tools(fresh)
    names = frozenset(t.name for t in fresh)
    _CLIENT_TOOLS[harness] = names
    if "harnessc.runtime.permissions.gate" not in sys.modules:
        return  # no PermissionGate was ever made: nothing to tell
    from harnessc.runtime.permissions.gate import find_gate

    gate = find_gate(harness.options.hooks)
    if gate is not None:
        gate.client_tools = names


# harness -> the names of the client tools it was given (weak: a closed harness goes)
_CLIENT_TOOLS: weakref.WeakKeyDictionary[AgentHarness, frozenset[str]] = weakref.WeakKeyDictionary()


def _subagents(extensions: Sequence[Any]) -> list[tuple[str, str]]:
    """The sub-agents (spec ``agents:``) the agent may hand work to."""
    from harnessc.runtime.agent.subagents import SubAgents

    return [
        (agent.name, agent.description)
        for extension in extensions
        if isinstance(extension, SubAgents)
        for agent in extension.agents
    ]


def _module_value(function: Any, name: str) -> str:
    """A constant of the module that defines ``function`` (a generated module's DESCRIPTION)."""
    value = getattr(function, "__globals__", {}).get(name)
    return value if isinstance(value, str) else ""

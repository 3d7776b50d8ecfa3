"""The run-control interface every door uses: ``RunControl``, and the ``RunRequest`` that
starts a run. ``plain.PlainRuns`` runs them in this process (an ``AgentHarness`` each);
``harnessc.runtime.durable.control.DurableRunControl`` runs them as DBOS workflows on
the agent's queue. A door is written against this protocol only, so a pause, an answer,
an abort and a result mean the same through it whichever runs it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from msgspec import Struct

from harnessc.runtime.runs.answers import Answer
from harnessc.runtime.runs.run import KEEP_ALIVE_S, Run

if TYPE_CHECKING:
    from harnessc.runtime.core.events import Event
    from harnessc.runtime.core.messages import ImageContent, Message
    from harnessc.runtime.runs.agent import AgentSource
    from harnessc.runtime.session.session import Session
    from harnessc.runtime.tools.base import AgentTool

__all__ = ["RunControl", "RunRequest", "Transcript"]


class RunRequest(Struct):
    """A run to start.

    ``session``: None starts a new session (in the agent's store, or in memory when it
    has none), a session id goes on in that session (one this layer knows, or a stored
    one), an open ``Session`` goes on in it (a plain run only: the terminal's choice).
    ``context``: a new session's history (an OpenAI or AG-UI conversation's earlier
    messages). ``tools``: the caller's external tools for this run (an AG-UI front
    end's). ``model``: a key of the agent's models for this run; ``budget``: limits by
    name over the agent's own. ``listener``: called with each event as it happens, in
    this process (a terminal's printer; a durable run's events as they are read).
    """

    prompt: str
    images: Sequence[ImageContent] = ()
    session: str | Session | None = None
    context: Sequence[Message] = ()
    tools: Sequence[AgentTool] = ()
    model: str | None = None
    budget: Mapping[str, float] = {}
    listener: Callable[[Event], Any] | None = None


class Transcript(Struct):
    """A session's conversation as a door shows it."""

    session_id: str
    name: str | None
    messages: list[dict[str, Any]]


class RunControl(Protocol):
    """Runs of one agent: start, look up, follow, answer, abort, and the result.

    Every method that finds the request does not fit raises a ``runs.errors`` error:
    ``UnknownRun``, ``UnknownSession``, ``Conflict``, ``Overloaded``, ``SetupError``.
    """

    source: AgentSource
    durable: bool  # the runs go through a DBOS queue and are executed by workers
    continues_sessions: bool  # a new run may go on in a stored session

    @property
    def working(self) -> int:
        """How many runs are working (queued or running) here."""

    async def start(self, request: RunRequest) -> Run:
        """Start a run (see ``RunRequest``); it works on until it ends or pauses."""

    async def get(self, run_id: str) -> Run:
        """The run as it stands now (a paused one found again after a restart)."""

    def latest(self, session_id: str) -> Run | None:
        """The latest run of a session that this process knows."""

    def known_sessions(self) -> list[str]:
        """The sessions this process knows runs of (with sessions in memory: all there are)."""

    def events(
        self, run: Run, after: int = 0, keep_alive_s: float = KEEP_ALIVE_S
    ) -> AsyncIterator[tuple[int, str] | None]:
        """The run's events after number ``after``, encoded as ``--json`` prints them,
        then the new ones as they come until it ends or pauses (``runs.run.follow``)."""

    async def settled(self, run: Run) -> Run:
        """Wait until the run ends or pauses; the run (its result, or its pause)."""

    async def answer(self, run: Run, answer: Answer) -> None:
        """Answer the run's pause (checked against it: ``answers.check_answer``); it
        works on."""

    async def abort(self, run: Run, reason: str) -> None:
        """End a working or paused run as ``aborted`` (Conflict for one that ended)."""

    async def transcript(self, session_id: str) -> Transcript:
        """A session's messages (UnknownSession)."""

    async def drain(self, grace_s: float) -> None:
        """Stop: working runs pause at their next turn end, the rest is closed."""

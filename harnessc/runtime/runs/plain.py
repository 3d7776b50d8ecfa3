"""Plain runs: each an ``AgentHarness`` driven in this process (``PlainRuns``, the
``RunControl`` a server and the terminal use for an agent without ``durable:``).

A run id is ``<session id>.<random>``: after a restart a paused run is found again
through its session, which recorded the pause. One run of a session works at a time; a
new prompt on a session whose run is paused leaves that run (it ends ``aborted``), one
on a session waiting for tool results is refused until they come (or the run is
aborted). The harness of a session is kept between its runs while its sessions live in
memory (the only copy of the conversation) and closed once a run ends when they are
stored; at most ``kept_runs`` runs are remembered, the oldest that are not working
forgotten first (an in-memory session with them). Sessions are opened and created off
the event loop.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from harnessc.runtime.agent import AgentHarness, HarnessBusyError, RunResult
from harnessc.runtime.runs.agent import AgentSource, give_client_tools
from harnessc.runtime.runs.answers import (
    Answer,
    check_answer,
    raised_budget,
    resume_arguments,
    resume_run,
)
from harnessc.runtime.runs.control import RunRequest, Transcript
from harnessc.runtime.runs.errors import (
    Conflict,
    Overloaded,
    SessionBusy,
    SetupError,
    UnknownRun,
    UnknownSession,
)
from harnessc.runtime.runs.pauses import pause_of
from harnessc.runtime.runs.run import KEEP_ALIVE_S, PAUSED, Run, follow
from harnessc.runtime.session.session import Session
from harnessc.runtime.tools.base import AgentTool

__all__ = ["PlainRun", "PlainRuns", "settle_from"]

IDLE = "idle"  # a session's harness a terminal handed over, with no run yet


class PlainRun(Run):
    """A run of this process: its harness (open while it works or waits) and task."""

    __slots__ = ("harness", "task")

    def __init__(self, id: str, session_id: str = "", status: str = "running") -> None:  # noqa: A002
        super().__init__(id, session_id, status)
        self.harness: AgentHarness | None = None
        self.task: asyncio.Task[None] | None = None


def settle_from(run: Run, harness: AgentHarness, result: RunResult) -> None:
    """What one part of a run (a prompt, a resume) ended with, on the run record."""
    run.text = result.text
    run.reply = result.reply
    if result.status in PAUSED:
        run.pause = pause_of(harness, result.reason)
        run.status = run.pause.status if run.pause is not None else result.status
        run.reason = result.reason
        return
    run.pause = None
    run.status, run.reason = result.status, result.reason
    config = harness.options.output
    if config is not None and result.status == "done" and result.reply is None:
        run.output = config.to_json(result.output)


class PlainRuns:
    """Every plain run of the process; ``max_runs`` bounds those working at once.

    ``close_ended``: close a stored session's harness once its run ends (a server; the
    terminal keeps its one harness). ``keep_events``: keep the runs' events for replay
    (a terminal only hands them to its listeners).
    """

    durable = False
    continues_sessions = True

    def __init__(
        self,
        source: AgentSource,
        *,
        max_runs: int = 64,
        kept_runs: int = 1000,
        close_ended: bool = True,
        keep_events: bool = True,
    ) -> None:
        self.source = source
        self.max_runs = max_runs
        self.kept_runs = kept_runs
        self.close_ended = close_ended
        self.keep_events = keep_events
        self.runs: OrderedDict[str, PlainRun] = OrderedDict()
        self.by_session: dict[str, PlainRun] = {}  # the latest run of each session
        # The runs whose harness works on a task now: only these can be working, so
        # ``working`` counts them and not every run kept (up to ``kept_runs``).
        self._driven: set[PlainRun] = set()
        self._recovering: dict[str, asyncio.Future[PlainRun]] = {}

    # -- looking up --------------------------------------------------------------------

    @property
    def working(self) -> int:
        return sum(1 for run in self._driven if run.working)

    def latest(self, session_id: str) -> Run | None:
        return self.by_session.get(session_id)

    def known_sessions(self) -> list[str]:
        return list(self.by_session)

    async def get(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if run is not None:
            return run
        pending = self._recovering.get(run_id)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[PlainRun] = asyncio.get_running_loop().create_future()
        self._recovering[run_id] = future
        try:
            found = await self._recover(run_id)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no warning when nobody else waited
            raise
        else:
            future.set_result(found)
            return found
        finally:
            del self._recovering[run_id]

    async def _recover(self, run_id: str) -> PlainRun:
        """A run paused before a restart: open its session, which recorded the pause."""
        session_id, dot, _ = run_id.rpartition(".")
        if not dot or not session_id or not self.source.stored or session_id in self.by_session:
            raise UnknownRun(run_id)
        try:
            session = await asyncio.to_thread(self.source.open_session, session_id)
        except (UnknownSession, SessionBusy):
            raise UnknownRun(run_id) from None
        harness = self.source.harness(session)
        pause = pause_of(harness)
        if pause is None:
            _discard(harness)
            raise UnknownRun(run_id)
        run = self._new_run(run_id, session_id, pause.status)
        run.harness, run.pause, run.reason = harness, pause, pause.reason
        self._keep(run)
        return run

    def adopt(self, harness: AgentHarness) -> PlainRun:
        """A harness the caller built (the terminal's): the run of its session as it
        stands, paused or idle; ``start`` and ``answer`` go on with it."""
        pause = pause_of(harness)
        run = self._new_run(_run_id(harness.session), harness.session.id, IDLE)
        run.harness = harness
        if pause is not None:
            run.pause, run.status, run.reason = pause, pause.status, pause.reason
        self._keep(run)
        return run

    def _new_run(self, run_id: str, session_id: str, status: str) -> PlainRun:
        run = PlainRun(run_id, session_id, status)
        run.keep_events = self.keep_events
        return run

    # -- starting ----------------------------------------------------------------------

    def _check_room(self) -> None:
        if self.source.draining:
            raise Overloaded("the server is shutting down")
        if self.working >= self.max_runs:
            raise Overloaded(f"{self.max_runs} runs are working (--max-runs)")

    async def start(self, request: RunRequest) -> Run:
        self._check_room()
        target = request.session
        if isinstance(target, Session):
            harness = self.source.harness(target, request.tools)
        elif target is not None:
            harness = await self._idle_harness(target, list(request.tools))
        elif self.source.stored:
            session = await asyncio.to_thread(self.source.new_session, request.context)
            harness = self.source.harness(session, request.tools)
        else:  # a session in memory: no file to write, so no worker thread's hand-off
            session = self.source.new_session(request.context)
            harness = self.source.harness(session, request.tools)
        try:
            await _override(harness, request)
        except SetupError:
            if target is None:
                _discard(harness)
            raise
        run = self._new_run(_run_id(harness.session), harness.session.id, "running")
        if request.listener is not None:
            run.listeners.append(request.listener)
        prompt, images = request.prompt, request.images or None
        self._launch(run, harness, lambda: harness.prompt(prompt, images))
        return run

    async def _idle_harness(self, session_id: str, tools: list[AgentTool]) -> AgentHarness:
        """The session's harness for a new prompt. A run waiting for tool results must
        get them first (or be aborted); one paused otherwise is left (the harness
        abandons it)."""
        latest = self.by_session.get(session_id)
        if latest is not None and latest.working:
            raise Conflict(f"session {session_id} has a run working ({latest.id})")
        if latest is not None and latest.status == "awaiting_tool":
            raise Conflict(_awaiting(session_id, latest.id))
        if latest is not None and latest.harness is not None:
            harness = latest.harness
            if latest.status == "paused":
                latest.status, latest.reason = "aborted", "left for a new prompt on its session"
                latest.pause = None
                latest.changed()
            latest.harness = None
            give_client_tools(harness, tools)
            return harness
        if latest is None and not self.source.stored:
            raise UnknownSession(session_id)
        session = await asyncio.to_thread(self.source.open_session, session_id)
        harness = self.source.harness(session, tools)
        if harness.paused_reason == "awaiting_tool":
            _discard(harness)
            raise Conflict(_awaiting(session_id, None))
        return harness

    def _launch(
        self, run: PlainRun, harness: AgentHarness, body: Callable[[], Awaitable[RunResult]]
    ) -> None:
        run.harness = harness
        run.status = "running"
        run.reason = ""
        run.pause = None
        unsubscribe = harness.subscribe(run.add)
        if self.source.draining:
            self.source.watch_drain(harness)
        self._keep(run)
        run.changed()
        self._driven.add(run)
        run.task = asyncio.create_task(self._drive(run, harness, body, unsubscribe))

    async def _drive(
        self,
        run: PlainRun,
        harness: AgentHarness,
        body: Callable[[], Awaitable[RunResult]],
        unsubscribe: Callable[[], None],
    ) -> None:
        try:
            await self._drive_body(run, harness, body, unsubscribe)
        finally:
            if run.task is asyncio.current_task():
                self._driven.discard(run)

    async def _drive_body(
        self,
        run: PlainRun,
        harness: AgentHarness,
        body: Callable[[], Awaitable[RunResult]],
        unsubscribe: Callable[[], None],
    ) -> None:
        try:
            result = await body()
        except asyncio.CancelledError:
            unsubscribe()
            run.status, run.reason = "aborted", "cancelled"
            await self._finish(run)
            raise
        except HarnessBusyError as exc:
            unsubscribe()
            run.status, run.reason = "error", str(exc)
            await self._finish(run)
            return
        except Exception as exc:  # the harness reports its own failures as results
            unsubscribe()
            run.status, run.reason = "error", f"{type(exc).__name__}: {exc}"
            await self._finish(run)
            return
        unsubscribe()
        settle_from(run, harness, result)
        if run.paused:
            run.changed()
        else:
            await self._finish(run)

    async def _finish(self, run: PlainRun) -> None:
        """A run that ended: keep its harness for the session's next run when sessions
        live in memory (or the terminal keeps it), close it when they are stored."""
        run.changed()
        if run.harness is not None and self.source.stored and self.close_ended:
            self._close(run)

    def _close(self, run: PlainRun) -> None:
        harness, run.harness = run.harness, None
        if harness is not None:
            _discard(harness)

    def _keep(self, run: PlainRun) -> None:
        self.runs[run.id] = run
        self.runs.move_to_end(run.id)
        if run.session_id:
            self.by_session[run.session_id] = run
        excess = len(self.runs) - self.kept_runs
        if excess <= 0:
            return
        # the oldest runs that are over, read from the oldest on until enough are found
        # (a full walk of up to kept_runs runs at every run's start cost 0.15 ms a run)
        dropped: list[PlainRun] = []
        for r in self.runs.values():
            if r.over and r is not run:
                dropped.append(r)
                if len(dropped) == excess:
                    break
        for old in dropped:
            del self.runs[old.id]
            if self.by_session.get(old.session_id) is old:
                del self.by_session[old.session_id]
            self._close(old)  # a session in memory is forgotten with it

    # -- following ---------------------------------------------------------------------

    def events(
        self, run: Run, after: int = 0, keep_alive_s: float = KEEP_ALIVE_S
    ) -> AsyncIterator[tuple[int, str] | None]:
        return follow(run, after, keep_alive_s)

    async def settled(self, run: Run) -> Run:
        await run.settled()
        return run

    # -- answering a pause, aborting ---------------------------------------------------

    async def answer(self, run: Run, answer: Answer) -> None:
        assert isinstance(run, PlainRun)
        harness = run.harness
        if run.status not in PAUSED or harness is None or run.pause is None:
            raise Conflict(f"run {run.id} is {run.status}, not paused")
        self._check_room()
        pause = run.pause
        check_answer(pause, answer, run.id)
        arguments = resume_arguments(harness, pause, answer)
        self._launch(run, harness, lambda: resume_run(harness, pause, answer, arguments))

    async def abort(self, run: Run, reason: str = "aborted") -> None:
        assert isinstance(run, PlainRun)
        harness = run.harness
        if run.working and harness is not None:
            harness.abort(reason)
        elif run.status in PAUSED and harness is not None:
            self._launch(run, harness, lambda: harness.abort_paused(reason))
        else:
            raise Conflict(f"run {run.id} has ended ({run.status})")
        await run.settled()

    # -- sessions ----------------------------------------------------------------------

    async def transcript(self, session_id: str) -> Transcript:
        latest = self.by_session.get(session_id)
        if latest is not None and latest.harness is not None:
            return _transcript(session_id, latest.harness.session)
        return await asyncio.to_thread(self._read, session_id)

    def _read(self, session_id: str) -> Transcript:
        session = self.source.open_session(session_id)
        try:
            return _transcript(session_id, session)
        finally:
            session.close()

    # -- shutting down -----------------------------------------------------------------

    async def drain(self, grace_s: float) -> None:
        """SIGTERM: working runs pause at their next turn end (recorded in their
        sessions), those still working after ``grace_s`` are aborted; then every harness
        closes."""
        self.source.draining = True
        for run in list(self._driven):
            if run.working and run.harness is not None:
                self.source.watch_drain(run.harness)
        tasks = [r.task for r in self.runs.values() if r.working and r.task is not None]
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=grace_s)
            for run in list(self.runs.values()):
                if run.working and run.harness is not None:
                    run.harness.abort("the server shut down")
            if late:
                await asyncio.wait(late, timeout=5)
        for run in list(self.runs.values()):
            harness, run.harness = run.harness, None
            if harness is not None:
                try:
                    await harness.close()
                except Exception:
                    pass


async def _override(harness: AgentHarness, request: RunRequest) -> None:
    """The request's model and budget for its run."""
    if request.model is not None and request.model != harness.model_key():
        if request.model not in harness.models:
            known = ", ".join(harness.models) or "none"
            raise SetupError(f"unknown model {request.model!r}; known: {known}")
        await harness.set_model(request.model)
    budget = raised_budget(harness.budget.budget, request.budget)
    if budget is not None:
        harness.set_budget(budget)


def _transcript(session_id: str, session: Session) -> Transcript:
    messages = [m.to_dict() for m in session.context().messages]
    return Transcript(session_id, session.name, messages)


def _run_id(session: Session) -> str:
    # os.urandom: what secrets.token_hex reads, without the hmac and hashlib it imports
    return f"{session.id}.{os.urandom(4).hex()}"


def _awaiting(session_id: str, run_id: str | None) -> str:
    run = f" ({run_id})" if run_id else ""
    return (
        f"session {session_id} has a run{run} waiting for tool results: resume it with them "
        '(a result may be {"error": "..."}), or abort it'
    )


def _discard(harness: AgentHarness) -> None:
    """Close a harness: its session at once (the next open finds it unlocked), the rest
    (on-close callbacks, its clients) on a task."""
    harness.session.close()
    task = asyncio.get_running_loop().create_task(harness.close())
    _closing.add(task)
    task.add_done_callback(_closed)


_closing: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references to tasks


def _closed(task: asyncio.Task[Any]) -> None:
    _closing.discard(task)
    if not task.cancelled():
        task.exception()

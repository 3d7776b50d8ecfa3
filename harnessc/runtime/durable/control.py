"""Durable runs behind the run-control interface (``runs.control.RunControl``): a new
run is submitted to the agent's DBOS queue (or, ``here``, started as a workflow of this
process: the durable one-shot) and whichever worker takes it runs it. A run continues a
stored session or starts one made here in the store, one run of a session at a time;
a client's tools are external tools of its run. Its status, events, answers and abort
all go through the run's records in the DBOS database, so every process on that
database sees every run, whichever worker holds it, and a run a dead worker left is
followed on where another recovered it.

A run's events are those its steps recorded, in step order (then those of its output),
so their numbers are the same in every server and a replayed step adds none twice; its
usage is counted from them, its typed value read from its output.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from harnessc.runtime.runs.answers import Answer, check_answer
from harnessc.runtime.runs.control import RunRequest, Transcript
from harnessc.runtime.runs.errors import Conflict, Overloaded, SessionBusy, SetupError, UnknownRun
from harnessc.runtime.runs.pauses import Pause
from harnessc.runtime.runs.run import KEEP_ALIVE_S, PAUSED, Run, follow

if TYPE_CHECKING:
    from harnessc.runtime.durable.clients import DurableRuns, RunLook
    from harnessc.runtime.runs.agent import AgentSource

__all__ = ["DurableRun", "DurableRunControl"]

POLL_S = 0.2  # a watched run's records are read this often
TAKE_S = 10.0  # how long an answer waits for a worker to take it
# DurableRuns' states as the run-control layer names them
_STATUS = {"failed": "error", "cancelled": "aborted"}


class DurableRun(Run):
    """A durable run as this process last read it; watching it (a stream, a wait) keeps
    reading its records while it is queued or running."""

    __slots__ = ("steps", "ended", "watchers", "poller", "lock")

    def __init__(self, id: str, session_id: str = "", status: str = "queued") -> None:  # noqa: A002
        super().__init__(id, session_id, status)
        self.steps = 0  # the run's steps read so far
        self.ended = False  # its records are all read: nothing changes any more
        self.watchers = 0
        self.poller: asyncio.Task[None] | None = None
        self.lock = asyncio.Lock()

    def apply(self, look: RunLook) -> None:
        """What one look found: new events, the state, what it waits for."""
        from harnessc.runtime.durable.recorded import event_from_dict

        state = str(look.row.get("state") or "running")
        before = (self.status, self.reason, self.session_id, self.pause)
        self.status = _STATUS.get(state, state)
        if state in PAUSED:
            raw = look.waiting.get("pause")
            self.pause = Pause.from_dict(raw) if isinstance(raw, dict) else None
            self.reason = str(look.waiting.get("reason") or state)
        else:
            self.pause = None
            self.reason = "cancelled" if state == "cancelled" else str(look.row.get("reason") or "")
        self.text = look.text
        if look.output is not None:
            self.output = look.output
        self.session_id = self.session_id or look.session_id or ""
        self.steps = look.steps
        self.ended = look.ended
        for event in look.events:
            self.add_recorded(event)
            if self.listeners:
                made = event_from_dict(event)
                if made is not None:
                    for listener in self.listeners:
                        listener(made)
        after = (self.status, self.reason, self.session_id, self.pause)
        if look.events or after != before:
            self.changed()


class DurableRunControl:
    """The runs of a durable agent as this process knows them: it submits and reads,
    the workers execute. ``--max-runs`` does not apply (the queue's concurrency does).
    ``here``: a new run is a workflow of this process (DBOS launched here as an
    executor), not submitted to the queue."""

    durable = True

    def __init__(
        self,
        source: AgentSource,
        client: DurableRuns,
        *,
        kept_runs: int = 1000,
        here: bool = False,
    ) -> None:
        self.source = source
        self.client = client
        self.kept_runs = kept_runs
        self.here = here
        self.closed = False
        self.worker_id: str | None = None  # this process's, when it takes runs too
        # a run may go on in a stored session (its worker opens it from the store)
        self.continues_sessions = source.stored
        self.runs: OrderedDict[str, DurableRun] = OrderedDict()
        self.by_session: dict[str, DurableRun] = {}

    # -- looking up --------------------------------------------------------------------

    @property
    def working(self) -> int:
        return sum(1 for run in self.runs.values() if run.working)

    def latest(self, session_id: str) -> Run | None:
        return self.by_session.get(session_id)

    def known_sessions(self) -> list[str]:
        return list(self.by_session)

    async def get(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if run is None:
            if len(run_id) > 100:
                raise UnknownRun(run_id[:100])
            run = DurableRun(run_id)
            await self._refresh(run)
            self._keep(run)
        else:
            await self._refresh(run)
        return run

    async def _refresh(self, run: DurableRun) -> None:
        """Read what the run recorded since the last look."""
        from harnessc.runtime.durable.config import DurableError

        async with run.lock:
            if run.ended:
                return
            try:
                look = await asyncio.to_thread(self.client.look, run.id, run.steps)
            except DurableError:
                raise UnknownRun(run.id) from None
            had = run.session_id
            run.apply(look)
            if run.session_id and not had and self.runs.get(run.id) is run:
                self.by_session[run.session_id] = run

    def _keep(self, run: DurableRun) -> None:
        self.runs[run.id] = run
        self.runs.move_to_end(run.id)
        if run.session_id:
            self.by_session[run.session_id] = run
        for old in [r for r in self.runs.values() if r.over and r is not run]:
            if len(self.runs) <= self.kept_runs:
                break
            del self.runs[old.id]
            if self.by_session.get(old.session_id) is old:
                del self.by_session[old.session_id]

    # -- following ---------------------------------------------------------------------

    async def _wait(self, run: Run, seen: int, timeout: float | None) -> None:
        """Wait for the run's next change, reading its records meanwhile."""
        assert isinstance(run, DurableRun)
        run.watchers += 1
        try:
            if (run.poller is None or run.poller.done()) and not self.closed:
                run.poller = asyncio.get_running_loop().create_task(self._poll(run))
            await run.wait(seen, timeout)
        finally:
            run.watchers -= 1

    async def _poll(self, run: DurableRun) -> None:
        while run.watchers > 0 and not self.closed:
            try:
                await self._refresh(run)
            except UnknownRun:
                return
            except Exception:  # a database hiccup: the next look tries again
                pass
            if run.over:
                return
            await asyncio.sleep(POLL_S)

    def events(
        self, run: Run, after: int = 0, keep_alive_s: float = KEEP_ALIVE_S
    ) -> AsyncIterator[tuple[int, str] | None]:
        return follow(run, after, keep_alive_s, wait=self._wait)

    async def settled(self, run: Run) -> Run:
        assert isinstance(run, DurableRun)
        await self._refresh(run)
        while not run.over:
            await self._wait(run, run.version, None)
        return run

    # -- starting ----------------------------------------------------------------------

    async def start(self, request: RunRequest) -> Run:
        """Submit a run (or start it here): on a stored session (one run of a session at
        a time), else on a new session made here in the store (with the request's
        context as its history, so the run's session id is known at once) or, with
        sessions in memory, by the worker."""
        from harnessc.runtime.durable.clients import SessionInUse, run_request

        if self.source.draining:
            raise Overloaded("the server is shutting down")
        target = request.session
        if target is not None and not isinstance(target, str):
            raise SetupError("a durable run goes on in a stored session, given by its id")
        context = request.context
        session_id = target
        if session_id is not None:
            session_id = await asyncio.to_thread(self._stored_session, session_id)
        elif self.source.stored:
            session_id = await asyncio.to_thread(self._new_session, list(context))
            context = []
        definitions = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ]
        images = [{"data": i.data, "mime_type": i.mime_type} for i in request.images]
        try:
            if self.here:
                run_id = await asyncio.to_thread(
                    self._start_here,
                    run_request(
                        request.prompt,
                        self.source.cwd,
                        session_id=session_id,
                        context=[m.to_dict() for m in context],
                        tools=definitions,
                        images=images,
                        model=request.model,
                        budget=request.budget,
                    ),
                )
            else:
                run_id = await asyncio.to_thread(
                    self.client.submit,
                    request.prompt,
                    session_id=session_id,
                    context=[m.to_dict() for m in context],
                    tools=definitions,
                    images=images,
                    model=request.model,
                    budget=request.budget,
                )
        except SessionInUse as exc:
            raise Conflict(
                await asyncio.to_thread(self._busy, exc.session_id, exc.run_id)
            ) from None
        run = DurableRun(run_id, session_id or "", "running" if self.here else "queued")
        if request.listener is not None:
            run.listeners.append(request.listener)
        self._keep(run)
        return run

    def _start_here(self, request: dict[str, Any]) -> str:
        """Start the run as a workflow of this process (DBOS launched here)."""
        from dbos import DBOS, SetWorkflowID

        from harnessc.runtime.durable.workflow import durable_run

        run_id = str(uuid.uuid4())
        with SetWorkflowID(run_id):
            DBOS.start_workflow(durable_run, request)
        return run_id

    def _stored_session(self, session_id: str) -> str:
        """The full id of a stored session a new run may go on in (UnknownSession, or
        Conflict naming the run that holds it)."""
        try:
            session = self.source.open_session(session_id)
        except SessionBusy:
            holder = self.client.holder(session_id)
            if holder is None:
                raise
            raise Conflict(self._busy(session_id, holder)) from None
        try:
            return session.id
        finally:
            session.close()

    def _new_session(self, context: list[Any]) -> str:
        session = self.source.new_session(context)
        try:
            return session.id
        finally:
            session.close()

    def _busy(self, session_id: str, run_id: str | None) -> str:
        """The words for a session that has a run going on (as a plain run's)."""
        if run_id is None:
            return f"session {session_id} has a run working"
        state = self.client.waiting(run_id).get("state")
        if state == "awaiting_tool":
            return (
                f"session {session_id} has a run ({run_id}) waiting for tool results: resume "
                'it with them (a result may be {"error": "..."}), or abort it'
            )
        if state == "paused":
            return f"session {session_id} has a run paused ({run_id}): resume or abort it first"
        return f"session {session_id} has a run working ({run_id})"

    # -- answering a pause, aborting ---------------------------------------------------

    async def answer(self, run: Run, answer: Answer) -> None:
        from harnessc.runtime.durable.config import DurableError

        assert isinstance(run, DurableRun)
        if self.source.draining:
            raise Overloaded("the server is shutting down")
        await self._refresh(run)
        if run.status not in PAUSED or run.pause is None:
            raise Conflict(f"run {run.id} is {run.status}, not paused")
        check_answer(run.pause, answer, run.id)
        async with run.lock:
            try:
                await asyncio.to_thread(self.client.answer, run.id, answer)
            except DurableError as exc:
                raise Conflict(str(exc)) from None
        await self._taken(run)

    async def _taken(self, run: DurableRun) -> bool:
        """Wait (a while) for a worker to take an answer: until then the run's records
        still show the pause it answered. Whether it was taken."""
        deadline = time.monotonic() + TAKE_S
        while time.monotonic() < deadline:
            await asyncio.sleep(POLL_S / 2)
            await self._refresh(run)
            if run.status not in PAUSED:
                return True
        return False

    async def abort(self, run: Run, reason: str = "aborted") -> None:
        """A working run is cancelled (its worker lets it go at its next step); a paused
        one is ended by its worker as ``aborted`` (recorded in its session), or, when no
        worker takes the abort in time, cancelled."""
        from harnessc.runtime.durable.config import DurableError

        assert isinstance(run, DurableRun)
        await self._refresh(run)
        if run.over and run.status not in PAUSED:
            raise Conflict(f"run {run.id} has ended ({run.status})")
        try:
            if run.status in PAUSED:
                await asyncio.to_thread(self.client.abort, run.id, reason)
                if await self._taken(run):
                    await self.settled(run)
                    return
            await asyncio.to_thread(self.client.cancel_workflow, run.id)
        except DurableError as exc:
            raise Conflict(str(exc)) from None
        await self._refresh(run)

    # -- sessions ----------------------------------------------------------------------

    async def transcript(self, session_id: str) -> Transcript:
        return await asyncio.to_thread(self._read, session_id)

    def _read(self, session_id: str) -> Transcript:
        session = self.source.open_session(session_id)
        try:
            messages = [m.to_dict() for m in session.context().messages]
            return Transcript(session_id, session.name, messages)
        finally:
            session.close()

    # -- shutting down -----------------------------------------------------------------

    async def drain(self, grace_s: float) -> None:
        """Nothing runs here: the runs go on in their workers. Stop reading, close the
        client."""
        self.source.draining = True
        if self.closed:
            return
        self.closed = True
        for run in list(self.runs.values()):
            if run.poller is not None:
                run.poller.cancel()
        await asyncio.to_thread(self.client.close)

"""Runs of a durable agent (a spec with ``durable:``): a new run is submitted to the DBOS
queue through ``DurableRuns`` and whichever worker takes it runs it (with ``--serve
--worker`` this process is one of them, through DBOS's executor, never through this
registry). A run continues a stored session or starts one made here in the store, one
run of a session at a time; an AG-UI client's tools are external tools of its run. Its status, events, answers and cancel all go through the run's records
in the DBOS database, so every server on that database sees every run, whichever
worker holds it, and a run a dead worker left is followed on where another recovered it.

A run's events are those its steps recorded, in step order (then those of its output),
so their numbers are the same in every server and a replayed step adds none twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.budget import BUDGET_LIMITS, Budget
from harnessc.runtime.core.messages import Message, ToolCall
from harnessc.runtime.serve.harnesses import AgentSource, SessionBusy
from harnessc.runtime.serve.runs import PAUSED, Conflict, Overloaded, Run, RunRegistry, UnknownRun
from harnessc.runtime.tools.base import AgentTool

if TYPE_CHECKING:
    from harnessc.runtime.durable.clients import DurableRuns, RunLook

__all__ = ["DurableRegistry", "DurableRun"]

POLL_S = 0.2  # a watched run's records are read this often
TAKE_S = 10.0  # how long an answer's POST waits for the worker to take it
QUEUED = "queued"
# DurableRuns' states as the run API names them
_STATUS = {"failed": "error", "cancelled": "aborted"}


@dataclass(slots=True, eq=False)
class DurableRun(Run):
    """A durable run as this server last read it; watching it (a stream, a wait) keeps
    reading its records while it is queued or running."""

    registry: DurableRegistry | None = None
    steps: int = 0  # the run's steps read so far
    ended: bool = False  # its records are all read: nothing changes any more
    watchers: int = 0
    poller: asyncio.Task[None] | None = None
    lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)

    @property
    def working(self) -> bool:
        return self.status in (QUEUED, "running")

    @property
    def over(self) -> bool:
        return not self.working

    async def changed(self) -> None:
        wake = self._wake
        self.watchers += 1
        try:
            if self.registry is not None:
                self.registry.watch(self)
            await wake.wait()
        finally:
            self.watchers -= 1

    def apply(self, look: RunLook) -> None:
        """What one look found: new events, the state, what it waits for."""
        state = str(look.row.get("state") or "running")
        status = _STATUS.get(state, state)
        waits = state in PAUSED
        before = (self.status, self.reason, self.session_id, len(self.pending))
        self.status = status
        self.awaiting = state == "awaiting_tool"
        self.reason = (
            str(look.waiting.get("reason") or state)
            if waits
            else ("cancelled" if state == "cancelled" else str(look.row.get("reason") or ""))
        )
        self.pending = [
            ToolCall(id=str(c["id"]), name=str(c.get("name", "")), arguments=_args(c))
            for c in (look.waiting.get("calls") or [] if waits else [])
        ]
        self.text = look.text
        self.session_id = self.session_id or look.session_id or ""
        self.steps = look.steps
        self.ended = look.ended
        for event in look.events:
            self.events.append(json.dumps(event, ensure_ascii=False, default=str))
        after = (self.status, self.reason, self.session_id, len(self.pending))
        if look.events or after != before:
            self._notify()

    def to_dict(self) -> dict[str, Any]:
        out = Run.to_dict(self)
        out["session_id"] = self.session_id or None  # none before a worker began the run
        return out


def _args(call: Mapping[str, Any]) -> dict[str, Any]:
    arguments = call.get("arguments")
    return arguments if isinstance(arguments, dict) else {}


class DurableRegistry(RunRegistry):
    """The runs of a durable agent as this server knows them: it submits and reads, the
    workers execute. ``--max-runs`` does not apply (the queue's concurrency does)."""

    durable = True

    def __init__(self, source: AgentSource, client: DurableRuns, *, kept_runs: int) -> None:
        super().__init__(source, max_runs=1, kept_runs=kept_runs)
        self.client = client
        self.closed = False
        self.worker_id: str | None = None  # this process's, when it takes runs too
        # a run may go on in a stored session (its worker opens it from the store)
        self.continues_sessions = source.stored

    # -- looking up --------------------------------------------------------------------

    def get(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if run is None:
            raise UnknownRun(run_id)
        return run

    async def lookup(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if not isinstance(run, DurableRun):
            if len(run_id) > 100:
                raise UnknownRun(run_id[:100])
            run = DurableRun(id=run_id, session_id="", status=QUEUED, registry=self)
            await self.refresh(run)
            self._keep(run)
        else:
            await self.refresh(run)
        return run

    async def refresh(self, run: DurableRun) -> None:
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

    def watch(self, run: DurableRun) -> None:
        """Keep reading ``run`` while someone waits on it and it is queued or running."""
        if (run.poller is None or run.poller.done()) and not self.closed:
            run.poller = asyncio.get_running_loop().create_task(self._poll(run))

    async def _poll(self, run: DurableRun) -> None:
        while run.watchers > 0 and not self.closed:
            try:
                await self.refresh(run)
            except UnknownRun:
                return
            except Exception:  # a database hiccup: the next look tries again
                pass
            if run.over:
                return
            await asyncio.sleep(POLL_S)

    # -- starting ----------------------------------------------------------------------

    async def start(
        self,
        prompt: str | Message,
        session_id: str | None = None,
        *,
        context: Sequence[Message] = (),
        tools: Sequence[AgentTool] = (),
    ) -> Run:
        """Submit a run: on ``session_id`` (stored; one run of a session at a time), else
        on a new session made here in the store (with ``context`` as its history, so the
        run's session id is known at once) or, with sessions in memory, by the worker."""
        from harnessc.runtime.durable.clients import SessionInUse

        if self.source.draining:
            raise Overloaded("the server is shutting down")
        if session_id is not None:
            session_id = await asyncio.to_thread(self._stored_session, session_id)
        elif self.source.stored:
            session_id = await asyncio.to_thread(self._new_session, context)
            context = ()
        definitions = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in tools
        ]
        try:
            run_id = await asyncio.to_thread(
                self.client.submit,
                _prompt_text(prompt),
                session_id=session_id,
                context=[m.to_dict() for m in context],
                tools=definitions,
            )
        except SessionInUse as exc:
            raise Conflict(
                await asyncio.to_thread(self._busy, exc.session_id, exc.run_id)
            ) from None
        run = DurableRun(id=run_id, session_id=session_id or "", status=QUEUED, registry=self)
        self._keep(run)
        return run

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

    def _new_session(self, context: Sequence[Message]) -> str:
        session = self.source.new_session(context)
        try:
            return session.id
        finally:
            session.close()

    def _busy(self, session_id: str, run_id: str | None) -> str:
        """The in-process server's words for a session that has a run going on."""
        if run_id is None:
            return f"session {session_id} has a run working"
        state = self.client.waiting(run_id).get("state")
        if state == "awaiting_tool":
            return (
                f"session {session_id} has a run ({run_id}) waiting for tool results: resume "
                'it with them (a result may be {"error": "..."})'
            )
        if state == "paused":
            return f"session {session_id} has a run paused ({run_id}): resume or abort it first"
        return f"session {session_id} has a run working ({run_id})"

    # -- answering a pause -------------------------------------------------------------

    async def resume(
        self,
        run: Run,
        *,
        results: Mapping[str, Any] | None = None,
        approvals: Mapping[str, bool] | None = None,
        budget: Budget | None = None,
    ) -> None:
        from harnessc.runtime.durable.config import DurableError

        assert isinstance(run, DurableRun)
        if self.source.draining:
            raise Overloaded("the server is shutting down")
        await self.refresh(run)
        if run.status not in PAUSED:
            raise Conflict(f"run {run.id} is {run.status}, not paused")
        answers: dict[str, Any]
        if run.awaiting:
            if approvals:
                raise Conflict("the run waits for tool results, not approvals")
            answers = dict(results or {})
        else:
            if results:
                raise Conflict("the run is paused, not waiting for tool results: no results")
            answers = {}
            if approvals:
                answers["approve"] = [i for i, ok in approvals.items() if ok]
                answers["deny"] = [i for i, ok in approvals.items() if not ok]
            if budget is not None:
                answers["budget"] = {
                    k: getattr(budget, k) for k in BUDGET_LIMITS if getattr(budget, k) is not None
                }
        async with run.lock:
            try:
                await asyncio.to_thread(self.client.resume_with, run.id, answers)
            except DurableError as exc:
                raise Conflict(str(exc)) from None
        await self._taken(run)

    async def _taken(self, run: DurableRun) -> None:
        """Wait (a while) for a worker to take an answer: until then the run's records
        still show the pause it answered."""
        deadline = time.monotonic() + TAKE_S
        while time.monotonic() < deadline:
            await asyncio.sleep(POLL_S / 2)
            await self.refresh(run)
            if run.status not in PAUSED:
                return

    async def abort(self, run: Run, reason: str = "aborted over HTTP") -> None:
        from harnessc.runtime.durable.config import DurableError

        assert isinstance(run, DurableRun)
        await self.refresh(run)
        if run.over and run.status not in PAUSED:
            raise Conflict(f"run {run.id} has ended ({run.status})")
        try:
            await asyncio.to_thread(self.client.cancel, run.id)
        except DurableError as exc:
            raise Conflict(str(exc)) from None
        await self.refresh(run)

    # -- shutting down -----------------------------------------------------------------

    async def drain(self, grace_s: float) -> None:
        """Nothing runs here: the runs go on in their workers. Stop reading, close the
        client."""
        self.source.draining = True
        if self.closed:
            return
        self.closed = True
        for run in list(self.runs.values()):
            if isinstance(run, DurableRun) and run.poller is not None:
                run.poller.cancel()
        await asyncio.to_thread(self.client.close)


def _prompt_text(prompt: str | Message) -> str:
    if isinstance(prompt, str):
        return prompt
    return _message_text(prompt)


def _message_text(message: Message) -> str:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(str(getattr(p, "text", "") or "") for p in content)

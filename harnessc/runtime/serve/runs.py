"""Runs of the server: each a task driving one harness, its events kept (encoded as
``--json`` prints them) so a stream can replay them from the first, its status and
pending calls, and the answers that resume it.

A run id is ``<session id>.<random>``: after a restart a paused run is found again
through its session, which recorded the pause.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessc.runtime.agent import AgentHarness, RunResult
from harnessc.runtime.core.budget import Budget
from harnessc.runtime.core.events import Event
from harnessc.runtime.core.messages import Message, ToolCall
from harnessc.runtime.serve.harnesses import AgentSource, SessionBusy, UnknownSession
from harnessc.runtime.tools.base import AgentTool

__all__ = [
    "KEEP_ALIVE_S",
    "Conflict",
    "Overloaded",
    "Run",
    "RunRegistry",
    "UnknownRun",
    "encode_event",
    "follow",
]

WORKING = "running"
PAUSED = ("paused", "awaiting_tool")
KEEP_ALIVE_S = 15.0  # a stream with nothing to send says so this often (a comment line)


class UnknownRun(LookupError):
    pass


class Conflict(RuntimeError):
    """The request does not fit the run's state (not paused, answers that do not match)."""


class Overloaded(RuntimeError):
    """As many runs are working as the server allows."""


def encode_event(event: Event) -> str:
    """An event as the agent's ``--json`` prints it (one JSON object)."""
    return json.dumps(event.to_dict(), ensure_ascii=False, default=str)


@dataclass(slots=True, eq=False)
class Run:
    id: str
    session_id: str
    status: str = WORKING
    reason: str = ""
    text: str = ""
    pending: list[ToolCall] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # encoded; SSE id = index + 1
    harness: AgentHarness | None = None  # open while working or paused
    task: asyncio.Task[None] | None = None
    awaiting: bool = False  # paused at a tool pull point (results answer it)
    usage: dict[str, Any] | None = None  # the tree's usage, from the run's agent_end
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def working(self) -> bool:
        return self.status == WORKING

    @property
    def over(self) -> bool:
        """Nothing more comes on this run's stream until it is resumed."""
        return self.status != WORKING

    def add(self, event: Event) -> None:
        self.events.append(encode_event(event))
        if event.type == "agent_end":
            self.usage = getattr(event, "usage", None)
        self._notify()

    def _notify(self) -> None:
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    async def changed(self) -> None:
        """Wait for the next event or status change."""
        await self._wake.wait()

    async def finished(self) -> None:
        """Wait until the run ends or pauses."""
        if self.task is not None:
            await asyncio.wait({self.task})
        while not self.over:
            await self.changed()

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.id,
            "session_id": self.session_id,
            "status": self.status,
            "reason": self.reason,
            "text": self.text,
            "pending_tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.pending
            ],
            "events": len(self.events),
            "usage": self.usage,
        }


class RunRegistry:
    """Every run of the process; ``max_runs`` bounds those working at once."""

    continues_sessions = True  # a new prompt may go on in a stored session
    durable = False  # the runs are a DBOS queue's, run by workers

    def __init__(self, source: AgentSource, *, max_runs: int, kept_runs: int = 1000) -> None:
        self.source = source
        self.max_runs = max_runs
        self.kept_runs = kept_runs
        self.runs: OrderedDict[str, Run] = OrderedDict()
        self.by_session: dict[str, Run] = {}  # the latest run of each session

    # -- looking up --------------------------------------------------------------------

    @property
    def working(self) -> int:
        return sum(1 for run in self.runs.values() if run.working)

    def get(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if run is not None:
            return run
        return self._recover(run_id)

    async def lookup(self, run_id: str) -> Run:
        """The run as it stands now (``get``, for the endpoints)."""
        return self.get(run_id)

    def _recover(self, run_id: str) -> Run:
        """A run paused before a restart: open its session, which recorded the pause."""
        session_id, dot, _ = run_id.rpartition(".")
        if not dot or not session_id or not self.source.stored:
            raise UnknownRun(run_id)
        if session_id in self.by_session:
            raise UnknownRun(run_id)
        try:
            harness = self.source.harness(self.source.open_session(session_id))
        except (UnknownSession, SessionBusy):
            raise UnknownRun(run_id) from None
        reason = harness.paused_reason
        if reason is None:
            _discard(harness)
            raise UnknownRun(run_id)
        run = Run(id=run_id, session_id=session_id, harness=harness)
        self._settle(run, harness, reason, harness.pending_tool_calls)
        self._keep(run)
        return run

    # -- starting ----------------------------------------------------------------------

    def _check_room(self) -> None:
        if self.source.draining:
            raise Overloaded("the server is shutting down")
        if self.working >= self.max_runs:
            raise Overloaded(f"{self.max_runs} runs are working (--max-runs)")

    async def start(
        self,
        prompt: str | Message,
        session_id: str | None = None,
        *,
        context: Sequence[Message] = (),
        tools: Sequence[AgentTool] = (),
    ) -> Run:
        """A new run on a new session (with ``context`` as its history) or a stored one."""
        self._check_room()
        if session_id is not None:
            harness = self._idle_harness(session_id, tools)
        else:
            harness = self.source.harness(self.source.new_session(context), tools)
        run = Run(id=f"{harness.session.id}.{secrets.token_hex(4)}", session_id=harness.session.id)
        self._launch(run, harness, lambda: harness.prompt(prompt))
        return run

    def _idle_harness(self, session_id: str, tools: Sequence[AgentTool]) -> AgentHarness:
        """The session's harness for a new prompt. A run waiting for tool results must
        get them first; one paused otherwise is left (the harness starts afresh)."""
        latest = self.by_session.get(session_id)
        if latest is not None and latest.working:
            raise Conflict(f"session {session_id} has a run working ({latest.id})")
        if latest is not None and latest.status == "awaiting_tool":
            raise Conflict(_awaiting(session_id, latest.id))
        if latest is not None and latest.harness is not None:
            if latest.status == "paused":
                latest.status, latest.reason = "aborted", "left for a new prompt on its session"
                latest.pending = []
                latest._notify()
            if not tools:
                harness = latest.harness
                latest.harness = None
                return harness
            self._close(latest)
        if latest is None and self.source.repo is None:
            raise UnknownSession(session_id)
        harness = self.source.harness(self.source.open_session(session_id), tools)
        if harness.paused_reason == "awaiting_tool":
            _discard(harness)
            raise Conflict(_awaiting(session_id, None))
        return harness

    def _launch(
        self, run: Run, harness: AgentHarness, body: Callable[[], Awaitable[RunResult]]
    ) -> None:
        run.harness = harness
        run.status = WORKING
        run.reason = ""
        run.pending = []
        unsubscribe = harness.subscribe(run.add)
        self._keep(run)
        run.task = asyncio.create_task(self._drive(run, harness, body, unsubscribe))

    async def _drive(
        self,
        run: Run,
        harness: AgentHarness,
        body: Callable[[], Awaitable[RunResult]],
        unsubscribe: Callable[[], None],
    ) -> None:
        try:
            result = await body()
        except asyncio.CancelledError:
            run.status, run.reason = "aborted", "cancelled"
            unsubscribe()
            await self._finish(run)
            raise
        except Exception as exc:  # the harness reports its own failures as results
            run.status, run.reason = "error", f"{type(exc).__name__}: {exc}"
            unsubscribe()
            await self._finish(run)
            return
        unsubscribe()
        run.text = result.text
        if result.status in PAUSED:
            self._settle(run, harness, result.status, result.pending_tool_calls, result.reason)
        else:
            run.status, run.reason = result.status, result.reason
            await self._finish(run)

    def _settle(
        self,
        run: Run,
        harness: AgentHarness,
        state: str,
        pending: list[ToolCall],
        reason: str | None = None,
    ) -> None:
        run.harness = harness
        run.awaiting = state == "awaiting_tool"
        run.status = "awaiting_tool" if run.awaiting else "paused"
        run.reason = reason if reason is not None else _recorded_reason(harness, run.awaiting)
        run.pending = list(pending)
        run._notify()

    async def _finish(self, run: Run) -> None:
        """A run that ended: keep its harness for the session's next run when sessions
        live in memory, close it when they are stored."""
        run._notify()
        if run.harness is not None and self.source.stored:
            self._close(run)

    def _close(self, run: Run) -> None:
        harness, run.harness = run.harness, None
        if harness is not None:
            _discard(harness)

    def _keep(self, run: Run) -> None:
        self.runs[run.id] = run
        self.runs.move_to_end(run.id)
        if run.session_id:
            self.by_session[run.session_id] = run
        while len(self.runs) > self.kept_runs:
            oldest = next((r for r in self.runs.values() if r.over and r.harness is None), None)
            if oldest is None:
                break
            del self.runs[oldest.id]
            if self.by_session.get(oldest.session_id) is oldest:
                del self.by_session[oldest.session_id]

    # -- answering a pause -------------------------------------------------------------

    async def resume(
        self,
        run: Run,
        *,
        results: Mapping[str, Any] | None = None,
        approvals: Mapping[str, bool] | None = None,
        budget: Budget | None = None,
    ) -> None:
        if run.status not in PAUSED or run.harness is None:
            raise Conflict(f"run {run.id} is {run.status}, not paused")
        self._check_room()
        harness = run.harness
        pending = {c.id for c in run.pending}
        if run.awaiting:
            if approvals:
                raise Conflict("the run waits for tool results, not approvals")
            given = dict(results or {})
            missing = sorted(pending - set(given))
            unknown = sorted(set(given) - pending)
            if missing or unknown:
                problems = [f"no result for {', '.join(missing)}"] if missing else []
                problems += [f"no pending call {', '.join(unknown)}"] if unknown else []
                raise Conflict(
                    "; ".join(problems) + f" (pending: {', '.join(sorted(pending)) or 'none'})"
                )
            self._launch(run, harness, lambda: harness.resume(given, budget=budget))
            return
        if results:
            raise Conflict("the run is paused, not waiting for tool results: no results")
        answers: dict[str, bool] = {}
        if approvals:
            from harnessc.runtime.cli.args import UsageError
            from harnessc.runtime.cli.permission import answer_asks

            allow = [i for i, ok in approvals.items() if ok]
            deny = [i for i, ok in approvals.items() if not ok]
            try:
                _, answers = answer_asks(harness, allow, deny)
            except UsageError as exc:
                message = str(exc).replace("--approve: ", "").replace("--deny: ", "")
                raise Conflict(message) from None
        self._launch(run, harness, lambda: harness.resume(budget=budget, approvals=answers or None))

    async def abort(self, run: Run, reason: str = "aborted over HTTP") -> None:
        if run.status in PAUSED:
            raise Conflict(
                f"run {run.id} is {run.status}, not working: resume it (a pending call can be "
                'answered {"error": "..."}), or start a new prompt on its session'
            )
        if run.working and run.harness is not None:
            run.harness.abort(reason)

    # -- shutting down -----------------------------------------------------------------

    async def drain(self, grace_s: float) -> None:
        """SIGTERM: working runs pause at their next turn end (recorded in their
        sessions), those still working after ``grace_s`` are aborted; then every harness
        closes."""
        self.source.draining = True
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


async def follow(
    run: Run, after: int = 0, keep_alive_s: float = KEEP_ALIVE_S
) -> AsyncIterator[tuple[int, str] | None]:
    """The run's events after number ``after`` as (index, encoded event), then the new
    ones as they come, until the run ends or pauses; None when ``keep_alive_s`` passed
    without one (the stream's keep-alive). A client that goes away stops only its
    stream, never the run."""
    index = after
    while True:
        while index < len(run.events):
            yield index, run.events[index]
            index += 1
        if run.over:
            return
        try:
            await asyncio.wait_for(run.changed(), keep_alive_s)
        except TimeoutError:
            yield None


def _awaiting(session_id: str, run_id: str | None) -> str:
    run = f" ({run_id})" if run_id else ""
    return (
        f"session {session_id} has a run{run} waiting for tool results: resume it with them "
        '(a result may be {"error": "..."})'
    )


def _recorded_reason(harness: AgentHarness, awaiting: bool) -> str:
    if awaiting:
        return "awaiting_tool"
    from harnessc.runtime.cli.pause import pause_reason

    return pause_reason(harness.session) or "paused"


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

"""A run as a DBOS workflow (imported only by durable verbs; imports DBOS).

The request is the prompt and the working folder; a ``session_id`` continues that stored
session (its entries when the run began are the history, those after it this run's own,
so a replay appends none twice), ``context`` (messages) starts a new session with that
history, and ``tools`` (name, description, parameters) are external tools of this run
alone (a client's, answered as any external tool is).

The workflow builds the agent's harness (a ``DurableHarness``: every tool it is given,
at the start or later, such as an MCP server's, a ``DurableTool``; its sub-agents are
durable harnesses on the same steps) around a ``DurableSession`` and a
``DurableProvider``, runs the prompt, and turns every pull point, a sub-agent's too,
into a durable wait: an external tool call waits on ``DBOS.recv`` with the call id as
topic, a budget or hook pause on the topic ``resume``. While it waits its state (for
``--runs``) is the event ``state``, once it ends its recorded output; its events (for
``--follow``) are recorded in its steps' outputs, the last ones in its output.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbos import DBOS

from harnessc.runtime.agent import AgentHarness
from harnessc.runtime.durable.harness import DurableHarness, RunSteps, prepare
from harnessc.runtime.durable.pinning import dump_resources, load_resources
from harnessc.runtime.durable.session import DurableSession, ReplayStorage, RunClock
from harnessc.runtime.durable.steps import EventSink, flush_events
from harnessc.runtime.session.session import Session, SessionHeader, iso_now
from harnessc.runtime.support.data_folder import FolderSetting, resolve_folder

__all__ = [
    "RESUME_TOPIC",
    "STATE_EVENT",
    "WAIT_S",
    "WORKFLOW_NAME",
    "DurableAgent",
    "DurableHarness",
    "durable_run",
    "pause_state",
    "register_agent",
]

WORKFLOW_NAME = "harnessc_run"
STATE_EVENT = "state"
RESUME_TOPIC = "resume"
WAIT_S = 24 * 3600.0  # one durable wait; a run waits through as many as it takes


@dataclass(slots=True)
class DurableAgent:
    """What a worker needs to run the agent: the generated module's parts."""

    build_options: Callable[..., Any]
    agent_name: str
    # JSONL sessions: a path (relative: to the run's cwd) or DataFolder("sessions")
    session_dir: FolderSetting | None = None
    session_repo: Callable[[], Any] | None = None  # e.g. the PostgreSQL store
    # the server every model is pointed at (--base-url / $HARNESSC_BASE_URL), and which
    base_url: tuple[str, str] | None = None

    def repo(self, cwd: str) -> Any:
        if self.session_repo is not None:
            return self.session_repo()
        if self.session_dir is None:
            return None
        from harnessc.runtime.session.repo import JsonlSessionRepo

        return JsonlSessionRepo(resolve_folder(self.session_dir, cwd))


_AGENT: DurableAgent | None = None


def register_agent(agent: DurableAgent) -> None:
    """The agent this process's workflows run (set before DBOS is launched)."""
    global _AGENT
    _AGENT = agent


def _agent() -> DurableAgent:
    if _AGENT is None:
        raise RuntimeError("no agent registered for durable runs in this process")
    return _AGENT


def _begin(request: dict[str, Any], run_id: str) -> dict[str, Any]:
    """Step: make the run's session (the header when sessions stay in memory), or find
    the one it continues and how many entries it held when the run began."""
    agent = _agent()
    cwd = request["cwd"]
    metadata = {"agent": agent.agent_name, "run": run_id}
    repo = agent.repo(cwd)
    continued = request.get("session_id")
    if continued:
        if repo is None:
            raise RuntimeError(f"no session {continued}: this agent keeps its sessions in memory")
        session = _open_stored(repo, str(continued))
        try:
            history, session_id = len(session.entries()), session.id
        finally:
            session.close()
        return {"header": None, "session_id": session_id, "ts": iso_now(), "history": history}
    if repo is None:
        header = SessionHeader.new(cwd=cwd, metadata=metadata)
        return {"header": header.to_dict(), "session_id": None, "ts": iso_now()}
    session = repo.create(cwd=cwd, metadata=metadata)
    session_id = session.id
    session.close()
    return {"header": None, "session_id": session_id, "ts": iso_now()}


LOCK_WAIT_S = 10.0  # a session another execution of the run still holds: wait this long


def _open_stored(repo: Any, session_id: str) -> Session:
    """Open a stored session for appending; while its lock is held (the execution of a
    run that is ending, a worker that lost its lease and is stopping) try again a while."""
    from harnessc.runtime.session.lock import SessionLockedError

    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            session: Session = repo.open(session_id)
            return session
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _session(begin: dict[str, Any], run_id: str, clock: RunClock) -> Session:
    agent = _agent()
    if begin["session_id"] is None:
        header = SessionHeader.from_dict(begin["header"])
        return DurableSession(
            header=header, entries=[], storage=None, path=None, seed=run_id, clock=clock
        )
    stored = _open_stored(agent.repo(begin["cwd"]), begin["session_id"])
    assert stored.storage is not None
    entries = stored.entries()
    # a continued session: the entries it held when the run began are its history; the
    # ones after them an earlier execution of this run appended (a replay skips them)
    history = entries[: begin.get("history") or 0]
    mine = entries[len(history) :]
    storage = ReplayStorage(stored.storage, {e.id for e in mine})
    return DurableSession(
        header=stored.header,
        entries=history,
        storage=storage,
        path=stored.path,
        seed=run_id,
        clock=clock,
    )


def _context(session: Session, request: dict[str, Any]) -> None:
    """A new session's history (an OpenAI or AG-UI client's earlier messages)."""
    from harnessc.runtime.core.messages import message_from_dict

    if request.get("session_id"):
        return
    for message in request.get("context") or []:
        session.append_message(message_from_dict(message))


def _client_tools(request: dict[str, Any], have: set[str]) -> list[Any]:
    """The run's external tools from its request (a client's), but for names the agent's
    own tools take."""
    from harnessc.runtime.tools.base import ExternalTool

    tools = []
    for spec in request.get("tools") or []:
        name = str(spec.get("name") or "")
        if name and name not in have:
            parameters = spec.get("parameters")
            tools.append(
                ExternalTool(
                    name,
                    str(spec.get("description") or ""),
                    parameters if isinstance(parameters, dict) else {"type": "object"},
                )
            )
    return tools


async def _harness(session: Session, request: dict[str, Any], steps: RunSteps) -> Any:
    agent = _agent()
    options = agent.build_options(session=session, cwd=request["cwd"])
    extra = _client_tools(request, {t.name for t in options.tools})
    if extra:
        options.tools = [*options.tools, *extra]
    if options.resources is not None:
        # the skills and templates the run started with, whatever the disk holds later
        pinned = await DBOS.run_step_async({"name": "resources"}, dump_resources, options.resources)
        options.resources = load_resources(pinned)
    # the run id and the budget's clock readings: recorded
    harness = DurableHarness(prepare(options, steps, steps.clock), steps)
    harness.subscribe(steps.sink)
    return harness


async def _state(state: str, **fields: Any) -> None:
    await DBOS.set_event_async(STATE_EVENT, {"state": state, **fields})


@DBOS.workflow(name=WORKFLOW_NAME)
async def durable_run(request: dict[str, Any]) -> dict[str, Any]:
    """Run ``request["prompt"]`` in ``request["cwd"]`` (in ``request["session_id"]`` when
    it continues a session) to its end, waiting at pull points."""
    run_id = DBOS.workflow_id or ""
    clock, sink = RunClock(run_id=run_id), EventSink()
    begin = await DBOS.run_step_async({"name": "begin"}, _begin, request, run_id)
    begin["cwd"] = request["cwd"]
    clock.tick(begin["ts"])
    session = await asyncio.to_thread(_session, begin, run_id, clock)  # may wait for its lock
    try:
        _context(session, request)
        steps = RunSteps(sink, clock, _agent().base_url)
        harness = await _harness(session, request, steps)
        result = await harness.prompt(request["prompt"])
        while result.status in ("awaiting_tool", "paused"):
            await flush_events(sink)
            pause = pause_state(result, harness)
            kind = _waits_for(result, harness)
            await _state(kind, **pause, session_id=session.id)
            if kind == "awaiting_tool":
                answers = {c["id"]: await _wait(c["id"]) for c in pause["calls"]}
                await _tick(clock)  # the wait is not run time: the budget's clock skips it
                await _state("running", session_id=session.id)
                result = await harness.resume(answers)
            else:
                message = await _wait(RESUME_TOPIC)
                await _tick(clock)
                await _state("running", session_id=session.id)
                result = await harness.resume(
                    budget=_budget(message, harness.budget.budget),
                    approvals=_approvals(message, harness),
                )
    finally:
        session.close()
    return {
        "status": result.status,
        "reason": result.reason,
        "text": result.text,
        "session_id": session.id,
        # the events since the last step: part of the recorded output, no step of their own
        "events": sink.take(),
    }  # its state (done / failed) is the workflow's recorded output


async def _tick(clock: RunClock) -> None:
    """A step that reads the time: the run's clock after a durable wait."""
    clock.tick(await DBOS.run_step_async({"name": "clock"}, iso_now))


async def _wait(topic: str) -> Any:
    while True:
        message = await DBOS.recv_async(topic, timeout_seconds=WAIT_S)
        if message is not None:
            return message


def _waits_for(result: Any, harness: AgentHarness) -> str:
    """``awaiting_tool`` when the run (or a sub-agent paused inside it) waits for
    external tool results, else ``paused``."""
    if result.status == "awaiting_tool" or harness.paused_reason == "awaiting_tool":
        return "awaiting_tool"
    return "paused"


def _nested(harness: AgentHarness) -> list[tuple[Any, str, str]]:
    """The calls sub-agents paused inside the run's calls wait on: (call, kind, path)."""
    run = harness.run_state
    if run is None:
        return []
    return [n for r in run.calls if r.result is None for n in r.nested_calls()]


def pause_state(result: Any, harness: AgentHarness) -> dict[str, Any]:
    """What a paused run waits for, as its ``state`` event holds it: the reason, the
    calls (external ones, or those a pause held; a sub-agent's with its agent path),
    the permission asks among them, and for a budget pause the limit's use."""
    from harnessc.runtime.cli.pause import budget_limit
    from harnessc.runtime.permissions.gate import pending_asks

    nested = _nested(harness)
    pending = result.pending_tool_calls
    if result.status != "awaiting_tool" and harness.paused_reason == "awaiting_tool":
        pending = [c for c, kind, _ in nested if kind == "tool"]  # what a sub-agent awaits
    paths = {c.id: path for c, _, path in nested}
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in pending]
    for call in calls:
        if call["id"] in paths:
            call["path"] = paths[call["id"]]
    state: dict[str, Any] = {"reason": result.reason, "calls": calls}
    held = {c["id"] for c in calls}
    asks = [i for i in pending_asks(harness.session) if i in held]
    asks += [c.id for c, kind, _ in nested if kind == "approval" and c.id in held]
    state["asks"] = asks
    limit = budget_limit(result.reason)
    if limit is not None:
        state["limit"] = [limit, harness.budget.used(limit), getattr(harness.budget.budget, limit)]
    return state


def _budget(message: Any, current: Any) -> Any:
    """The run's budget with the limits ``message["budget"]`` names raised (the others
    kept); None when it names none."""
    if not isinstance(message, dict) or not isinstance(message.get("budget"), dict):
        return None
    from harnessc.runtime.core.budget import BUDGET_LIMITS, Budget

    raised = {k: v for k, v in message["budget"].items() if k in BUDGET_LIMITS}
    if not raised:
        return None
    return dataclasses.replace(current if current is not None else Budget(), **raised)


def _approvals(message: Any, harness: AgentHarness) -> dict[str, bool] | None:
    """``{"approve": [ids], "deny": [ids]}``: the answers to the held calls among them
    (recorded in the session as ``--approve`` / ``--deny`` record them)."""
    if not isinstance(message, dict):
        return None
    from harnessc.runtime.cli.permission import answer_asks

    held = {c.id for c in harness.pending_tool_calls}
    approve = [str(i) for i in message.get("approve") or [] if str(i) in held]
    deny = [str(i) for i in message.get("deny") or [] if str(i) in held and str(i) not in approve]
    if not approve and not deny:
        return None
    return answer_asks(harness, approve, deny)[1]

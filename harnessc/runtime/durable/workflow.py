"""A run as a DBOS workflow (imported only by durable verbs; imports DBOS).

The request is the prompt (with ``images``: base64 and MIME type) and the working folder;
a ``session_id`` continues that stored session (its entries when the run began are the
history, those after it this run's own, so a replay appends none twice), ``context``
(messages) starts a new session with that history, ``tools`` (name, description,
parameters) are external tools of this run alone (a client's, answered as any external
tool is), ``model`` (a key of the agent's models) and ``budget`` (limits by name) are
this run's.

The workflow builds the agent's harness (a ``DurableHarness``: every tool it is given,
at the start or later, such as an MCP server's, a ``DurableTool``; its sub-agents are
durable harnesses on the same steps) around a ``DurableSession`` and a
``DurableProvider``, runs the prompt, and turns every pull point, a sub-agent's too,
into a durable wait on ``DBOS.recv`` with the topic ``resume``: the message is the
run-control layer's ``Answer`` (``{"answer": {...}}``) or an abort (``{"abort":
reason}``), the same for every kind of pause. While it waits its state (for ``--runs``
and every server) is the event ``state`` (``pause``: the layer's ``Pause``), once it
ends its recorded output (with the typed value); its events (for ``--follow``) are
recorded in its steps' outputs, the last ones in its output. A session another worker
still holds (one stalled past its lease, whose runs this worker took over) is waited
for, however long, under this worker's lease: its holder ends once it finds its lease
lost, and the lock goes with it.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbos import DBOS

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
    # the operator's --sandbox mode for every run (None: the spec's)
    sandbox: str | None = None

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


async def _begin_in_memory(request: dict[str, Any], run_id: str) -> dict[str, Any]:
    return _begin(request, run_id)


def _begin_step() -> Callable[[dict[str, Any], str], Any]:
    """``_begin`` as the step runs it: on the loop when the agent keeps its sessions in
    memory (a header made, no file touched), else in a thread (DBOS runs a plain
    function's step in one)."""
    agent = _agent()
    if agent.session_repo is None and agent.session_dir is None:
        return _begin_in_memory
    return _begin


LOCK_POLL_S = 0.2  # a session another process holds is tried again this often


def _open_stored(repo: Any, session_id: str) -> Session:
    """Open a stored session for appending, waiting while another process holds its
    lock (the execution of a run that is ending, or a worker stalled past its lease
    whose run this one took over: it ends at its next beat or step, and its lock with
    it). The wait is under this worker's lease: should this worker stop, the run goes
    on where it is recovered. Said once on stderr."""
    from harnessc.runtime.session.lock import SessionLockedError

    said = False
    while True:
        try:
            session: Session = repo.open(session_id)
            return session
        except SessionLockedError as exc:
            if not said:
                said = True
                who = f"process {exc.pid}" if exc.pid is not None else "another process"
                sys.stderr.write(
                    f"harnessc: run {DBOS.workflow_id}: session {session_id} is held by "
                    f"{who}; waiting for it\n"
                )
                sys.stderr.flush()
            time.sleep(LOCK_POLL_S)


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
    from harnessc.runtime.runs.agent import pause_mcp_requests
    from harnessc.runtime.runs.answers import raised_budget

    agent = _agent()
    options = agent.build_options(session=session, cwd=request["cwd"])
    pause_mcp_requests(options)  # a login or a question waits for the run's answer
    extra = _client_tools(request, {t.name for t in options.tools})
    if extra:
        options.tools = [*options.tools, *extra]
    limits = request.get("budget")
    if isinstance(limits, dict) and limits:
        options.budget = raised_budget(options.budget, limits)
    if options.resources is not None:
        # the skills and templates the run started with, whatever the disk holds later
        pinned = await DBOS.run_step_async({"name": "resources"}, dump_resources, options.resources)
        options.resources = load_resources(pinned)
    # the run id and the budget's clock readings: recorded
    harness = DurableHarness(prepare(options, steps, steps.clock), steps)
    if extra:  # the client answers its own tools: an ask does not hold them
        from harnessc.runtime.permissions.gate import find_gate

        gate = find_gate(harness.options.hooks)
        if gate is not None:
            gate.client_tools = frozenset(t.name for t in extra)
    model = request.get("model")
    if isinstance(model, str) and model and model != harness.model_key():
        await harness.set_model(model)
    harness.subscribe(steps.sink)
    return harness


async def _state(state: str, **fields: Any) -> None:
    await DBOS.set_event_async(STATE_EVENT, {"state": state, **fields})


@DBOS.workflow(name=WORKFLOW_NAME)
async def durable_run(request: dict[str, Any]) -> dict[str, Any]:
    """Run ``request["prompt"]`` in ``request["cwd"]`` (in ``request["session_id"]`` when
    it continues a session) to its end, waiting at pull points."""
    from harnessc.runtime.runs.pauses import pause_of

    run_id = DBOS.workflow_id or ""
    clock, sink = RunClock(run_id=run_id), EventSink()
    begin = await DBOS.run_step_async({"name": "begin"}, _begin_step(), request, run_id)
    begin["cwd"] = request["cwd"]
    clock.tick(begin["ts"])
    if begin["session_id"] is None:  # in memory: nothing to open, no lock to wait for
        session = _session(begin, run_id, clock)
    else:  # a stored session: read from its store, and its lock may be held
        session = await asyncio.to_thread(_session, begin, run_id, clock)
    try:
        _context(session, request)
        steps = RunSteps(sink, clock, _agent().base_url, _agent().sandbox)
        harness = await _harness(session, request, steps)
        if harness.paused_reason is not None:
            # a run of the session cancelled while it waited left its pause: end it
            await harness.abort_paused("left by a cancelled run of the session")
        result = await harness.prompt(request["prompt"], _images(request) or None)
        while result.status in ("awaiting_tool", "paused"):
            await flush_events(sink)
            pause = pause_of(harness, result.reason)
            assert pause is not None
            await _state(pause.status, **pause_state(pause), session_id=session.id)
            message = await _answer(pause)
            await _tick(clock)  # the wait is not run time: the budget's clock skips it
            await _state("running", session_id=session.id)
            if isinstance(message, str):
                result = await harness.abort_paused(message)
            else:
                from harnessc.runtime.runs.answers import resume_arguments, resume_run

                arguments = resume_arguments(harness, pause, message)
                result = await resume_run(harness, pause, message, arguments)
    finally:
        session.close()
    config = harness.options.output
    output = None
    if config is not None and result.status == "done" and result.reply is None:
        output = config.to_json(result.output)
    return {
        "status": result.status,
        "reason": result.reason,
        "text": result.text,
        "output": output,
        "session_id": session.id,
        # the events since the last step: part of the recorded output, no step of their own
        "events": sink.take(),
    }  # its state (done / failed) is the workflow's recorded output


async def _answer(pause: Any) -> Any:
    """The answer to ``pause`` (an ``Answer``), or the reason of an abort (a string).
    A message that does not fit the pause (the clients check first) is passed over."""
    from harnessc.runtime.runs.answers import Answer, check_answer
    from harnessc.runtime.runs.errors import Conflict

    while True:
        message = await _wait(RESUME_TOPIC)
        if not isinstance(message, dict):
            continue
        if "abort" in message:
            return str(message.get("abort") or "aborted")
        given = message.get("answer")
        if not isinstance(given, dict):
            continue
        answer = Answer.from_dict(given)
        try:
            # a login's redirect from the URL the caller saw, which a recovered run may
            # have replaced: the resume shows the fresh one
            check_answer(pause, answer, current=False)
        except Conflict:
            continue
        return answer


def _images(request: dict[str, Any]) -> list[Any]:
    from harnessc.runtime.core.messages import ImageContent

    return [
        ImageContent(str(i["data"]), str(i["mime_type"]))
        for i in request.get("images") or []
        if isinstance(i, dict) and i.get("data") and i.get("mime_type")
    ]


async def _tick(clock: RunClock) -> None:
    """A step that reads the time: the run's clock after a durable wait."""
    clock.tick(await DBOS.run_step_async({"name": "clock"}, iso_now))


async def _wait(topic: str) -> Any:
    while True:
        message = await DBOS.recv_async(topic, timeout_seconds=WAIT_S)
        if message is not None:
            return message


def pause_state(pause: Any) -> dict[str, Any]:
    """What a paused run waits for, as its ``state`` event holds it: the layer's
    ``Pause`` (``pause``), and for clients that read them the reason, the calls (a
    sub-agent's with its agent path), the permission asks among them, and for a budget
    pause the limit's use (``[name, used, limit]``)."""
    calls = []
    for call in pause.calls:
        item = {"id": call.id, "name": call.name, "arguments": call.arguments}
        if call.path:
            item["path"] = call.path
        calls.append(item)
    state: dict[str, Any] = {
        "reason": pause.reason,
        "calls": calls,
        "asks": [c.id for c in pause.held],
        "pause": pause.to_dict(),
    }
    if pause.budget is not None:
        use = pause.budget
        state["limit"] = [use.limit, use.used, use.allowed]
    return state

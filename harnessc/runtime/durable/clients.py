"""The durable runs of an agent from any process: ``DurableRuns`` submits, reads and
answers them with DBOS's client API only (nothing here starts an executor, so no client
can recover, and run a second time, a run it looks at). The command line's durable
verbs (``--submit``, ``--runs``, ``--follow``, ``--run``; a run named by its id or the
first characters of one run's id) and every server use it."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessc.runtime.durable.config import DurableConfig, DurableError
from harnessc.runtime.durable.steps import output_events, step_events

__all__ = ["WAITING", "DurableRuns", "RunLook", "SessionInUse", "answer_of"]


def _client(config: DurableConfig, cwd: str, *, create: bool = False) -> Any:
    from harnessc.runtime.durable.engine import open_client

    return open_client(config, cwd=cwd, create=create)


_STATUS = {"ENQUEUED": "queued", "SUCCESS": "done", "ERROR": "failed", "CANCELLED": "cancelled"}
WAITING = ("awaiting_tool", "paused")
_WAITING = WAITING
_SHOWN_MATCHES = 5  # runs named when a run id prefix names several


class SessionInUse(DurableError):
    """Another run of the session is queued, running or waiting (``run_id``, when found)."""

    def __init__(self, session_id: str, run_id: str | None) -> None:
        self.session_id = session_id
        self.run_id = run_id
        held = f" ({run_id})" if run_id else ""
        super().__init__(f"session {session_id} has a run{held} queued, running or waiting")


@dataclass(slots=True)
class RunLook:
    """One look at a durable run (``DurableRuns.look``)."""

    row: dict[str, Any]  # as ``state`` gives it: state, reason, worker...
    waiting: dict[str, Any]  # its ``state`` event: what it waits for while it waits
    events: list[dict[str, Any]] = field(default_factory=list)  # recorded since the last look
    steps: int = 0  # the run's steps seen in all: the next look's ``steps``
    ended: bool = False  # nothing more will be recorded (its events are all in)
    text: str = ""  # the final text of a run that ended
    output: Any = None  # the typed value (as JSON) of a run that ended done
    session_id: str | None = None  # once the run has made its session


class DurableRuns:
    """The durable runs of one agent from Python (a client: it never executes a run).

    ``submit`` enqueues a prompt; ``state`` says what a run is doing (and what it waits
    for); ``resume_with``, ``approve``, ``deny`` and ``cancel`` answer or end it.
    Refusals (an unknown run, a call it does not wait for) raise ``DurableError``."""

    def __init__(self, config: DurableConfig, cwd: str, *, create: bool = False) -> None:
        self.config = config
        self.cwd = cwd
        self.client = _client(config, cwd, create=create)

    def close(self) -> None:
        self.client.destroy()

    def __enter__(self) -> DurableRuns:
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def submit(
        self,
        prompt: str,
        *,
        cwd: str | None = None,
        session_id: str | None = None,
        context: Sequence[Mapping[str, Any]] = (),
        tools: Sequence[Mapping[str, Any]] = (),
        images: Sequence[Mapping[str, str]] = (),
        model: str | None = None,
        budget: Mapping[str, float] | None = None,
    ) -> str:
        """Enqueue a run of ``prompt``; its id. ``session_id`` continues that stored
        session (SessionInUse while another run of it is queued, running or waiting);
        ``context`` (messages as dicts) is a new session's history; ``tools`` (name,
        description, parameters) are external tools of this run alone; ``images``
        (``data``: base64, ``mime_type``) go with the prompt; ``model`` (a key of the
        agent's models) and ``budget`` (limits by name) are this run's."""
        from dbos import error as dbos_error

        from harnessc.runtime.durable.workflow import WORKFLOW_NAME

        run_id = str(uuid.uuid4())
        request = run_request(
            prompt,
            cwd or self.cwd,
            session_id=None,
            context=context,
            tools=tools,
            images=images,
            model=model,
            budget=budget,
        )
        options: dict[str, Any] = {
            "workflow_name": WORKFLOW_NAME,
            "queue_name": self.config.queue,
            "workflow_id": run_id,
        }
        if session_id is not None:
            request["session_id"] = session_id
            # one run of a session at a time: DBOS refuses a second while the first is
            # queued or pending (waiting at a pull point included)
            options["deduplication_id"] = f"session:{session_id}"
        try:
            self.client.enqueue(options, request)
        except dbos_error.DBOSQueueDeduplicatedError:
            assert session_id is not None
            raise SessionInUse(session_id, self.holder(session_id)) from None
        return run_id

    def holder(self, session_id: str) -> str | None:
        """The run queued, running or waiting on ``session_id`` (one a server or this
        client submitted to continue it), if any."""
        from harnessc.runtime.durable.workflow import WORKFLOW_NAME

        for status in self.client.list_workflows(
            name=WORKFLOW_NAME, status=["ENQUEUED", "PENDING"], load_output=False
        ):
            inputs = getattr(status, "input", None) or {}
            args = inputs.get("args") if isinstance(inputs, dict) else None
            request = args[0] if args else None
            if isinstance(request, dict) and request.get("session_id") == session_id:
                return str(status.workflow_id)
        return None

    def waiting(self, run_id: str) -> dict[str, Any]:
        """The ``state`` event of a run (what it waits for while it waits)."""
        from harnessc.runtime.durable.workflow import STATE_EVENT

        state = self.client.get_event(run_id, STATE_EVENT, timeout_seconds=0)
        return state if isinstance(state, dict) else {}

    def full_id(self, given: str) -> str:
        """The run ``given`` names: a run id, or the first characters of exactly one run's
        id (as session commands take a session id prefix); DurableError otherwise."""
        from harnessc.runtime.durable.workflow import WORKFLOW_NAME

        quiet = {"load_input": False, "load_output": False}
        if given and self.client.list_workflows(workflow_ids=[given], **quiet):
            return given
        found = (
            self.client.list_workflows(
                workflow_id_prefix=given, name=WORKFLOW_NAME, limit=_SHOWN_MATCHES + 1, **quiet
            )
            if given
            else []
        )
        ids = [str(status.workflow_id) for status in found]
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise DurableError(f"no run {given}")
        shown = ", ".join(ids[:_SHOWN_MATCHES]) + (", ..." if len(ids) > _SHOWN_MATCHES else "")
        raise DurableError(f"run id prefix {given!r} names several runs ({shown}): give more of it")

    def status(self, run_id: str) -> Any:
        found = self.client.list_workflows(workflow_ids=[run_id], load_input=False)
        if not found:
            raise DurableError(f"no run {run_id}")
        return found[0]

    def state(self, run_id: str) -> dict[str, Any]:
        """``{"state": queued|running|awaiting_tool|paused|done|failed|cancelled, ...}``
        with the reason and, while it waits, the calls it waits for."""
        return _row(self.status(run_id), self)

    def pause(self, run_id: str) -> Any:
        """What a waiting run waits for (the layer's ``Pause``), None when it does not
        wait."""
        from harnessc.runtime.runs.pauses import Pause

        state = self.waiting(run_id)
        if state.get("state") not in WAITING or self._ended(run_id):
            return None
        return Pause.from_dict(state.get("pause") or _legacy_pause(state))

    def answer(self, run_id: str, answer: Any) -> None:
        """Answer a waiting run with the layer's ``Answer`` (checked against its pause:
        DurableError naming what does not fit); the worker holding it goes on."""
        from harnessc.runtime.durable.workflow import RESUME_TOPIC
        from harnessc.runtime.runs.answers import check_answer
        from harnessc.runtime.runs.errors import Conflict

        pause = self.pause(run_id)
        if pause is None:
            raise DurableError(f"run {run_id} is not waiting ({self._label(run_id)})")
        try:
            check_answer(pause, answer, run_id)
        except Conflict as exc:
            raise DurableError(str(exc)) from None
        self.client.send(run_id, {"answer": answer.to_dict()}, topic=RESUME_TOPIC)

    def resume_with(self, run_id: str, answers: Mapping[str, Any]) -> None:
        """Answer a pull point as ``--resume-with`` does: call id -> result for a run
        awaiting tools; for a paused run ``{"budget": {...}}`` (raises the named limits),
        ``{"approve": [ids]}``, ``{"deny": [ids]}`` or ``{}`` (continue as it is)."""
        pause = self.pause(run_id)
        if pause is None:
            raise DurableError(f"run {run_id} is not waiting ({self._label(run_id)})")
        self.answer(run_id, answer_of(run_id, pause, answers))

    def approve(self, run_id: str, call_ids: Iterable[str]) -> None:
        self.resume_with(run_id, {"approve": list(call_ids)})

    def deny(self, run_id: str, call_ids: Iterable[str]) -> None:
        self.resume_with(run_id, {"deny": list(call_ids)})

    def abort(self, run_id: str, reason: str = "aborted") -> None:
        """End a waiting run as ``aborted`` (its worker records it: the session goes on
        from there); DurableError for one that does not wait."""
        from harnessc.runtime.durable.workflow import RESUME_TOPIC

        if self.pause(run_id) is None:
            raise DurableError(f"run {run_id} is not waiting ({self._label(run_id)})")
        self.client.send(run_id, {"abort": reason}, topic=RESUME_TOPIC)

    def cancel(self, run_id: str, take_s: float = 10.0) -> None:
        """End a run. A waiting one is aborted as ``abort`` does (its worker ends it,
        ``aborted``, recorded in its session); when no worker takes that within
        ``take_s``, and for a queued or running run, its workflow is cancelled
        (``cancelled``; a worker holding it lets it go at its next step)."""
        status = self.status(run_id)
        if status.status in ("SUCCESS", "ERROR", "CANCELLED"):
            raise DurableError(f"run {run_id} has ended ({self._label(run_id)})")
        if self.pause(run_id) is not None:
            self.abort(run_id, "cancelled")
            deadline = time.monotonic() + take_s
            while time.monotonic() < deadline:
                time.sleep(0.1)
                if self.pause(run_id) is None:
                    return  # a worker took it
        self.cancel_workflow(run_id)

    def cancel_workflow(self, run_id: str) -> None:
        """Cancel the run's workflow whatever it does (DBOS's cancel): it ends at its
        next step, ``cancelled``, recording nothing more in its session."""
        from harnessc.runtime.durable.workflow import RESUME_TOPIC

        self.client.cancel_workflow(run_id)
        # a run waiting (or beginning to wait) wakes up, and sees it is cancelled
        self.client.send(run_id, {"abort": "cancelled"}, topic=RESUME_TOPIC)

    def _ended(self, run_id: str) -> bool:
        return bool(self.status(run_id).status in ("SUCCESS", "ERROR", "CANCELLED"))

    def _label(self, run_id: str) -> str:
        try:
            return str(self.state(run_id)["state"])
        except DurableError:
            return "unknown run"

    def look(self, run_id: str, steps: int = 0) -> RunLook:
        """The run's state and the events it recorded after its first ``steps`` steps
        (a follower's next look passes the ``steps`` of the last one). Once ``ended``,
        the events include those of its output, so a follower stops there (a later
        look would give them again)."""
        from harnessc.runtime.durable.workflow import WORKFLOW_NAME

        # the status and the wait before the steps: what the run recorded before it ended
        # or began to wait is all there
        status = self.status(run_id)
        if getattr(status, "name", WORKFLOW_NAME) != WORKFLOW_NAME:
            raise DurableError(f"no run {run_id}")
        waiting = self.waiting(run_id) if status.status == "PENDING" else {}
        rows = self.client.list_workflow_steps(run_id, offset=steps)
        # the row from the same read of the wait: a second read could see a wait begun since
        look = RunLook(row=_row(status, self, waiting), waiting=waiting, steps=steps + len(rows))
        for row in rows:
            name, output = str(row["function_name"]), row["output"]
            look.events.extend(e for e in step_events(name, output) if isinstance(e, dict))
            if name == "begin" and isinstance(output, dict):
                header = output.get("header")
                made = output.get("session_id") or (header or {}).get("id")
                look.session_id = str(made) if made else None
        output = getattr(status, "output", None)
        look.ended = status.status in ("SUCCESS", "ERROR", "CANCELLED")
        if status.status == "SUCCESS":
            look.events.extend(e for e in output_events(output) if isinstance(e, dict))
        if isinstance(output, dict):
            look.text = str(output.get("text") or "")
            look.output = output.get("output")
            look.session_id = look.session_id or output.get("session_id") or None
        look.session_id = look.session_id or waiting.get("session_id") or None
        return look

    def rows(self) -> list[dict[str, Any]]:
        from harnessc.runtime.durable.workflow import WORKFLOW_NAME

        return [
            _row(status, self)
            for status in self.client.list_workflows(name=WORKFLOW_NAME, sort_desc=True)
        ]


def run_request(
    prompt: str,
    cwd: str,
    *,
    session_id: str | None = None,
    context: Sequence[Mapping[str, Any]] = (),
    tools: Sequence[Mapping[str, Any]] = (),
    images: Sequence[Mapping[str, str]] = (),
    model: str | None = None,
    budget: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The workflow's request (its recorded input)."""
    request: dict[str, Any] = {"prompt": prompt, "cwd": cwd}
    if session_id is not None:
        request["session_id"] = session_id
    if context:
        request["context"] = [dict(m) for m in context]
    if tools:
        request["tools"] = [dict(t) for t in tools]
    if images:
        request["images"] = [dict(i) for i in images]
    if model:
        request["model"] = model
    if budget:
        request["budget"] = dict(budget)
    return request


def answer_of(run_id: str, pause: Any, answers: Mapping[str, Any]) -> Any:
    """``--resume-with``'s JSON as the layer's ``Answer``: call id -> result for a run
    awaiting tools; ``budget``, ``approve`` and ``deny`` for a paused one (DurableError
    naming what does not fit)."""
    from harnessc.runtime.core.budget import BUDGET_LIMITS
    from harnessc.runtime.runs.answers import Answer

    if pause.awaiting_tool:
        pending = [c.id for c in pause.calls]
        unknown = sorted(set(answers) - set(pending))
        missing = [i for i in pending if i not in answers]
        if unknown or missing:
            raise DurableError(
                f"run {run_id} waits for {', '.join(pending)}; got "
                f"{', '.join(sorted(answers)) or 'nothing'}"
            )
        return Answer(results=dict(answers))
    unknown = sorted(set(answers) - {"budget", "approve", "deny"})
    if unknown:
        raise DurableError(
            f"run {run_id} is paused ({pause.reason or 'by a hook'}): "
            f"--resume-with takes budget, approve or deny, not {', '.join(unknown)}"
        )
    budget = answers.get("budget", {})
    if not isinstance(budget, dict) or any(
        k not in BUDGET_LIMITS or not isinstance(v, int | float) or v < 0 for k, v in budget.items()
    ):
        raise DurableError(
            f"budget takes limits by name ({', '.join(BUDGET_LIMITS)}) with numbers, "
            f"got {json.dumps(budget)}"
        )
    pending = [c.id for c in pause.calls]
    held = {c.id for c in pause.held}
    approvals: dict[str, Any] = {}
    for verb, decision in (("approve", "allow"), ("deny", "deny")):
        ids = answers.get(verb, [])
        if not isinstance(ids, list) or any(str(i) not in pending for i in ids):
            raise DurableError(
                f"--{verb}: run {run_id} holds {', '.join(pending) or 'no call'}; got "
                f"{', '.join(map(str, ids)) if isinstance(ids, list) else ids}"
            )
        for call_id in ids:  # a call not reached yet (later in its batch) is not held
            if str(call_id) in held:
                approvals.setdefault(str(call_id), decision)
    return Answer(approvals=approvals, budget=dict(budget))


def _legacy_pause(state: Mapping[str, Any]) -> dict[str, Any]:
    """A ``state`` event without ``pause`` (written before it had one) as a pause."""
    asks = set(state.get("asks") or [])
    calls = [dict(c, held=c.get("id") in asks) for c in state.get("calls") or []]
    kind = "tool_results" if state.get("state") == "awaiting_tool" else "approval"
    limit = state.get("limit")
    budget = None
    if isinstance(limit, list) and len(limit) == 3:
        kind = "budget"
        budget = {"limit": limit[0], "used": limit[1], "allowed": limit[2]}
    elif not asks and kind == "approval":
        kind = "hook"
    return {"kind": kind, "reason": state.get("reason"), "calls": calls, "budget": budget}


def _row(
    status: Any, runs: DurableRuns, waiting: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    state: Mapping[str, Any] = {}
    if status.status == "PENDING":
        state = waiting if waiting is not None else runs.waiting(status.workflow_id)
    label = _STATUS.get(status.status) or state.get("state", "running")
    reason = str(state.get("reason") or "") if label in _WAITING else ""
    if label == "awaiting_tool":
        calls = ", ".join(f"{c.get('name')} ({c.get('id')})" for c in state.get("calls", []))
        reason = f"waits for {calls}"
    output = getattr(status, "output", None)
    if status.status == "SUCCESS" and isinstance(output, dict):
        label = {"done": "done", "aborted": "aborted"}.get(str(output.get("status")), "failed")
        reason = "" if label == "done" else str(output.get("reason") or "")
    elif status.status == "ERROR":
        reason = _first_line(getattr(status, "error", None))
    created = status.created_at
    return {
        "id": status.workflow_id,
        "state": label,
        "reason": reason,
        "worker": status.executor_id,
        "queue": status.queue_name,
        "created": created,
        "age_s": round(time.time() - created / 1000, 1) if created else None,
    }


def _first_line(error: Any) -> str:
    text = str(error or "").strip().splitlines()
    return text[-1] if text else ""

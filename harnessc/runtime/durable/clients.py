"""The client verbs of a durable agent: ``--submit``, ``--runs``, ``--follow`` and
``--run RUN`` with ``--resume-with``, ``--approve`` / ``--deny`` or ``--cancel`` (RUN: a
run id, or its first characters when they name one run). They
use DBOS's client API only: nothing here starts an executor, so no client can recover
(and run a second time) a run it looks at. ``DurableRuns`` is the same from Python."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from harnessc.runtime.cli.args import EXIT_DONE, EXIT_ERROR, EXIT_PAUSED
from harnessc.runtime.durable.config import DurableConfig, DurableError
from harnessc.runtime.durable.report import error_code, error_line, pause_lines
from harnessc.runtime.durable.steps import output_events, step_events

__all__ = [
    "DurableRuns",
    "RunLook",
    "SessionInUse",
    "Show",
    "ending",
    "follow",
    "list_runs",
    "pump",
    "resume",
    "submit",
]


def _client(config: DurableConfig, cwd: str, *, create: bool = False) -> Any:
    from harnessc.runtime.durable.engine import open_client

    return open_client(config, cwd=cwd, create=create)


_STATUS = {"ENQUEUED": "queued", "SUCCESS": "done", "ERROR": "failed", "CANCELLED": "cancelled"}
_WAITING = ("awaiting_tool", "paused")
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
    ) -> str:
        """Enqueue a run of ``prompt``; its id. ``session_id`` continues that stored
        session (SessionInUse while another run of it is queued, running or waiting);
        ``context`` (messages as dicts) is a new session's history; ``tools`` (name,
        description, parameters) are external tools of this run alone."""
        from dbos import error as dbos_error

        from harnessc.runtime.durable.workflow import WORKFLOW_NAME

        run_id = str(uuid.uuid4())
        request: dict[str, Any] = {"prompt": prompt, "cwd": cwd or self.cwd}
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
        if context:
            request["context"] = [dict(m) for m in context]
        if tools:
            request["tools"] = [dict(t) for t in tools]
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

    def resume_with(self, run_id: str, answers: Mapping[str, Any]) -> None:
        """Answer a pull point: call id -> result for a run awaiting tools; for a paused
        run ``{"budget": {...}}`` (raises the named limits), ``{"approve": [ids]}``,
        ``{"deny": [ids]}`` or ``{}`` (continue as it is)."""
        from harnessc.runtime.durable.workflow import RESUME_TOPIC

        state = self.waiting(run_id)
        kind = state.get("state")
        if self._ended(run_id):
            kind = None
        if kind == "awaiting_tool":
            pending = [str(c["id"]) for c in state.get("calls", [])]
            unknown = sorted(set(answers) - set(pending))
            missing = [i for i in pending if i not in answers]
            if unknown or missing:
                raise DurableError(
                    f"run {run_id} waits for {', '.join(pending)}; got "
                    f"{', '.join(sorted(answers)) or 'nothing'}"
                )
            for call_id, value in answers.items():
                self.client.send(run_id, value, topic=call_id)
        elif kind == "paused":
            self.client.send(run_id, _pause_answer(run_id, state, answers), topic=RESUME_TOPIC)
        else:
            raise DurableError(f"run {run_id} is not waiting ({self._label(run_id)})")

    def approve(self, run_id: str, call_ids: Iterable[str]) -> None:
        self.resume_with(run_id, {"approve": list(call_ids)})

    def deny(self, run_id: str, call_ids: Iterable[str]) -> None:
        self.resume_with(run_id, {"deny": list(call_ids)})

    def cancel(self, run_id: str) -> None:
        """End a queued, running or waiting run (it is ``cancelled``; a worker holding it
        lets it go at its next step)."""
        from harnessc.runtime.durable.workflow import RESUME_TOPIC

        status = self.status(run_id)
        if status.status in ("SUCCESS", "ERROR", "CANCELLED"):
            raise DurableError(f"run {run_id} has ended ({self._label(run_id)})")
        self.client.cancel_workflow(run_id)
        state = self.waiting(run_id)
        # a run waiting at a pull point wakes up, and sees it is cancelled
        topics = [str(c["id"]) for c in state.get("calls", [])] or [RESUME_TOPIC]
        for topic in topics if state.get("state") in _WAITING else []:
            self.client.send(run_id, {"cancel": True}, topic=topic)

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
            look.session_id = look.session_id or output.get("session_id") or None
        look.session_id = look.session_id or waiting.get("session_id") or None
        return look

    def rows(self) -> list[dict[str, Any]]:
        from harnessc.runtime.durable.workflow import WORKFLOW_NAME

        return [
            _row(status, self)
            for status in self.client.list_workflows(name=WORKFLOW_NAME, sort_desc=True)
        ]


def _pause_answer(run_id: str, state: Mapping[str, Any], answers: Mapping[str, Any]) -> Any:
    """The message for a paused run, checked: only budget, approve and deny; approvals
    only of the calls it holds; budget limits by name, as numbers."""
    from harnessc.runtime.core.budget import BUDGET_LIMITS

    unknown = sorted(set(answers) - {"budget", "approve", "deny"})
    if unknown:
        raise DurableError(
            f"run {run_id} is paused ({state.get('reason') or 'by a hook'}): "
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
    held = [str(c["id"]) for c in state.get("calls", [])]
    for verb in ("approve", "deny"):
        ids = answers.get(verb, [])
        if not isinstance(ids, list) or any(str(i) not in held for i in ids):
            raise DurableError(
                f"--{verb}: run {run_id} holds {', '.join(held) or 'no call'}; got "
                f"{', '.join(map(str, ids)) if isinstance(ids, list) else ids}"
            )
    return dict(answers)


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


def submit(config: DurableConfig, prompt: str, cwd: str, out: TextIO) -> int:
    with DurableRuns(config, cwd, create=True) as runs:
        run_id = runs.submit(prompt)
    out.write(run_id + "\n")
    return EXIT_DONE


def list_runs(config: DurableConfig, cwd: str, out: TextIO, *, as_json: bool) -> int:
    from harnessc.runtime.cli.output import format_duration, one_line

    with DurableRuns(config, cwd) as runs:
        rows = runs.rows()
    if as_json:
        for row in rows:
            out.write(json.dumps(row) + "\n")
        out.flush()
        return EXIT_DONE
    if not rows:
        out.write("no runs\n")
        return EXIT_DONE
    table = [("ID", "STATUS", "REASON", "AGE", "WORKER")]
    for row in rows:
        age = format_duration(row["age_s"]) if row["age_s"] is not None else "-"
        reason = one_line(row["reason"], 60) or "-"
        table.append((row["id"], row["state"], reason, age, row["worker"] or "-"))
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    for cells in table:
        out.write("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False)))
        out.write("  " + cells[4] + "\n")
    out.flush()  # a closed pipe is said here, where the caller stops quietly
    return EXIT_DONE


def follow(
    config: DurableConfig,
    run_id: str,
    cwd: str,
    out: TextIO,
    err: TextIO,
    prog: str,
    *,
    as_json: bool,
) -> int:
    with DurableRuns(config, cwd) as runs:
        run_id = runs.full_id(run_id)  # an unknown run: said at once
        client = runs.client
        show = Show(out, err, as_json=as_json)
        pump(
            lambda seen: client.list_workflow_steps(run_id, offset=seen),
            lambda: client.retrieve_workflow(run_id).get_status().status,
            lambda: runs.waiting(run_id).get("state") in _WAITING,
            lambda: output_events(client.retrieve_workflow(run_id).get_result()),
            show,
        )
        show.close()
        return ending(runs.state(run_id), runs.waiting(run_id), prog, run_id, show)


def ending(
    row: Mapping[str, Any], waiting: Mapping[str, Any], prog: str, run_id: str, show: Show
) -> int:
    """Say how a run stands once its events are shown (as a plain run says it, on
    stderr); the exit code a plain run ending so gives."""
    kind = row["state"]
    if kind in _WAITING:
        if show.text is not None:
            for line in pause_lines(prog, run_id, waiting):
                show.err.write(line + "\n")
        return EXIT_PAUSED
    if kind == "done":
        return EXIT_DONE
    if kind == "cancelled":
        show.err.write(f"run {run_id} was cancelled\n")
        return EXIT_ERROR
    if kind == "aborted":
        show.err.write("aborted\n")
        return error_code({"status": "aborted"})
    line = error_line({"reason": row.get("reason")})
    if show.text is not None:
        show.text.error(line.removeprefix("error: "))  # once, if an event said it already
    else:
        show.err.write(line + "\n")
    return EXIT_ERROR


class Show:
    """Shows recorded events as a plain run shows its events: one JSON object per line
    on ``out``, or through the text printer (reply on ``out``; tool lines, errors and
    pauses on ``err``)."""

    def __init__(self, out: TextIO, err: TextIO, *, as_json: bool) -> None:
        from harnessc.runtime.cli.output import TextPrinter

        self.out, self.err = out, err
        self.text: TextPrinter | None = None
        if not as_json:
            from harnessc.runtime.cli.render import make_printer

            self.text = make_printer(out, err)

    def __call__(self, event: dict[str, Any]) -> None:
        if self.text is None:
            self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
            self.out.flush()
            return
        from harnessc.runtime.durable.recorded import event_from_dict

        made = event_from_dict(event)
        if made is not None:
            self.text(made)

    def close(self) -> None:
        if self.text is not None:
            self.text.close()


_FOLLOW_POLL_S = 0.1
_SETTLE_S = 0.5


def pump(
    steps: Callable[[int], list[Any]],
    status: Callable[[], str],
    waiting: Callable[[], bool],
    last: Callable[[], list[dict[str, Any]]],
    show: Callable[[dict[str, Any]], None],
) -> None:
    """Show a run's events (recorded in its steps' outputs, and ``last``, those in the
    output of a run that ended well) until it ends or waits at a pull point."""

    seen, since = 0, None
    while True:
        # both read before the steps: what the run recorded before it ended or began to
        # wait is all there
        state = status()
        finished = state not in ("PENDING", "ENQUEUED")
        paused = not finished and waiting()
        rows = steps(seen)  # the steps recorded since the last look, in order
        seen += len(rows)
        events = [e for row in rows for e in step_events(str(row["function_name"]), row["output"])]
        if finished and state == "SUCCESS":
            events += last()
        for event in events:
            if isinstance(event, dict):
                show(event)
        if finished:
            return
        if paused and not rows:
            # a wait someone has just answered looks the same until the worker takes the
            # answer: a wait is one once it has held for a moment
            since = since if since is not None else time.monotonic()
            if time.monotonic() - since >= _SETTLE_S:
                return
        else:
            since = None
        if not rows:
            time.sleep(_FOLLOW_POLL_S)


def resume(
    config: DurableConfig,
    run_id: str,
    cwd: str,
    out: TextIO,
    *,
    payload: str | None = None,
    approve: list[str] | None = None,
    deny: list[str] | None = None,
    cancel: bool = False,
) -> int:
    """``--run RUN`` with ``--resume-with JSON``, ``--approve`` / ``--deny`` or ``--cancel``."""
    answers: dict[str, Any] = {}
    if payload is not None:
        try:
            answers = json.loads(payload)
        except ValueError as exc:
            raise DurableError(f"--resume-with is not JSON: {exc}") from None
        if not isinstance(answers, dict):
            raise DurableError("--resume-with takes a JSON object: call id -> result")
    with DurableRuns(config, cwd) as runs:
        run_id = runs.full_id(run_id)
        if cancel:
            runs.cancel(run_id)
            out.write(f"cancelled {run_id}\n")
            return EXIT_DONE
        if approve or deny:
            answers = {"approve": approve or [], "deny": deny or []}
        runs.resume_with(run_id, answers)
    for call_id in approve or []:
        out.write(f"approved {call_id}\n")
    for call_id in deny or []:
        out.write(f"denied {call_id}\n")
    out.write(f"resumed {run_id} (a worker continues it)\n")
    return EXIT_DONE

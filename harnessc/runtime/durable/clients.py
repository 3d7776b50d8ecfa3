"""The client verbs of a durable agent: ``--submit``, ``--runs``, ``--follow`` and
``--run RUN --resume-with``. They use DBOS's client API only: nothing here starts an
executor, so no client can recover (and run a second time) a run it looks at."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any, TextIO

from harnessc.runtime.cli.args import EXIT_DONE, EXIT_ERROR, EXIT_PAUSED
from harnessc.runtime.durable.config import DurableConfig, DurableError
from harnessc.runtime.durable.steps import output_events, step_events

__all__ = ["follow", "list_runs", "pump", "resume", "submit"]


def submit(config: DurableConfig, prompt: str, cwd: str, out: TextIO) -> int:
    from harnessc.runtime.durable.workflow import WORKFLOW_NAME

    client = _client(config, cwd, create=True)
    try:
        run_id = str(uuid.uuid4())
        client.enqueue(
            {"workflow_name": WORKFLOW_NAME, "queue_name": config.queue, "workflow_id": run_id},
            {"prompt": prompt, "cwd": cwd},
        )
    finally:
        client.destroy()
    out.write(run_id + "\n")
    return EXIT_DONE


def _client(config: DurableConfig, cwd: str, *, create: bool = False) -> Any:
    from harnessc.runtime.durable.engine import open_client

    return open_client(config, cwd=cwd, create=create)


def _state(client: Any, run_id: str) -> dict[str, Any]:
    from harnessc.runtime.durable.workflow import STATE_EVENT

    state = client.get_event(run_id, STATE_EVENT, timeout_seconds=0)
    return state if isinstance(state, dict) else {}


_STATUS = {"ENQUEUED": "queued", "SUCCESS": "done", "ERROR": "failed", "CANCELLED": "cancelled"}


def list_runs(config: DurableConfig, cwd: str, out: TextIO, *, as_json: bool) -> int:
    from harnessc.runtime.durable.workflow import WORKFLOW_NAME

    client = _client(config, cwd)
    try:
        rows = []
        for status in client.list_workflows(name=WORKFLOW_NAME, sort_desc=True):
            state = _state(client, status.workflow_id) if status.status == "PENDING" else {}
            label = _STATUS.get(status.status) or state.get("state", "running")
            if status.status == "SUCCESS" and isinstance(status.output, dict):
                label = "done" if status.output.get("status") == "done" else "failed"
            rows.append(
                {
                    "id": status.workflow_id,
                    "state": label,
                    "worker": status.executor_id,
                    "queue": status.queue_name,
                    "created": status.created_at,
                }
            )
    finally:
        client.destroy()
    for row in rows:
        if as_json:
            out.write(json.dumps(row) + "\n")
        else:
            out.write(f"{row['id']}  {row['state']:<13}  {row['worker'] or '-'}\n")
    if not rows and not as_json:
        out.write("no runs\n")
    return EXIT_DONE


def follow(config: DurableConfig, run_id: str, cwd: str, out: TextIO, *, as_json: bool) -> int:
    client = _client(config, cwd)
    try:
        if not client.list_workflows(workflow_ids=[run_id], load_input=False, load_output=False):
            raise DurableError(f"no run {run_id}")
        pump(
            lambda seen: client.list_workflow_steps(run_id, offset=seen),
            lambda: client.retrieve_workflow(run_id).get_status().status,
            lambda: _waiting(client, run_id),
            lambda: output_events(client.retrieve_workflow(run_id).get_result()),
            out,
            as_json=as_json,
        )
        return _report(client, run_id, out, as_json=as_json)
    finally:
        client.destroy()


_FOLLOW_POLL_S = 0.1
_SETTLE_S = 0.5


def pump(
    steps: Callable[[int], list[Any]],
    status: Callable[[], str],
    waiting: Callable[[], bool],
    last: Callable[[], list[dict[str, Any]]],
    out: TextIO,
    *,
    as_json: bool,
) -> None:
    """Print a run's events (recorded in its steps' outputs, and ``last``, those in the
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
            if as_json:
                out.write(json.dumps(event, ensure_ascii=False) + "\n")
            elif isinstance(event, dict) and event.get("type") == "tool_execution_start":
                out.write(f"[{event.get('tool_name', 'tool')}]\n")
        out.flush()
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


def _waiting(client: Any, run_id: str) -> bool:
    return _state(client, run_id).get("state") in ("awaiting_tool", "paused")


def _report(client: Any, run_id: str, out: TextIO, *, as_json: bool) -> int:
    state = _state(client, run_id)
    kind = state.get("state")
    if kind in ("awaiting_tool", "paused"):
        if not as_json:
            calls = ", ".join(f"{c['name']} ({c['id']})" for c in state.get("calls", []))
            out.write(f"run {run_id} is {kind.replace('_', ' ')}{': ' + calls if calls else ''}\n")
        return EXIT_PAUSED
    outcome = client.retrieve_workflow(run_id).get_result()
    if not as_json:
        out.write(str(outcome.get("text", "")) + "\n")
    return EXIT_DONE if outcome.get("status") == "done" else EXIT_ERROR


def resume(config: DurableConfig, run_id: str, payload: str, cwd: str, out: TextIO) -> int:
    from harnessc.runtime.durable.workflow import RESUME_TOPIC

    try:
        answers = json.loads(payload)
    except ValueError as exc:
        raise DurableError(f"--resume-with is not JSON: {exc}") from None
    if not isinstance(answers, dict):
        raise DurableError("--resume-with takes a JSON object: call id -> result")
    client = _client(config, cwd)
    try:
        state = _state(client, run_id)
        kind = state.get("state")
        if kind == "awaiting_tool":
            pending = {c["id"] for c in state.get("calls", [])}
            unknown = sorted(set(answers) - pending)
            if unknown or not answers:
                raise DurableError(
                    f"run {run_id} waits for {', '.join(sorted(pending))}; got {', '.join(unknown) or 'nothing'}"
                )
            for call_id, value in answers.items():
                client.send(run_id, value, topic=call_id)
        elif kind == "paused":
            client.send(run_id, answers, topic=RESUME_TOPIC)
        else:
            raise DurableError(f"run {run_id} is not waiting ({kind or 'unknown run'})")
    finally:
        client.destroy()
    out.write(f"resumed {run_id}\n")
    return EXIT_DONE

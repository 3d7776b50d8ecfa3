"""What the durable verbs of the command line show: ``--submit`` (the run id), ``--runs``
(a table), ``--follow`` (a run's events as a plain run shows them, through the
run-control layer), how a run stands once its events are shown (the pause and the
command that answers it from any process, or its error, with the exit codes of plain
runs), and ``--run RUN`` answering or ending a run."""

from __future__ import annotations

import asyncio
import json
from shlex import quote
from typing import Any, TextIO

from harnessc.runtime.cli.args import EXIT_ABORTED, EXIT_DONE, EXIT_ERROR, EXIT_PAUSED
from harnessc.runtime.cli.pause import pause_lines as describe
from harnessc.runtime.durable.clients import DurableRuns
from harnessc.runtime.durable.config import DurableConfig, DurableError
from harnessc.runtime.runs.pauses import Pause, budget_limit

__all__ = [
    "Show",
    "follow",
    "list_runs",
    "pause_lines",
    "report",
    "resume",
    "submit",
]

SETTLE_S = 0.5  # a wait someone has just answered looks the same until a worker takes it


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


def follow(
    config: DurableConfig,
    run_id: str,
    cwd: str,
    source: Any,
    out: TextIO,
    err: TextIO,
    prog: str,
    *,
    as_json: bool,
) -> int:
    """``--follow RUN``: its events until it ends or waits, then how it stands."""
    with DurableRuns(config, cwd) as runs:
        run_id = runs.full_id(run_id)  # an unknown run: said at once
        show = Show(out, err, as_json=as_json)
        run = asyncio.run(_follow(runs, source, run_id, show))
        show.close()
        code = report(run, prog, show.err, text=show.text)
        if show.text is not None and run.over and not run.paused:
            if run.status == "done" and run.output is not None:
                out.write(json.dumps(run.output, ensure_ascii=False) + "\n")  # the typed value
                out.flush()
            from harnessc.runtime.cli.summary import RunSummary

            summary = RunSummary()
            summary.usage = run.usage
            show.text.line(f"[usage] {summary.line()}")
        return code


async def _follow(runs: DurableRuns, source: Any, run_id: str, show: Show) -> Any:
    from harnessc.runtime.durable.control import DurableRunControl

    control = DurableRunControl(source, runs)
    run = await control.get(run_id)
    index = 0
    while True:
        async for item in control.events(run, index):
            if item is None:
                continue
            index = item[0] + 1
            show(json.loads(item[1]))
        if not run.paused:
            return run
        await asyncio.sleep(SETTLE_S)
        await control.get(run_id)
        if run.paused:
            return run


def report(run: Any, prog: str, err: TextIO, *, text: Any = None) -> int:
    """Say how a durable run stands once its events are shown (as a plain run says it,
    on stderr); the exit code a plain run ending so gives."""
    if run.paused:
        if text is not None and run.pause is not None:
            for line in pause_lines(prog, run.id, run.pause):
                err.write(line + "\n")
        return EXIT_PAUSED
    if run.status == "done":
        return EXIT_DONE
    if run.status == "aborted" and run.reason == "cancelled":
        err.write(f"run {run.id} was cancelled\n")
        return EXIT_ERROR
    if run.status == "aborted":
        err.write("aborted\n")
        return EXIT_ABORTED
    line = f"error: {run.reason or 'the run failed'}"
    if text is not None:
        text.error(line.removeprefix("error: "))  # once, if an event said it already
    else:
        err.write(line + "\n")
    return EXIT_ERROR


def pause_lines(prog: str, run_id: str, pause: Pause) -> list[str]:
    """The lines saying what run ``run_id`` waits for and how to answer it from any
    process."""
    lines = describe(pause)
    run = f"{prog} --run {run_id}"
    held = [c.id for c in pause.held]
    if held:
        lines += [f"continue with: {run} --approve {i}  (or --deny {i})" for i in held]
    elif pause.awaiting_tool:
        example = ", ".join(f"{json.dumps(c.id)}: " + '"RESULT"' for c in pause.calls)
        lines.append(
            f"continue with: {run} --resume-with {quote('{' + example + '}')}"
            '  (a result is a string or {"error": "..."})'
        )
    elif pause.budget is not None and budget_limit(pause.reason):
        use = pause.budget
        raised = json.dumps({"budget": {use.limit: _raised(use.limit, use.used, use.allowed)}})
        lines.append(f"continue with: {run} --resume-with {quote(raised)}")
    else:
        lines.append(f"continue with: {run} --resume-with '{{}}'")
    lines.append(f"or end it: {run} --cancel")
    return lines


def _raised(name: str, used: float, limit: float | None) -> float | int:
    if name in ("turns", "tool_calls", "tokens"):
        return int(max(used, limit or 0)) + (10 if name != "tokens" else int(limit or 10_000))
    return round(max(used, limit or 0) * 2, 2) or 1


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

"""What a durable run says to its user once it stops: the pause (what it waits for and
the command that answers it, as a plain run says it) and the error of a failed run,
with the exit codes of plain runs. Used by a one-shot run and by ``--follow``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from shlex import quote
from typing import Any

from harnessc.runtime.cli.args import EXIT_DONE, EXIT_ERROR, EXIT_USAGE
from harnessc.runtime.cli.pause import describe_pause
from harnessc.runtime.core.messages import ToolCall

__all__ = ["error_code", "error_line", "pause_lines"]


def pause_lines(prog: str, run_id: str, state: Mapping[str, Any]) -> list[str]:
    """The lines saying what run ``run_id`` waits for (its ``state`` event) and how to
    answer it from any process."""
    awaiting = state.get("state") == "awaiting_tool"
    calls = [
        ToolCall(id=str(c.get("id")), name=str(c.get("name")), arguments=c.get("arguments") or {})
        for c in state.get("calls") or []
        if isinstance(c, dict)
    ]
    limit = state.get("limit")
    used = (float(limit[1]), limit[2]) if isinstance(limit, list) and len(limit) == 3 else None
    lines = describe_pause(
        str(state.get("reason") or ""), calls, awaiting_tool=awaiting, limit_used=used
    )
    run = f"{prog} --run {run_id}"
    asks = [str(i) for i in state.get("asks") or []]
    if asks:
        lines += [f"continue with: {run} --approve {i}  (or --deny {i})" for i in asks]
    elif awaiting:
        example = ", ".join(f"{json.dumps(c.id)}: " + '"RESULT"' for c in calls)
        lines.append(
            f"continue with: {run} --resume-with {quote('{' + example + '}')}"
            '  (a result is a string or {"error": "..."})'
        )
    elif used is not None:
        name = str(limit[0])  # type: ignore[index]
        raised = json.dumps({"budget": {name: _raised(name, *used)}})
        lines.append(f"continue with: {run} --resume-with {quote(raised)}")
    else:
        lines.append(f"continue with: {run} --resume-with '{{}}'")
    lines.append(f"or end it: {run} --cancel")
    return lines


def _raised(name: str, used: float, limit: float | None) -> float | int:
    if name in ("turns", "tool_calls", "tokens"):
        return int(max(used, limit or 0)) + (10 if name != "tokens" else int(limit or 10_000))
    return round(max(used, limit or 0) * 2, 2) or 1


def error_line(outcome: Any) -> str:
    """``error: ...`` for a run that ended with an error (its recorded reason)."""
    reason = outcome.get("reason") if isinstance(outcome, dict) else None
    return f"error: {reason or 'the run failed'}"


def error_code(outcome: Any) -> int:
    """The exit code a plain run ends with: 0 done, 2 a configuration error the user
    must fix (no API key, unknown model), 130 aborted, else 1."""
    if not isinstance(outcome, dict):
        return EXIT_ERROR
    status = outcome.get("status")
    if status == "done":
        return EXIT_DONE
    if status == "aborted":
        return 130
    return EXIT_USAGE if outcome.get("usage_error") else EXIT_ERROR

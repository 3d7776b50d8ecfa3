"""Pull points on the command line: what a paused run waits for (as lines for the user),
and ``--resume-with``'s answers. What a pause is and what answers it is the run-control
layer's (``runs.pauses``, ``runs.answers``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harnessc.runtime.cli.args import UsageError
from harnessc.runtime.cli.output import format_number
from harnessc.runtime.core.messages import ToolCall
from harnessc.runtime.runs.pauses import Pause, budget_limit, pause_reason

__all__ = [
    "budget_limit",
    "check_results",
    "describe_pause",
    "parse_resume_with",
    "pause_lines",
    "pause_reason",
]


def parse_resume_with(text: str) -> dict[str, Any]:
    """The ``--resume-with`` JSON: call id -> result string or ``{"error": "..."}``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--resume-with is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(
            "--resume-with must be a JSON object mapping call ids to results, e.g. "
            '{"call_1": "approved"} or {"call_1": {"error": "denied"}}'
        )
    for call_id, value in data.items():
        if isinstance(value, dict) and not ({"error", "content"} & set(value)):
            raise UsageError(
                f'--resume-with: the result of {call_id} must be a string or {{"error": "..."}}'
            )
        if value is None:
            raise UsageError(f"--resume-with: the result of {call_id} is null")
    return data


def check_results(results: dict[str, Any], pending: Sequence[ToolCall]) -> None:
    """Every pending call answered, nothing else; raises UsageError naming the ids."""
    wanted = [c.id for c in pending]
    missing = [i for i in wanted if i not in results]
    unknown = [i for i in results if i not in wanted]
    problems = []
    if missing:
        problems.append("no result for " + ", ".join(missing))
    if unknown:
        problems.append("no pending call " + ", ".join(unknown))
    if problems:
        raise UsageError(
            "--resume-with: " + "; ".join(problems) + f" (pending: {', '.join(wanted) or 'none'})"
        )


def describe_pause(
    reason: str,
    pending: Sequence[ToolCall],
    *,
    awaiting_tool: bool,
    limit_used: tuple[float, float | None] | None = None,
    agent_paths: Mapping[str, str] | None = None,
) -> list[str]:
    """Lines saying what a paused run waits for (tool name, call id, arguments; or the limit)."""
    lines: list[str] = []
    limit = budget_limit(reason)
    if awaiting_tool:
        lines.append("paused: waiting for the results of external tool calls")
    elif limit is not None:
        detail = ""
        if limit_used is not None and limit_used[1] is not None:
            detail = f" ({format_number(limit_used[0])} of {format_number(limit_used[1])} used)"
        lines.append(f"paused: budget limit hit: {limit}{detail}")
    else:
        lines.append(f"paused: {reason or 'paused by a hook'}")
    for call in pending:
        args = json.dumps(call.arguments, ensure_ascii=False, default=str)
        if len(args) > 400:
            args = args[:397] + "..."
        label = "pending" if awaiting_tool else "not run yet"
        where = (agent_paths or {}).get(call.id)
        within = f"  (in {where})" if where else ""  # a sub-agent's call: its agent path
        lines.append(f"  {label}: {call.name}  id={call.id}  arguments={args}{within}")
    return lines


def pause_lines(pause: Pause) -> list[str]:
    """``describe_pause`` of the layer's ``Pause``."""
    budget = pause.budget
    used = (budget.used, budget.allowed) if budget is not None else None
    return describe_pause(
        pause.reason,
        [c.tool_call() for c in pause.calls],
        awaiting_tool=pause.awaiting_tool,
        limit_used=used,
        agent_paths={c.id: c.path for c in pause.calls if c.path},
    )

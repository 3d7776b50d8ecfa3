"""The answer to a pause, as one record every door builds: the ``Answer``.

- ``results``: call id -> the result of an external call (a string, or ``{"error":
  "..."}`` / ``{"content": [...]}``), every pending call answered;
- ``approvals``: call id -> ``allow``, ``deny`` or ``always`` (allow, and allow the same
  call again for the rest of the session) for calls held for approval;
- ``budget``: limits by name raised (the others kept), with any pause (the run may go on
  past its limit) and with tool results too;
- ``payload``: the answers of kinds to come (an MCP login done, an elicitation's form).

``check_answer`` says whether an answer fits a pause (``Conflict`` naming what does not),
the same words for every door, plain or durable; ``resume_arguments`` turns it into the
harness's ``resume`` call, recording approvals in the session as ``--approve`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from msgspec import Struct

from harnessc.runtime.core.budget import BUDGET_LIMITS, Budget
from harnessc.runtime.runs.errors import Conflict
from harnessc.runtime.runs.pauses import Pause

if TYPE_CHECKING:
    from harnessc.runtime.agent import AgentHarness

__all__ = [
    "DECISIONS",
    "Answer",
    "Decision",
    "check_answer",
    "check_limits",
    "check_result",
    "raised_budget",
    "record_approvals",
    "resume_arguments",
]

Decision = Literal["allow", "deny", "always"]
DECISIONS: tuple[str, ...] = ("allow", "deny", "always")


class Answer(Struct):
    """What a door answers a pause with (see the module docstring)."""

    results: dict[str, Any] = {}
    approvals: dict[str, Decision] = {}
    budget: dict[str, float] = {}
    payload: dict[str, Any] = {}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("results", "approvals", "budget", "payload"):
            value = getattr(self, name)
            if value:
                out[name] = dict(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        def part(name: str) -> dict[str, Any]:
            value = data.get(name)
            return dict(value) if isinstance(value, dict) else {}

        return cls(part("results"), part("approvals"), part("budget"), part("payload"))


def check_result(call_id: str, result: Any) -> None:
    """A tool result as an answer takes it: a string, or ``{"error"}`` / ``{"content"}``."""
    if isinstance(result, str):
        return
    if isinstance(result, dict) and {"error", "content"} & set(result):
        return
    raise Conflict(f'the result of {call_id} must be a string or {{"error": "..."}}')


def check_limits(limits: Mapping[str, Any]) -> dict[str, float]:
    """Budget limits by name, as numbers; Conflict naming an unknown one or a bad value."""
    unknown = sorted(set(limits) - set(BUDGET_LIMITS))
    if unknown:
        raise Conflict(
            f"unknown budget limits {', '.join(unknown)} (known: {', '.join(BUDGET_LIMITS)})"
        )
    out: dict[str, float] = {}
    for name, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise Conflict(f"the budget limit {name} must be a number, at least 0")
        out[name] = value
    return out


def check_answer(pause: Pause, answer: Answer, run_id: str = "") -> None:
    """Conflict unless ``answer`` fits ``pause``: every pending call's result at a tool
    pull point and nothing else; approvals only for held calls; known budget limits."""
    check_limits(answer.budget)
    pending = [c.id for c in pause.calls]
    if pause.awaiting_tool:
        if answer.approvals:
            raise Conflict("the run waits for tool results, not approvals")
        missing = [i for i in pending if i not in answer.results]
        unknown = sorted(set(answer.results) - set(pending))
        if missing or unknown:
            problems = [f"no result for {', '.join(missing)}"] if missing else []
            problems += [f"no pending call {', '.join(unknown)}"] if unknown else []
            raise Conflict("; ".join(problems) + f" (pending: {', '.join(pending) or 'none'})")
        for call_id, result in answer.results.items():
            check_result(call_id, result)
        return
    if answer.results:
        raise Conflict("the run is paused, not waiting for tool results: no results")
    held = [c.id for c in pause.held]
    unknown = sorted(set(answer.approvals) - set(held))
    if unknown:
        where = f" in run {run_id}" if run_id else ""
        raise Conflict(
            f"no held call {', '.join(unknown)}{where} (held: {', '.join(held) or 'none'})"
        )
    for call_id, decision in answer.approvals.items():
        if decision not in DECISIONS:
            raise Conflict(f"the approval of {call_id} must be allow, deny or always")


def raised_budget(current: Budget | None, limits: Mapping[str, float]) -> Budget | None:
    """``current`` with the named limits raised (the others kept); None for no change."""
    if not limits:
        return None
    typed = {
        name: int(value) if name in ("turns", "tool_calls", "tokens") else float(value)
        for name, value in limits.items()
    }
    return msgspec.structs.replace(current if current is not None else Budget(), **typed)


def record_approvals(harness: AgentHarness, approvals: Mapping[str, Decision]) -> dict[str, bool]:
    """The answers to held calls as ``resume(approvals=...)`` takes them; an answer to a
    permission ask is also recorded in the session (so the same call asked again is
    answered; ``always``: the same command or path, for the rest of the session)."""
    from harnessc.runtime.permissions.gate import pending_asks, record_answer

    asks = pending_asks(harness.session)
    held = {c.id: c for c in harness.pending_tool_calls}
    out: dict[str, bool] = {}
    for call_id, decision in approvals.items():
        if call_id in asks:
            tool, args = str(asks[call_id]["tool"]), dict(asks[call_id]["args"])
            record_answer(harness.session, tool, args, decision, call_id)
        elif call_id in held and decision == "always":
            call = held[call_id]
            record_answer(harness.session, call.name, dict(call.arguments), decision, call_id)
        out[call_id] = decision != "deny"
    return out


def resume_arguments(harness: AgentHarness, pause: Pause, answer: Answer) -> dict[str, Any]:
    """The keyword arguments of ``harness.resume`` for ``answer`` (checked against
    ``pause`` first: ``check_answer``)."""
    budget = raised_budget(harness.budget.budget, answer.budget)
    if pause.awaiting_tool:
        return {"results": dict(answer.results), "budget": budget}
    approvals = record_approvals(harness, answer.approvals) if answer.approvals else None
    return {"budget": budget, "approvals": approvals}

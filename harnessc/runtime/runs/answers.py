"""The answer to a pause, as one record every door builds: the ``Answer``.

- ``results``: call id -> the result of an external call (a string, or ``{"error":
  "..."}`` / ``{"content": [...]}``), every pending call answered;
- ``approvals``: call id -> ``allow``, ``deny`` or ``always`` (allow, and allow the same
  call again for the rest of the session) for calls held for approval;
- ``fingerprints``: call id -> the fingerprint of the call as the answering user saw it
  (``PendingCall.fingerprint``): an approval carrying one answers the call only while
  its arguments are still those, else it is refused and the call is asked about again;
- ``budget``: limits by name raised (the others kept), with any pause (the run may go on
  past its limit) and with tool results too;
- ``payload``: the answer to an MCP pause (``pauses``): ``{"redirect": URL}`` (or
  ``"done"``) for a login, ``{"action": "accept", "content": {...}}`` (or ``decline``,
  ``cancel``) for a question; ``call_id`` names the call when it is not the pause's.

``check_answer`` says whether an answer fits a pause (``Conflict`` naming what does not),
the same words for every door, plain or durable; ``resume_arguments`` turns it into the
harness's ``resume`` call, recording approvals in the session as ``--approve`` does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from msgspec import Struct

from harnessc.runtime.core.budget import BUDGET_LIMITS, Budget
from harnessc.runtime.runs.errors import Conflict
from harnessc.runtime.runs.pauses import Pause

if TYPE_CHECKING:
    from harnessc.runtime.agent import AgentHarness
    from harnessc.runtime.agent.results import RunResult

__all__ = [
    "DECISIONS",
    "MCP_KINDS",
    "Answer",
    "always_rules",
    "Decision",
    "check_answer",
    "check_limits",
    "check_result",
    "mcp_answer",
    "raised_budget",
    "record_approvals",
    "resume_arguments",
    "resume_run",
    "split_approvals",
]

Decision = Literal["allow", "deny", "always"]
DECISIONS: tuple[str, ...] = ("allow", "deny", "always")


class Answer(Struct):
    """What a door answers a pause with (see the module docstring)."""

    results: dict[str, Any] = {}
    approvals: dict[str, Decision] = {}
    budget: dict[str, float] = {}
    payload: dict[str, Any] = {}
    fingerprints: dict[str, str] = {}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("results", "approvals", "budget", "payload", "fingerprints"):
            value = getattr(self, name)
            if value:
                out[name] = dict(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        def part(name: str) -> dict[str, Any]:
            value = data.get(name)
            return dict(value) if isinstance(value, dict) else {}

        approvals, fingerprints = split_approvals(part("approvals"))
        fingerprints.update({k: v for k, v in part("fingerprints").items() if isinstance(v, str)})
        return cls(part("results"), approvals, part("budget"), part("payload"), fingerprints)


def split_approvals(given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Approvals as a door receives them, each a decision (``allow``, ``deny``,
    ``always``, true or false) or ``{"decision": ..., "fingerprint": ...}``: the
    decisions and the fingerprints given with them (a decision not understood is kept
    as it is, for ``check_answer`` to name)."""
    decisions: dict[str, Any] = {}
    fingerprints: dict[str, str] = {}
    for call_id, value in given.items():
        if isinstance(value, Mapping):
            if isinstance(value.get("fingerprint"), str):
                fingerprints[call_id] = value["fingerprint"]
            value = value.get("decision")
        if isinstance(value, bool):
            value = "allow" if value else "deny"
        decisions[call_id] = value
    return decisions, fingerprints


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


def check_answer(pause: Pause, answer: Answer, run_id: str = "", *, current: bool = True) -> None:
    """Conflict unless ``answer`` fits ``pause``: every pending call's result at a tool
    pull point and nothing else; approvals only for held calls; known budget limits.
    ``current``: ``pause`` is the one the caller saw, so a login's redirect must come
    back from its URL (a durable worker that recovered the run may hold a fresher one,
    which the resume then shows)."""
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
    if pause.kind in MCP_KINDS:
        mcp_answer(pause, answer.payload, current=current)
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
    shown = {c.id: c for c in pause.held}
    for call_id, given in answer.fingerprints.items():
        call = shown.get(call_id)
        if call is None:
            raise Conflict(f"no held call {call_id} (held: {', '.join(shown) or 'none'})")
        if given != call.fingerprint and answer.approvals.get(call_id) != "deny":
            raise Conflict(
                f"the {call.name} call {call_id} is not the one that was shown (its "
                f"fingerprint is {call.fingerprint}, not {given}): its arguments are now "
                f"{_clip(call.arguments)}; answer it again as it is now"
            )


def _clip(arguments: Mapping[str, Any], limit: int = 200) -> str:
    text = json.dumps(dict(arguments), ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


MCP_KINDS = ("mcp_login", "mcp_elicitation")


def mcp_answer(
    pause: Pause, payload: Mapping[str, Any], *, current: bool = True
) -> tuple[str, Any] | None:
    """The call id and the MCP answer (``LoginAnswer`` / ``ElicitationAnswer``) that
    ``payload`` gives to ``pause`` (None for an empty payload: the run pauses again);
    Conflict naming what is wrong (``current``: a redirect from another login too)."""
    if not payload:
        return None
    from harnessc.runtime.mcp.user_types import ElicitationAnswer, LoginAnswer

    call_id = payload.get("call_id") or pause.payload.get("call_id")
    held = {c.id for c in pause.held}
    shown = pause.payload.get("call_id")
    if isinstance(shown, str):
        from harnessc.runtime.mcp.pausing_user import is_start_key

        if is_start_key(shown):  # a login met while listing a server's tools: no call holds it
            held.add(shown)
    if not isinstance(call_id, str) or call_id not in held:
        raise Conflict(f"no held call {call_id!r} (held: {', '.join(sorted(held)) or 'none'})")
    if pause.kind == "mcp_login":
        redirect = payload.get("redirect")
        if not isinstance(redirect, str) or not redirect.strip():
            raise Conflict(
                'the answer to a login is {"redirect": "<the address the browser was sent '
                'back to>"} or {"redirect": "done"}'
            )
        url = pause.payload.get("url")
        if current and redirect.strip() != "done" and isinstance(url, str):
            from harnessc.runtime.mcp.pausing_user import login_state

            asked, given = login_state(url), login_state(redirect.strip())
            if asked is not None and given is not None and asked != given:
                raise Conflict(
                    "this redirect comes back from another login (its state differs): "
                    f"open {url} and answer with where it sends the browser"
                )
        return call_id, LoginAnswer(redirect.strip())
    action = payload.get("action")
    if action not in ("accept", "decline", "cancel"):
        raise Conflict(
            'the answer to a question is {"action": "accept", "content": {...}}, '
            '"decline" or "cancel"'
        )
    content = payload.get("content")
    if content is not None and not isinstance(content, dict):
        raise Conflict("the answer's content must be an object of the form's fields")
    if action == "accept" and pause.payload.get("mode", "form") == "form":
        from harnessc.runtime.mcp.user_bridge import fill_answer

        try:
            fill_answer(pause.payload.get("schema"), content)
        except ValueError as exc:
            raise Conflict(f"the answer does not fit the question: {exc}") from None
    return call_id, ElicitationAnswer(action, content if action == "accept" else None)


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


def always_rules(pause: Pause, answer: Answer) -> list[str]:
    """The rules the ``always`` answers store, as the user is shown them (one for each
    held call answered ``always``: the narrowest rule covering the call as shown)."""
    from harnessc.runtime.permissions.rules import remembered_rule

    return [
        remembered_rule(c.name, c.arguments).text
        for c in pause.held
        if answer.approvals.get(c.id) == "always"
    ]


async def resume_run(
    harness: AgentHarness, pause: Pause, answer: Answer, arguments: dict[str, Any]
) -> RunResult:
    """``harness.resume(**arguments)``, after a notice on the run's stream for each rule
    an ``always`` answer stored (``always allowed for this session: Bash(ls)``)."""
    for text in always_rules(pause, answer):
        await harness.notice("permissions", f"always allowed for this session: {text}")
    return await harness.resume(**arguments)


def resume_arguments(harness: AgentHarness, pause: Pause, answer: Answer) -> dict[str, Any]:
    """The keyword arguments of ``harness.resume`` for ``answer`` (checked against
    ``pause`` first: ``check_answer``)."""
    budget = raised_budget(harness.budget.budget, answer.budget)
    if answer.budget:  # a sub-agent stopped at a limit of its own: raised for it too
        from harnessc.runtime.agent.subagents import pass_budget_raise

        pass_budget_raise(harness, dict(answer.budget))
    if pause.awaiting_tool:
        return {"results": dict(answer.results), "budget": budget}
    if pause.kind in MCP_KINDS:
        given = mcp_answer(pause, answer.payload, current=False)
        if given is not None:
            from harnessc.runtime.mcp.pausing_user import deliver, users_of

            # the run's own users: a call id is unique within a run only
            deliver(
                *given, among=users_of(harness.options.extensions)
            )  # not held here (another process): the resume asks again
    approvals = record_approvals(harness, answer.approvals) if answer.approvals else None
    return {"budget": budget, "approvals": approvals}

"""The interactive answers to a paused run: tool results, a held call, a bigger budget."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Protocol

from harnessc.runtime.cli.host import ReplHost
from harnessc.runtime.cli.output import format_number, one_line
from harnessc.runtime.cli.pause import budget_limit, describe_pause, pause_reason

__all__ = ["answer_pause"]


class PausedRepl(ReplHost, Protocol):
    async def ask(self, question: str) -> str | None: ...


async def answer_pause(self: PausedRepl) -> None:
    """Ask the user what a paused run needs: tool results, a bigger budget, a go."""
    harness = self.harness
    state = harness.paused_reason
    if state is None:
        return
    pending = harness.pending_tool_calls
    if state == "awaiting_tool":
        for line in describe_pause("awaiting_tool", pending, awaiting_tool=True):
            self.note(line)
        answers: dict[str, Any] = {}
        for call in pending:
            args = one_line(json.dumps(call.arguments, ensure_ascii=False, default=str), 200)
            self.say(f"{call.name} ({call.id}) {args}")
            answer = await self.ask("y = approve, n = deny, or type the result: ")
            if answer is None or answer == "":
                self.note("left paused: /resume answers later")
                return
            if answer.lower() in ("y", "yes"):
                answers[call.id] = "approved"
            elif answer.lower() in ("n", "no"):
                answers[call.id] = {"error": "denied by the user"}
            else:
                answers[call.id] = answer
        await self.run(lambda: harness.resume(answers))
        return
    reason = pause_reason(harness.session)
    from harnessc.runtime.cli.permission import answer_asks, is_permission_pause

    if is_permission_pause(reason):
        from harnessc.runtime.permissions.gate import describe_call, pending_asks

        approve: list[str] = []
        deny: list[str] = []
        held = {c.id for c in pending}  # an ask a hook blocked afterwards was never held
        asks = {
            i: (str(h["tool"]), h["args"])
            for i, h in pending_asks(harness.session).items()
            if i in held
        }
        if not asks:  # a sub-agent's ask: the calls it holds, answered by their ids
            asks = {c.id: (c.name, c.arguments) for c in pending}
        for call_id, (tool, args) in asks.items():
            label = describe_call(tool, args)
            answer = await self.ask(f"{label} ({call_id}) was held: allow it? [y/N] ")
            if answer is None:
                self.note("left paused: /resume answers later")
                return
            (approve if answer.lower() in ("y", "yes") else deny).append(call_id)
        lines, approvals = answer_asks(harness, approve, deny)
        for line in lines:
            self.note(line)
        await self.run(lambda: harness.resume(approvals=approvals))
        return
    limit = budget_limit(reason)
    if limit is not None:
        budget = harness.budget.budget
        maximum = getattr(budget, limit, None)
        used = harness.budget.used(limit)
        step = _default_step(limit, maximum)
        answer = await self.ask(
            f"budget limit {limit} hit ({_num(used)} of {_num(maximum)}). "
            f"Extend by [{_num(step)}], or 0 to stay paused: "
        )
        if answer is None:
            self.note("left paused: /resume continues later")
            return
        try:
            extra = float(answer) if answer else step
        except ValueError:
            self.note(f"not a number: {answer!r}; left paused (/resume)")
            return
        if extra <= 0:
            self.note("left paused: /resume continues later")
            return
        base = maximum if maximum is not None else used
        value: float = base + extra
        if limit in ("turns", "tool_calls", "tokens"):
            value = int(value)
        changes: dict[str, Any] = {limit: value}
        raised = replace(budget, **changes)
        await self.run(lambda: harness.resume(budget=raised))
        return
    answer = await self.ask(f"paused: {reason or 'by a hook'}. Continue? [Y/n] ")
    if answer is None or answer.lower() in ("n", "no"):
        self.note("left paused: /resume continues later")
        return
    await self.run(lambda: harness.resume())


def _default_step(limit: str, maximum: float | None) -> float:
    if maximum:
        return maximum if limit != "wall_clock_s" else max(maximum, 60.0)
    return 10.0


def _num(value: float | None) -> str:
    if value is None:
        return "unlimited"
    return format_number(value)

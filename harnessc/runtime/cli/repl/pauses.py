"""The interactive answers to a paused run: tool results, a held call, a bigger budget;
each the run-control layer's ``Answer`` to its ``Pause``."""

from __future__ import annotations

import json
from typing import Any, Protocol

from harnessc.runtime.cli.host import ReplHost
from harnessc.runtime.cli.output import format_number, one_line
from harnessc.runtime.cli.pause import pause_lines
from harnessc.runtime.runs.answers import Answer, Decision
from harnessc.runtime.runs.pauses import pause_of

__all__ = ["answer_pause"]


class PausedRepl(ReplHost, Protocol):
    async def ask(self, question: str) -> str | None: ...


async def answer_pause(self: PausedRepl) -> None:
    """Ask the user what a paused run needs: tool results, a bigger budget, a go."""
    harness = self.harness
    pause = pause_of(harness)
    if pause is None:
        return
    if pause.awaiting_tool:
        for line in pause_lines(pause):
            self.note(line)
        answers: dict[str, Any] = {}
        for call in pause.calls:
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
        await self.run(lambda: self.answer_run(Answer(results=answers)))
        return
    if pause.kind == "approval":
        from harnessc.runtime.cli.permission import answer_lines
        from harnessc.runtime.permissions.gate import describe_call, pending_asks

        asks = {i: (str(h["tool"]), h["args"]) for i, h in pending_asks(harness.session).items()}
        held = {c.id for c in pause.held}
        asks = {i: a for i, a in asks.items() if i in held}
        if not asks:  # a sub-agent's ask: the calls it holds, answered by their ids
            asks = {c.id: (c.name, c.arguments) for c in pause.held}
        approvals: dict[str, Decision] = {}
        for call_id, (tool, args) in asks.items():
            label = describe_call(tool, args)
            answer = await self.ask(f"{label} ({call_id}) was held: allow it? [y/N/always] ")
            if answer is None:
                self.note("left paused: /resume answers later")
                return
            word = answer.lower()
            approvals[call_id] = (
                "always" if word in ("a", "always") else "allow" if word in ("y", "yes") else "deny"
            )
        for line in answer_lines(harness, approvals):
            self.note(line)
        await self.run(lambda: self.answer_run(Answer(approvals=approvals)))
        return
    if pause.kind == "budget" and pause.budget is not None:
        limit, used, maximum = pause.budget.limit, pause.budget.used, pause.budget.allowed
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
        await self.run(lambda: self.answer_run(Answer(budget={limit: value})))
        return
    answer = await self.ask(f"paused: {pause.reason or 'by a hook'}. Continue? [Y/n] ")
    if answer is None or answer.lower() in ("n", "no"):
        self.note("left paused: /resume continues later")
        return
    await self.run(lambda: self.answer_run(Answer()))


def _default_step(limit: str, maximum: float | None) -> float:
    if maximum:
        return maximum if limit != "wall_clock_s" else max(maximum, 60.0)
    return 10.0


def _num(value: float | None) -> str:
    if value is None:
        return "unlimited"
    return format_number(value)

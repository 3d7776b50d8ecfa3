"""The run-state record: everything that decides what a run does next, in one place.

A run (``prompt`` until DONE, across pauses) is one ``RunState``: the loop state (its own
``StateMachine``), the
turn number and whether the turn is open, the budget usage, the reply being executed
and, for each of its tool calls, a ``CallRecord`` saying whether it is planned, held
for approval, prepared, blocked, executed (with its result) or awaiting the caller,
plus the pause
or finish reason. A call a sub-agent paused inside holds the sub-agent's path, session
file and pending calls (``CallRecord.nested``). Every step of the loop reads it; it is
written into the session with every pause (``harnessc.pause`` entry, key ``run``) and rebuilt from there exactly, so a
run continued in another process behaves as if it had never stopped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from msgspec import Struct, field

from harnessc.runtime.agent.results import RunStatus
from harnessc.runtime.core.budget import BUDGET_LIMITS, NO_WARNINGS, Budget, BudgetUsage
from harnessc.runtime.core.loop_states import LoopState, StateMachine
from harnessc.runtime.core.messages import (
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    content_from_dict,
    message_from_dict,
)

__all__ = [
    "AGAIN",
    "CALL_STATUSES",
    "RUN_STATE_VERSION",
    "Again",
    "AwaitTools",
    "CallRecord",
    "CallStatus",
    "Finish",
    "Next",
    "Pause",
    "RunState",
]

RUN_STATE_VERSION = 1

CallStatus = Literal["planned", "held", "prepared", "blocked", "executed", "awaiting"]
CALL_STATUSES: tuple[str, ...] = (
    "planned",
    "held",
    "prepared",
    "blocked",
    "executed",
    "awaiting",
)


class CallRecord(Struct):
    """One tool call of the reply being executed.

    ``planned`` (not looked at yet) -> ``prepared`` (hooks passed, about to run) or
    ``blocked`` (refused: the result is an error) or ``awaiting`` (external: the caller
    supplies the result) -> ``executed`` (ran, or the caller answered). ``result`` is set
    once the tool_result hooks ran; ``committed`` once it is in the context.

    A call a tool_call hook holds for approval (``PauseRequest``: a permission ``ask``)
    is ``held`` (started: counted and announced once), and the run pauses; in a
    sequential batch the calls after it stay ``planned`` until it is decided.
    ``approval`` is the caller's answer given at resume ("allow" runs it, "deny"
    refuses it), after which it is prepared again.
    """

    call: ToolCall
    status: CallStatus = "planned"
    args: dict[str, Any] | None = None  # the arguments after validation and tool_call hooks
    started: bool = False  # tool_execution_start was emitted
    result: ToolResultMessage | None = None
    terminate: bool = False
    terminated_by: str | None = None  # "tool" | "hook"
    committed: bool = False
    approval: str | None = None  # "allow" | "deny": the caller's answer to a held call
    # A sub-agent paused inside this call (the tool raised HoldCall): its agent path,
    # session and the calls waiting for an answer; the answers given at resume.
    nested: dict[str, Any] | None = None
    answers: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return self.call.id

    @property
    def shown(self) -> ToolCall:
        """The call as its question shows it: a held call with the arguments that would
        run (after every ``tool_call`` hook), which an approval answers."""
        if self.status != "held" or self.args is None or self.nested is not None:
            return self.call
        return ToolCall(self.call.id, self.call.name, dict(self.args))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"call": self.call.to_dict(), "status": self.status}
        if self.args is not None:
            out["args"] = self.args
        if self.started:
            out["started"] = True
        if self.result is not None:
            out["result"] = self.result.to_dict()
        if self.terminate:
            out["terminate"] = True
            out["terminated_by"] = self.terminated_by
        if self.committed:
            out["committed"] = True
        if self.approval is not None:
            out["approval"] = self.approval
        if self.nested is not None:
            out["nested"] = self.nested
        if self.answers is not None:
            out["answers"] = self.answers
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> CallRecord:
        call = content_from_dict(data["call"])
        if not isinstance(call, ToolCall):
            raise ValueError("a call record needs a toolCall")
        status = data.get("status", "planned")
        if status not in CALL_STATUSES:
            raise ValueError(f"unknown call status {status!r}")
        started = bool(data.get("started", False))
        if status == "planned" and started:  # a held call, as older records wrote it
            status = "held"
        result = data.get("result")
        message = message_from_dict(result) if isinstance(result, dict) else None
        if message is not None and not isinstance(message, ToolResultMessage):
            raise ValueError("a call result must be a toolResult message")
        args = data.get("args")
        return CallRecord(
            call=call,
            status=status,
            args=dict(args) if isinstance(args, dict) else None,
            started=started,
            result=message,
            terminate=bool(data.get("terminate", False)),
            terminated_by=data.get("terminated_by"),
            committed=bool(data.get("committed", False)),
            approval=data.get("approval") if data.get("approval") in ("allow", "deny") else None,
            nested=dict(nested) if isinstance(nested := data.get("nested"), dict) else None,
            answers=dict(answers) if isinstance(answers := data.get("answers"), dict) else None,
        )

    def nested_calls(self) -> list[tuple[ToolCall, str, str]]:
        """The calls a sub-agent paused inside this one waits on: (call, kind, agent path)."""
        out: list[tuple[ToolCall, str, str]] = []
        for item in (self.nested or {}).get("pending") or []:
            call = content_from_dict(item.get("call") or {}) if isinstance(item, dict) else None
            if isinstance(call, ToolCall):
                out.append((call, str(item.get("kind", "approval")), str(item.get("path", ""))))
        return out


class RunState(Struct):
    """The explicit state of one run (see the module docstring)."""

    run_id: str
    machine: StateMachine = field(default_factory=StateMachine)  # the run's loop state
    turn: int = 0
    turn_open: bool = False
    usage: BudgetUsage = field(default_factory=BudgetUsage)
    warned: frozenset[str] = NO_WARNINGS  # soft budget warnings already given
    limits: Budget | None = None  # the limits in force at the pause (raised ones stay raised)
    reply: AssistantMessage | None = None
    calls: list[CallRecord] = []
    plan_committed: bool = False
    overflow_retried: bool = False
    system_prompt: str | None = None  # set by a before_agent_start hook for this run
    pause_requested: str | None = None  # a hook asked for review: pause at the next decision
    pause_reason: str | None = None
    finish_reason: str | None = None
    output_retries: int = 0  # invalid typed answers sent back to the model so far

    # -- questions the loop asks ----------------------------------------------------

    @property
    def state(self) -> LoopState:
        return self.machine.state

    def record(self, call_id: str) -> CallRecord | None:
        for record in self.calls:
            if record.call.id == call_id:
                return record
        return None

    @property
    def held(self) -> list[CallRecord]:
        """Calls a tool_call hook held for approval (started, not decided yet)."""
        return [r for r in self.calls if r.status == "held"]

    @property
    def awaiting(self) -> list[CallRecord]:
        return [r for r in self.calls if r.status == "awaiting"]

    @property
    def planned(self) -> list[CallRecord]:
        return [r for r in self.calls if r.status == "planned"]

    @property
    def to_run(self) -> list[CallRecord]:
        """The calls the next tool batch takes up, in call order: held and planned."""
        return [r for r in self.calls if r.status in ("planned", "held")]

    @property
    def unanswered(self) -> list[ToolCall]:
        """Calls without a result yet (planned, awaiting, or cut short); for a call a
        paused sub-agent holds, the sub-agent's calls that wait for an answer."""
        out: list[ToolCall] = []
        for record in self.calls:
            if record.result is not None:
                continue
            nested = record.nested_calls() if record.nested is not None else []
            if nested:
                out.extend(call for call, _, _ in nested)
            else:
                out.append(record.shown)
        return out

    def take_nested_answers(
        self, results: dict[str, Any] | None, approvals: Mapping[str, bool] | None
    ) -> tuple[dict[str, Any] | None, dict[str, bool] | None]:
        """Give the answers meant for calls a paused sub-agent waits on to the call that
        holds it (its ``answers``); returns the rest. ValueError when a sub-agent waiting
        for external tool results is not given every one of them."""
        rest_results = dict(results) if results else {}
        rest_approvals = dict(approvals) if approvals else {}
        for record in self.calls:
            nested = record.nested_calls() if record.result is None else []
            if not nested:
                continue
            answers: dict[str, Any] = {"results": {}, "approvals": {}}
            for call, _kind, _ in nested:
                if call.id in rest_results:
                    answers["results"][call.id] = rest_results.pop(call.id)
                if call.id in rest_approvals:
                    answers["approvals"][call.id] = bool(rest_approvals.pop(call.id))
            tools = [c.id for c, kind, _ in nested if kind == "tool"]
            missing = [i for i in tools if i not in answers["results"]]
            if tools and missing:
                raise ValueError(
                    "resume() at a tool pull point needs a result for every pending call; "
                    f"missing: {', '.join(missing)}"
                )
            record.answers = answers
        return rest_results or None, rest_approvals or None

    def set_reply(self, reply: AssistantMessage) -> None:
        self.reply = reply
        self.calls = [CallRecord(call) for call in reply.tool_calls]
        self.plan_committed = False

    # -- persistence ------------------------------------------------------------------

    def to_dict(self, *, wall_clock_s: float | None = None) -> dict[str, Any]:
        usage = self.usage.to_dict()
        if wall_clock_s is not None:
            usage["wall_clock_s"] = round(wall_clock_s, 3)
        out: dict[str, Any] = {
            "version": RUN_STATE_VERSION,
            "run_id": self.run_id,
            "state": self.state.value,
            "turn": self.turn,
            "turn_open": self.turn_open,
            "usage": usage,
            "warned": sorted(self.warned),
            "limits": _limits_dict(self.limits) if self.limits is not None else None,
            "reply": self.reply.to_dict() if self.reply is not None else None,
            "calls": [r.to_dict() for r in self.calls],
            "plan_committed": self.plan_committed,
            "overflow_retried": self.overflow_retried,
            "system_prompt": self.system_prompt,
            "pause_requested": self.pause_requested,
            "pause_reason": self.pause_reason,
            "finish_reason": self.finish_reason,
        }
        if self.output_retries:
            out["output_retries"] = self.output_retries
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> RunState:
        """The record from its JSON form; raises ValueError when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("run_id"), str):
            raise ValueError("a run state needs a run_id")
        if data.get("version", RUN_STATE_VERSION) != RUN_STATE_VERSION:
            raise ValueError(f"unsupported run state version {data.get('version')!r}")
        reply = data.get("reply")
        message = message_from_dict(reply) if isinstance(reply, dict) else None
        if message is not None and not isinstance(message, AssistantMessage):
            raise ValueError("a run's reply must be an assistant message")
        calls = data.get("calls") or []
        limits = data.get("limits")
        if not isinstance(calls, list):
            raise ValueError("calls must be a list")
        return RunState(
            run_id=data["run_id"],
            machine=StateMachine(state=LoopState(str(data.get("state", "IDLE")))),
            turn=int(data.get("turn", 0) or 0),
            turn_open=bool(data.get("turn_open", False)),
            usage=BudgetUsage.from_dict(data.get("usage")),
            warned=frozenset(str(w) for w in warned)
            if (warned := data.get("warned"))
            else NO_WARNINGS,
            limits=_limits_from(limits) if isinstance(limits, dict) else None,
            reply=message,
            calls=[CallRecord.from_dict(c) for c in calls],
            plan_committed=bool(data.get("plan_committed", False)),
            overflow_retried=bool(data.get("overflow_retried", False)),
            system_prompt=data.get("system_prompt"),
            pause_requested=data.get("pause_requested"),
            pause_reason=data.get("pause_reason"),
            finish_reason=data.get("finish_reason"),
            output_retries=int(data.get("output_retries", 0) or 0),
        )


def _limits_dict(budget: Budget) -> dict[str, Any]:
    return {name: getattr(budget, name) for name in (*BUDGET_LIMITS, "soft_ratio")}


def _limits_from(data: dict[str, Any]) -> Budget:
    return Budget(**{k: data[k] for k in (*BUDGET_LIMITS, "soft_ratio") if k in data})


# Where a stage leads besides the next state: back to IDLE (``Pause``), the pull point
# AWAITING_TOOL (``AwaitTools``), DONE (``Finish``) or the same stage once more (``Again``).


class Pause(Struct, frozen=True):
    reason: str


class AwaitTools(Struct, frozen=True):
    pass


class Finish(Struct, frozen=True):
    status: RunStatus
    reason: str
    output: Any = None  # the validated typed result (``output:``)


class Again(Struct, frozen=True):
    """Run the same stage once more, in the same state (not a transition)."""


AGAIN = Again()

Next = LoopState | Pause | AwaitTools | Finish | Again

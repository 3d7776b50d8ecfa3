"""turn_continue (also built as ``hook/turn-continue``): keep an autonomous run going.

When the model replies without tool calls (the ``before_stop`` moment), decide, in
this order:

1. ``finish`` was called in this run -> stop ("finished: <status>")
2. the last ``stall_limit`` tool calls are the same call (name + normalised JSON
   input) -> stop ("stalled")
3. continuations used >= ``max_continuations`` -> stop ("continuation limit reached")
4. ``no_progress_limit`` continuations in a row without progress (no tool call, todo
   update or finish since the continuation) -> stop ("no progress")
5. no outstanding work: no pending todo (when ``require_todos_done``) and finish not
   required -> stop ("no outstanding work")
6. otherwise continue: the continue prompt plus "Outstanding tasks:" and one line per
   todo not done, ``- [status] title (id: ID)``.

Each decision is recorded as a notice event (source ``turn_continue``). Needs the
``todo`` and ``finish`` tools active; ``max_continuations <= 0`` disables it.
Contributes ``/status``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.hooks import BeforeStopEvent, StopDecision
from harnessc.runtime.core.messages import Message, ToolResultMessage, UserMessage
from harnessc.runtime.extensions.base import (
    ExtensionConfigError,
    decode_config,
    require_non_negative,
)

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "DEFAULT_CONTINUE_PROMPT",
    "STOP_REASONS",
    "ContinueDecision",
    "TurnContinueConfig",
    "TurnContinueExtension",
]

NAME = "turn_continue"
DEFAULT_CONTINUE_PROMPT = (
    "Keep going on the task. Review the remaining work, do the next concrete step, "
    "and call finish when everything is done or you are blocked."
)
STOP_REASONS: tuple[str, ...] = (
    "finished",
    "stalled",
    "continuation limit reached",
    "no progress",
    "no outstanding work",
)
REQUIRED_TOOLS: tuple[str, ...] = ("todo", "finish")


@dataclass(slots=True)
class TurnContinueConfig:
    """Zero stall/no-progress limits and an empty prompt keep their defaults."""

    max_continuations: int = 10
    continue_prompt: str = DEFAULT_CONTINUE_PROMPT
    require_finish: bool = True
    require_todos_done: bool = True
    stall_limit: int = 3
    no_progress_limit: int = 3

    def set_defaults(self) -> None:
        if not self.continue_prompt or not self.continue_prompt.strip():
            self.continue_prompt = DEFAULT_CONTINUE_PROMPT
        if self.stall_limit == 0:
            self.stall_limit = 3
        if self.no_progress_limit == 0:
            self.no_progress_limit = 3

    def validate(self) -> None:
        require_non_negative(
            self,
            ("max_continuations", "stall_limit", "no_progress_limit"),
            extension=NAME,
            hint="; max_continuations 0 disables turn_continue",
        )
        if not self.require_finish and not self.require_todos_done:
            raise ExtensionConfigError(
                "require_finish and require_todos_done are both false, so there is never "
                "outstanding work and turn_continue would never continue; set one to true "
                "(or max_continuations to 0 to disable it)",
                extension=NAME,
                field="require_finish",
            )

    @property
    def enabled(self) -> bool:
        return self.max_continuations > 0


@dataclass(slots=True)
class ContinueDecision:
    continue_: bool
    reason: str  # "continue" or one of STOP_REASONS (with ": status" after finished)
    message: str = ""


@dataclass(slots=True)
class _RunState:
    continuations: int = 0
    signatures: list[str] = field(default_factory=list)  # every tool call of the run
    progress: int = 0  # tool calls + todo updates + finish calls in this run
    progress_at_continuation: int = 0
    no_progress_streak: int = 0
    finish_status: str | None = None
    finish_summary: str = ""
    last_decision: str = ""


def call_signature(name: str, arguments: Any) -> str:
    """A tool call's identity for stall detection: name + normalised JSON input."""
    try:
        normal = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        normal = repr(arguments)
    return f"{name}:{normal}"


class TurnContinueExtension:
    """Decides at ``before_stop`` whether an autonomous run goes on."""

    name = NAME

    def __init__(self, config: TurnContinueConfig | dict[str, Any] | None = None) -> None:
        self.config = decode_config(TurnContinueConfig, config, extension=NAME)
        self.run = _RunState()
        self._harness: HarnessContext | None = None

    @classmethod
    def from_config(cls, data: dict[str, Any] | None) -> TurnContinueExtension:
        return cls(data)

    @property
    def command_names(self) -> tuple[str, ...]:
        return ("status",) if self.config.enabled else ()

    def install(self, harness: HarnessContext) -> None:
        if not self.config.enabled:
            return
        active = set(harness.active_tool_names)
        missing = [t for t in REQUIRED_TOOLS if t not in active]
        if missing:
            raise ExtensionConfigError(
                f"needs the todo and finish tools active, but {' and '.join(missing)} "
                f"{'is' if len(missing) == 1 else 'are'} not (add create_todo_tool() and "
                "create_finish_tool() to the tools, or set max_continuations to 0)",
                extension=NAME,
            )
        self._harness = harness
        harness.on("agent_start", self._on_agent_start)
        harness.on("turn_end", self._on_turn_end)
        harness.on("before_stop", self._on_before_stop)
        harness.commands.register(
            "status",
            "continuations left, tokens this run, finish status and todos",
            self.status,
            source=NAME,
        )

    # -- bookkeeping -----------------------------------------------------------------

    def _on_agent_start(self, event: Any) -> None:
        self.run = _RunState()

    def _on_turn_end(self, event: Any) -> None:
        message = getattr(event, "message", None)
        calls = list(getattr(message, "tool_calls", []) or [])
        results: dict[str, ToolResultMessage] = {
            r.tool_call_id: r for r in getattr(event, "tool_results", []) or []
        }
        for call in calls:
            self.run.signatures.append(call_signature(call.name, call.arguments))
            self.run.progress += 1
            result = results.get(call.id)
            if call.name == "finish" and result is not None and not result.is_error:
                details = result.details if isinstance(result.details, dict) else {}
                raw = details.get("finish")
                record: dict[str, Any] = raw if isinstance(raw, dict) else {}
                args = call.arguments if isinstance(call.arguments, dict) else {}
                self.run.finish_status = str(
                    record.get("status") or args.get("status") or "completed"
                )
                self.run.finish_summary = str(record.get("summary") or args.get("summary") or "")

    def task_state(self, messages: list[Message] | None = None) -> Any:
        """The todo state: the live state of the todo tool, else rebuilt from history."""
        from harnessc.runtime.tools.tasks import TaskState

        harness = self._harness
        tool = harness.tools.get("todo") if harness is not None else None
        state = getattr(tool, "state", None)
        if isinstance(state, TaskState):
            return state
        if messages is None and harness is not None:
            messages = _branch_messages(harness)
        return TaskState.from_messages(messages or [])

    # -- the decision ---------------------------------------------------------------

    def decide(self, messages: list[Message] | None = None) -> ContinueDecision:
        c, r = self.config, self.run
        if r.finish_status is not None:
            return ContinueDecision(False, f"finished: {r.finish_status}")
        tail = r.signatures[-c.stall_limit :]
        if len(tail) >= c.stall_limit and len(set(tail)) == 1:
            return ContinueDecision(False, "stalled")
        if r.continuations >= c.max_continuations:
            return ContinueDecision(False, "continuation limit reached")
        if r.continuations > 0:
            if r.progress > r.progress_at_continuation:
                r.no_progress_streak = 0
            else:
                r.no_progress_streak += 1
            if r.no_progress_streak >= c.no_progress_limit:
                return ContinueDecision(False, "no progress")
        pending = list(self.task_state(messages).pending)
        if not (c.require_todos_done and pending) and not c.require_finish:
            return ContinueDecision(False, "no outstanding work")
        if pending:
            lines = "\n".join(f"- [{t.status}] {t.title} (id: {t.id})" for t in pending)
            text = f"{c.continue_prompt}\n\nOutstanding tasks:\n{lines}"
        else:
            text = f"{c.continue_prompt}\n\nOutstanding tasks: none."
        return ContinueDecision(True, "continue", text)

    async def _on_before_stop(
        self, event: BeforeStopEvent, harness: HarnessContext
    ) -> StopDecision | None:
        decision = self.decide(list(event.messages))
        r = self.run
        r.last_decision = decision.reason
        if not decision.continue_:
            await harness.notice(NAME, f"stopped: {decision.reason}")
            # the run ends with finish reason turn_continue_stop (decision.reason in the notice)
            return StopDecision(continue_=False, reason=decision.reason)
        r.continuations += 1
        r.progress_at_continuation = r.progress
        await harness.notice(
            NAME, f"continuing ({r.continuations}/{self.config.max_continuations})"
        )
        return StopDecision(
            continue_=True, messages=[UserMessage(decision.message)], reason="turn_continue"
        )

    # -- /status --------------------------------------------------------------------

    def status(self, args: str = "") -> str:
        c, r = self.config, self.run
        harness = self._harness
        tokens = 0
        if harness is not None:
            tokens = int(getattr(harness.budget.usage, "tokens", 0))
        finish = (
            f"{r.finish_status}" + (f" ({r.finish_summary})" if r.finish_summary else "")
            if r.finish_status
            else "not called"
        )
        state = self.task_state()
        lines = [
            f"continuations left: {max(0, c.max_continuations - r.continuations)} "
            f"of {c.max_continuations}",
            f"tokens this run: {tokens}",
            f"finish: {finish}",
        ]
        if r.last_decision:
            lines.append(f"last decision: {r.last_decision}")
        if state.todos:
            counts = state.counts()
            lines.append(f"todos: {counts['done']}/{counts['total']} done")
            lines += [f"- [{t.status}] {t.title} (id: {t.id})" for t in state.todos]
        else:
            lines.append("todos: none")
        return "\n".join(lines)


def _branch_messages(harness: HarnessContext) -> list[Message]:
    """Every message on the session's current branch (compaction does not hide them)."""
    from harnessc.runtime.session.session import entry_message

    out: list[Message] = []
    try:
        entries = harness.session.branch()
    except Exception:
        return list(harness.messages)
    for entry in entries:
        message = entry_message(entry)
        if message is not None:
            out.append(message)
    return out

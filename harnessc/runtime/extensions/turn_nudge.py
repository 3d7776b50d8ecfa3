"""turn_nudge (also built as ``hook/turn-nudge``): wrap-up notices appended to tool results.

A "turn" here is one run (a prompt until the agent stops, continuation segments
included); a step is one model call with its tool batch. While the tools of step N
run, N steps are taken. Every ``step_interval`` steps or ``time_interval_minutes`` of
elapsed time the next tool result gets the budget-status ``message`` (numbers only);
from ``step_limit`` steps or ``time_limit_minutes`` on, every tool result gets
``limit_message``. The camelCase names (``stepInterval``, ``limitMessage``, ...)
are accepted, and ``notice`` (harnessc's former name of ``message``) as an alias. ``{steps}`` and ``{elapsed}`` are filled in. The text is part of the
tool result, so the session records it. It only nudges: hard limits are the budget's.
Time spent paused (between a pause and its resume) does not count.
"""

from __future__ import annotations

import math
import string
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.hooks import ToolResultEvent, ToolResultPatch
from harnessc.runtime.core.messages import TextContent
from harnessc.runtime.extensions.base import (
    ExtensionConfigError,
    decode_config,
    require_non_negative,
)
from harnessc.runtime.extensions.config_names import canonical_config

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "DEFAULT_NUDGE_LIMIT_MESSAGE",
    "DEFAULT_NUDGE_NOTICE",
    "TurnNudgeConfig",
    "TurnNudgeExtension",
    "format_elapsed",
]

NAME = "turn_nudge"
DEFAULT_NUDGE_NOTICE = "[budget status] {steps} steps taken, {elapsed} elapsed in this turn."
DEFAULT_NUDGE_LIMIT_MESSAGE = (
    "[budget status] {steps} steps taken, {elapsed} elapsed: the step or time limit of this "
    "turn is reached. Summarise what you did and what is left, then end the turn."
)
_PLACEHOLDERS = frozenset({"steps", "elapsed"})
_DEFAULTS: dict[str, Any] = {
    "step_interval": 20,
    "time_interval_minutes": 10.0,
    "step_limit": 100,
    "time_limit_minutes": 60.0,
    "message": DEFAULT_NUDGE_NOTICE,
    "limit_message": DEFAULT_NUDGE_LIMIT_MESSAGE,
}


@dataclass(slots=True)
class TurnNudgeConfig:
    """Zero (or an empty message) keeps the default; use a very large
    value to switch one trigger off."""

    step_interval: int = 20
    time_interval_minutes: float = 10.0
    step_limit: int = 100
    time_limit_minutes: float = 60.0
    message: str = DEFAULT_NUDGE_NOTICE  # alias: notice
    limit_message: str = DEFAULT_NUDGE_LIMIT_MESSAGE

    def set_defaults(self) -> None:
        for name, default in _DEFAULTS.items():
            if not getattr(self, name):
                setattr(self, name, default)

    def validate(self) -> None:
        require_non_negative(
            self,
            ("step_interval", "time_interval_minutes", "step_limit", "time_limit_minutes"),
            extension=NAME,
        )
        for name in ("message", "limit_message"):
            _check_template(getattr(self, name), name)


def _check_template(text: Any, name: str) -> None:
    if not isinstance(text, str):
        raise ExtensionConfigError("must be a string", extension=NAME, field=name)
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
    except ValueError as exc:
        raise ExtensionConfigError(
            f"bad template ({exc}); write literal braces as {{{{ and }}}}",
            extension=NAME,
            field=name,
        ) from None
    unknown = sorted(f or "{}" for f in fields - _PLACEHOLDERS)
    if unknown:
        raise ExtensionConfigError(
            f"unknown placeholder(s) {', '.join(unknown)}; use {{steps}} and {{elapsed}}",
            extension=NAME,
            field=name,
        )


def format_elapsed(seconds: float) -> str:
    """``45s``, ``12m05s``, ``1h02m``."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


@dataclass(slots=True)
class _TurnState:
    started: float = 0.0
    steps: int = 0
    paused_at: float | None = None
    next_step_notice: int = 0
    next_time_notice: float = 0.0
    notices: list[int] = field(default_factory=list)  # steps at which a notice was added


class TurnNudgeExtension:
    """Counts steps and time per turn; appends notices through the tool_result hook."""

    name = NAME

    def __init__(
        self,
        config: TurnNudgeConfig | dict[str, Any] | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(config, Mapping):
            config = canonical_config(NAME, _DEFAULTS, config)
        self.config = decode_config(TurnNudgeConfig, config, extension=NAME)
        self.clock = clock
        self.state = _TurnState()
        self._reset()

    @classmethod
    def from_config(cls, data: dict[str, Any] | None) -> TurnNudgeExtension:
        return cls(data)

    @property
    def command_names(self) -> tuple[str, ...]:
        return ()

    def install(self, harness: HarnessContext) -> None:
        harness.on("agent_start", self._on_agent_start)
        harness.on("turn_start", self._on_turn_start)
        harness.on("agent_pause", self._on_pause)
        harness.on("agent_resume", self._on_resume)
        harness.on("tool_result", self._on_tool_result)

    # -- counters ------------------------------------------------------------------

    def _reset(self) -> None:
        c = self.config
        self.state = _TurnState(
            started=self.clock(),
            next_step_notice=c.step_interval,
            next_time_notice=c.time_interval_minutes * 60.0,
        )

    def elapsed(self) -> float:
        now = self.state.paused_at if self.state.paused_at is not None else self.clock()
        return max(0.0, now - self.state.started)

    def _on_agent_start(self, event: Any) -> None:
        self._reset()

    def _on_turn_start(self, event: Any) -> None:
        self.state.steps += 1

    def _on_pause(self, event: Any) -> None:
        if self.state.paused_at is None:
            self.state.paused_at = self.clock()

    def _on_resume(self, event: Any) -> None:
        if self.state.paused_at is not None:
            self.state.started += self.clock() - self.state.paused_at
            self.state.paused_at = None

    def message_for_next_result(self) -> str | None:
        """The text to append to the next tool result (and advance the triggers)."""
        c, s = self.config, self.state
        steps, elapsed = s.steps, self.elapsed()
        if steps >= c.step_limit or elapsed >= c.time_limit_minutes * 60.0:
            template = c.limit_message
        else:
            due = False
            if steps >= s.next_step_notice:
                due = True
                s.next_step_notice = (steps // c.step_interval + 1) * c.step_interval
            interval_s = c.time_interval_minutes * 60.0
            if elapsed >= s.next_time_notice:
                due = True
                s.next_time_notice = (math.floor(elapsed / interval_s) + 1) * interval_s
            if not due:
                return None
            template = c.message
        s.notices.append(steps)
        return template.format(steps=steps, elapsed=format_elapsed(elapsed))

    def _on_tool_result(self, event: ToolResultEvent) -> ToolResultPatch | None:
        text = self.message_for_next_result()
        if text is None:
            return None
        return ToolResultPatch(content=[*event.content, TextContent(text)])

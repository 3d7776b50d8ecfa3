"""Compatibility: ``AgentHarness`` and its result types now live in ``harnessc.runtime.agent``."""

from __future__ import annotations

from harnessc.runtime.agent import (
    DEFAULT_SYSTEM_PROMPT,
    FINISH_REASONS,
    AgentHarness,
    HarnessBusyError,
    RunResult,
    RunStatus,
)

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "FINISH_REASONS",
    "AgentHarness",
    "HarnessBusyError",
    "RunResult",
    "RunStatus",
]

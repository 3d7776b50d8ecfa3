"""The agent loop: the public ``AgentHarness`` facade and the parts it is made of.

harness.py     the facade (today's API)       run_state.py  the persisted run record
loop.py        what the steps share            loop_compaction.py compaction in a run
driver.py      the loop's state machine        model_call.py one model call
tool_batch.py  prepare -> execute -> finalize  budget_gate.py budget checks
endings.py     pause / pull point / done / abort  hooks.py   hook runner + registry
bus.py         the event bus                   context.py    messages + estimates
settings.py    model, tools, resources         restore.py    rebuilding from a session
"""

from __future__ import annotations

from harnessc.runtime.agent.harness import DEFAULT_SYSTEM_PROMPT, AgentHarness
from harnessc.runtime.agent.results import (
    FINISH_REASONS,
    FinishReason,
    HarnessBusyError,
    RunResult,
    RunStatus,
)
from harnessc.runtime.agent.run_state import CallRecord, RunState

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "FINISH_REASONS",
    "AgentHarness",
    "CallRecord",
    "FinishReason",
    "HarnessBusyError",
    "RunResult",
    "RunState",
    "RunStatus",
]

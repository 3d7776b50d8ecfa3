"""The agent: the public ``AgentHarness`` facade, the run state, and one turn by its stages.

A prompt goes harness -> loop -> call_model -> run_tools (and back to loop):

harness.py      the facade (today's API): prompt, resume, settings, events, hooks
loop.py         the loop: a run's entries (begin, resume), ``drive``, which walks the
                stages until DONE or a pull point, the two deciding stages ``plan``
                (PLANNING: the budget, the turn opened, compaction, the model called and
                its plan committed) and ``reflect`` (REFLECTING: the turn closed, and what
                comes next), and how a run stops (pause, pull point, DONE, abort, crash)
call_model.py   call the model: context and request hooks, the streamed reply recorded
run_tools.py    EXECUTING: the tool batch (prepare in order, run side by side,
                finalize in order)

What the stages share: parts.py (``AgentParts``: bus, hooks, context, settings, budget,
providers, queues, the open run), run_state.py (the persisted run record, and what a
stage returns), budget_gate.py (budget checks), bus.py (events), hooks.py (hook runner
and registry), context.py (messages and their size), settings.py (model, tools,
resources), results.py (what a run returns), typed_result.py (a typed run's answer),
restore.py (the pause record written, and a session's run rebuilt), session_moves.py and
tree_moves.py (tree moves), subagents.py (hand-over).
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

"""Run control: the one layer every door uses to run the agent.

Start a run (``RunRequest``: a prompt, images, a session new, existing or in memory, a
model and budget for it), follow its events (replayable from any index, encoded as
``--json`` prints them), read where it stands (``Run``: status, ``Pause``, result,
``RunUsage``), answer its pause (``Answer``: tool results, approvals, budget raises),
abort it, and read its result (text, typed value, usage, finish reason, session), the
same over a plain run (``PlainRuns``: an ``AgentHarness`` in this process) and a
durable one (``harnessc.runtime.durable.control``: DBOS workflows on the agent's queue),
behind one protocol (``RunControl``).

errors.py    what the layer refuses           run.py       the Run record, its events
pauses.py    what a paused run waits for       answers.py   the answer to a pause
usage.py     tokens, cost, turns, tool calls   control.py   RunControl, RunRequest
agent.py     the agent's harnesses (AgentSource)  plain.py  runs in this process
overrides.py a caller's changes to the options sessions.py  the session store's queries

Importing the package imports none of them; each is loaded when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessc.runtime.runs.agent import AgentSource
    from harnessc.runtime.runs.answers import Answer, Decision
    from harnessc.runtime.runs.control import RunControl, RunRequest, Transcript
    from harnessc.runtime.runs.errors import (
        Conflict,
        Overloaded,
        RunError,
        SessionBusy,
        SetupError,
        UnknownRun,
        UnknownSession,
    )
    from harnessc.runtime.runs.overrides import Overrides
    from harnessc.runtime.runs.pauses import BudgetUse, Pause, PauseKind, PendingCall
    from harnessc.runtime.runs.plain import PlainRuns
    from harnessc.runtime.runs.run import Run
    from harnessc.runtime.runs.usage import RunUsage

_EXPORTS: dict[str, str] = {
    "AgentSource": "harnessc.runtime.runs.agent",
    "Answer": "harnessc.runtime.runs.answers",
    "BudgetUse": "harnessc.runtime.runs.pauses",
    "Conflict": "harnessc.runtime.runs.errors",
    "Decision": "harnessc.runtime.runs.answers",
    "Overloaded": "harnessc.runtime.runs.errors",
    "Overrides": "harnessc.runtime.runs.overrides",
    "Pause": "harnessc.runtime.runs.pauses",
    "PauseKind": "harnessc.runtime.runs.pauses",
    "PendingCall": "harnessc.runtime.runs.pauses",
    "PlainRuns": "harnessc.runtime.runs.plain",
    "Run": "harnessc.runtime.runs.run",
    "RunControl": "harnessc.runtime.runs.control",
    "RunError": "harnessc.runtime.runs.errors",
    "RunRequest": "harnessc.runtime.runs.control",
    "RunUsage": "harnessc.runtime.runs.usage",
    "SessionBusy": "harnessc.runtime.runs.errors",
    "SetupError": "harnessc.runtime.runs.errors",
    "Transcript": "harnessc.runtime.runs.control",
    "UnknownRun": "harnessc.runtime.runs.errors",
    "UnknownSession": "harnessc.runtime.runs.errors",
}

__all__ = [
    "AgentSource",
    "Answer",
    "BudgetUse",
    "Conflict",
    "Decision",
    "Overloaded",
    "Overrides",
    "Pause",
    "PauseKind",
    "PendingCall",
    "PlainRuns",
    "Run",
    "RunControl",
    "RunError",
    "RunRequest",
    "RunUsage",
    "SessionBusy",
    "SetupError",
    "Transcript",
    "UnknownRun",
    "UnknownSession",
]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)

"""What the run-control layer refuses, as exceptions every door translates into its own
protocol (an HTTP status, a JSON-RPC error, an exit code)."""

from __future__ import annotations

__all__ = [
    "Conflict",
    "Overloaded",
    "RunError",
    "SessionBusy",
    "SetupError",
    "UnknownRun",
    "UnknownSession",
]


class RunError(Exception):
    """A request the run-control layer refuses; the message says why, for the user."""


class UnknownRun(RunError, LookupError):
    """No run with that id (never started, or forgotten past ``kept_runs``)."""


class UnknownSession(RunError, LookupError):
    """No session with that id in the agent's store."""


class SessionBusy(RunError):
    """The session is open elsewhere (another run, another process)."""


class Conflict(RunError):
    """The request does not fit the run's state: it is not paused, the answers do not
    match what it waits for, or its session has a run going on."""


class Overloaded(RunError):
    """As many runs are working as allowed, or the runs are being drained."""


class SetupError(RunError):
    """The agent cannot run as asked: a usage or configuration problem (an unknown model,
    a missing API key, a rule naming no tool). The command line's ``UsageError``."""

"""Named points where a test may have the process killed (SIGKILL), to check that a
checkpoint or a rewind cut short there leaves the workspace whole.

``HARNESSC_CHECKPOINT_CRASH=<point>`` kills the process when it reaches ``<point>``:
``take:scanned`` (a checkpoint's objects written, not yet recorded), ``take:objects:N``
(the Nth new object of a checkpoint about to be written), ``rewind:journal`` (the
rewind's intent written, no file touched yet), ``rewind:op:N`` (before the Nth change
of a rewind) and ``rewind:files-done`` (every file changed, the rewind not yet recorded
in its session). Unset (always, outside tests), each point costs one comparison.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV", "crash_point", "reload"]

ENV = "HARNESSC_CHECKPOINT_CRASH"
_armed: list[str] = [os.environ.get(ENV, "")]


def reload() -> None:
    """Read the variable again (a test process that sets it after import)."""
    _armed[0] = os.environ.get(ENV, "")


def crash_point(name: str) -> None:
    if _armed[0] and _armed[0] == name:
        os.kill(os.getpid(), signal.SIGKILL)

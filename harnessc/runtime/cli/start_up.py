"""An agent process's start-up, as the garbage collector sees it.

Start-up (the harness and its options, the imports of the network stack) makes tens of
thousands of objects that live as long as the process. Without help the cyclic
collector walks them in every collection of the oldest generation, during start-up
and then through the whole run (10-20 % of a one-shot run's CPU). So while the process
starts the collector is paused, and when the run begins everything made so far is
frozen out of later collections (``gc.freeze``): the run's collections walk only what
the run makes.

Only a process that is the agent's own (its command line came from ``sys.argv``) does
this: a program calling the command line in-process keeps its collector running through
start-up, and its first run freezes what exists then, as any program's first run does
(``support.collector``).
"""

from __future__ import annotations

import gc
from types import TracebackType

from harnessc.runtime.support.collector import freeze_start_up

__all__ = ["StartUp"]


class StartUp:
    """``with StartUp(own_process):`` around start-up; ``begin_run()`` when the run
    begins. Leaving the block without a run (an error, a listing) turns the collector
    back on without freezing anything."""

    __slots__ = ("_paused",)

    def __init__(self, own_process: bool) -> None:
        self._paused = own_process

    def __enter__(self) -> StartUp:
        if self._paused:
            if gc.isenabled():
                gc.disable()
            else:  # the collector was off already: leave it so
                self._paused = False
        return self

    def begin_run(self) -> None:
        """Freeze what start-up made and turn the collector back on (once)."""
        if self._paused:
            self._paused = False
            freeze_start_up()
            gc.enable()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._paused:
            self._paused = False
            gc.enable()

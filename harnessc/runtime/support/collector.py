"""The process's cyclic garbage collector, as a process running agents needs it.

By the time a process's first run begins, it holds tens of thousands of objects that
live as long as it does: the imported modules, their classes and functions, the agent's
models, tools and skills. The collector walks every one of them in each collection of
its oldest generation, and a process running many sessions makes such collections
every second or so: at a thousand sessions each took 30-70 ms, a stall of the whole
event loop. ``settle()``, called as the first run of the process begins, freezes what
exists then (``gc.freeze``): later collections walk only what was made after it, the
runs' own objects. Frozen objects are still freed when their last reference goes;
only a reference cycle among them is never collected.

It happens once per process, and not at all when the collector is off, when the
program has frozen objects itself (its own policy stands), or when
``HARNESSC_GC_FREEZE=0`` is set.
"""

from __future__ import annotations

import gc
import os

__all__ = ["settle", "settled"]

ENV = "HARNESSC_GC_FREEZE"

_settled = False


def settle() -> None:
    """Freeze the objects that exist now out of later collections, the first time only."""
    global _settled
    if _settled:
        return
    _settled = True
    if os.environ.get(ENV, "").strip() == "0" or not gc.isenabled() or gc.get_freeze_count():
        return
    gc.freeze()


def settled() -> bool:
    """Whether ``settle()`` has run in this process (frozen or not)."""
    return _settled

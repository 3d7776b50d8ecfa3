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

A server in the agent's own process goes further once it listens (``settle_server``).
"""

from __future__ import annotations

import gc
import os

__all__ = ["SERVER_YOUNG_COLLECTION", "freeze_start_up", "settle", "settle_server"]

ENV = "HARNESSC_GC_FREEZE"

# A young collection of a listening server waits for this many new tracked objects
# (Python's default: 700). A served run makes thousands of objects that live as long
# as the run, nearly none of them in cycles (the collections of a served benchmark
# found a few per thousand runs): each young collection walked them and handed them
# on, 0.4-0.5 ms of a run's 6-7 ms of CPU.
SERVER_YOUNG_COLLECTION = 7000

_settled = False
# Whether this is the agent's own process, whose command line froze its start-up.
_own_start_up = False


def settle() -> None:
    """Freeze the objects that exist now out of later collections, the first time only."""
    global _settled
    if _settled:
        return
    _settled = True
    if _turned_off() or not gc.isenabled() or gc.get_freeze_count():
        return
    gc.freeze()


def freeze_start_up() -> None:
    """The agent's own process, as its run begins (``cli/start_up.StartUp``): freeze
    what start-up made. The first run's ``settle`` then has nothing left to do."""
    global _settled, _own_start_up
    gc.freeze()
    _settled = _own_start_up = True


def settle_server() -> bool:
    """Once a server listens: freeze what its start made (uvicorn, the app, the doors;
    the agent's own start is frozen already) out of later collections, and make young
    collections rarer (``SERVER_YOUNG_COLLECTION``). Only in the agent's own process,
    which froze its start-up (``cli/start_up.StartUp``); a program serving the agent
    in-process, one that turned the collector off, or ``HARNESSC_GC_FREEZE=0`` keeps
    the collector as it is. True when it settled it."""
    if _turned_off() or not gc.isenabled() or not _own_start_up:
        return False
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if 0 < young < SERVER_YOUNG_COLLECTION:
        gc.set_threshold(SERVER_YOUNG_COLLECTION, middle, old)
    return True


def _turned_off() -> bool:
    return os.environ.get(ENV, "").strip() == "0"

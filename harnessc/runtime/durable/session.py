"""The session of a durable run: the same entries however often the workflow replays.

A workflow that recovers runs again from its start; its steps return their recorded
outputs, so the harness appends the same entries in the same order. Entry ids come
from a generator seeded with the run id and timestamps from the run's clock (the time
the latest step recorded), so a replay makes the same entries with the same ids; the
storage skips every entry already stored, so the session ends up exactly as one
uninterrupted run leaves it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from harnessc.runtime.session.session import (
    ENTRY_TYPES,
    Session,
    SessionEntry,
    SessionHeader,
    SessionStorage,
    iso_now,
)

__all__ = ["DurableSession", "ReplayStorage", "RunClock"]


@dataclass(slots=True)
class RunClock:
    """The run's notion of now, the ISO time the latest checkpointed step recorded, and its
    id (the workflow's). It is the harness's ``RunInputs``: every reading of the wall-clock
    budget and the run id come from the workflow's record, so an execution that recovers
    the run reads what the first one read, and counts the time already spent."""

    now: str = ""
    run_id: str = ""
    seconds: float = 0.0  # ``now`` as seconds since the epoch
    tool_runs: int = 0  # tool executions of the run so far (each one's key in the run)

    def tick(self, recorded: str) -> None:
        self.now = recorded or self.now or iso_now()
        self.seconds = _epoch(self.now)

    def clock(self) -> float:
        return self.seconds

    def new_run_id(self) -> str:
        return self.run_id


def _epoch(iso: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class ReplayStorage:
    """Writes through to the session's store, skipping entries a previous execution
    of the same run already stored."""

    def __init__(self, inner: SessionStorage, stored_ids: set[str]) -> None:
        self.inner = inner
        self.stored_ids = stored_ids
        self.skipped = 0

    def append(self, line: dict[str, Any]) -> None:
        entry_id = line.get("id")
        if isinstance(entry_id, str) and entry_id in self.stored_ids:
            self.stored_ids.discard(entry_id)
            self.skipped += 1
            return
        self.inner.append(line)

    def sync(self) -> None:
        self.inner.sync()

    def close(self) -> None:
        self.inner.close()


class DurableSession(Session):
    """A Session whose new entries get reproducible ids and the run clock's timestamps."""

    def __init__(
        self,
        *,
        header: SessionHeader,
        entries: list[SessionEntry],
        storage: SessionStorage | None,
        path: str | None,
        seed: str,
        clock: RunClock,
    ) -> None:
        super().__init__(header=header, entries=entries, storage=storage, path=path)
        self._rng = random.Random(seed)
        self._clock = clock
        self._issued: set[str] = {e.id for e in entries}

    def new_entry_id(self) -> str:
        while True:
            candidate = f"{self._rng.getrandbits(32):08x}"
            if candidate not in self._issued:
                self._issued.add(candidate)
                return candidate

    def append(self, type: str, **fields: Any) -> SessionEntry:  # noqa: A002 - Session's name
        if type not in ENTRY_TYPES:
            raise ValueError(f"unknown entry type {type!r}")
        entry = SessionEntry(type, self.new_entry_id(), self.leaf_id, self._clock.now, fields)
        return self.append_entry(entry)

    def append_entry(self, entry: SessionEntry) -> SessionEntry:
        self._issued.add(entry.id)
        return super().append_entry(entry)

"""EventLog: the events of a harness kept append-only (and optionally as JSON lines).

Subscribe one to a harness (``harness.subscribe(log)``) to record every event; replay
them from any offset. ``events`` re-exports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from harnessc.runtime.core.events import Event

__all__ = ["EventLog"]


class EventLog:
    """An append-only list of events that can be replayed from any offset."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._events: list[Event] = []
        self._path = Path(path) if path is not None else None

    def __call__(self, event: Event) -> None:
        self.append(event)

    def append(self, event: Event) -> None:
        self._events.append(event)
        if self._path is not None:
            with self._path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    @property
    def events(self) -> list[Event]:
        return list(self._events)

    def replay(self, listener: Callable[[Event], Any], offset: int = 0) -> int:
        """Feed the events from ``offset`` on to ``listener``; returns how many."""
        count = 0
        for event in self._events[offset:]:
            listener(event)
            count += 1
        return count

    def to_dicts(self, offset: int = 0) -> list[dict[str, Any]]:
        return [e.to_dict() for e in self._events[offset:]]

"""A run's recorded events (the JSON objects its steps hold) made events again, so the
printers of plain runs show a durable run the same way, in any process."""

from __future__ import annotations

from typing import Any

from harnessc.runtime.core import events as _events
from harnessc.runtime.core.messages import message_from_dict

__all__ = ["event_from_dict"]


def _classes() -> dict[str, type[_events.Event]]:
    found: dict[str, type[_events.Event]] = {}
    for value in vars(_events).values():
        if isinstance(value, type) and issubclass(value, _events.Event):
            found[value.type] = value
    return found


_CLASSES: dict[str, type[_events.Event]] = {}
_MESSAGE_FIELDS = ("message", "result")  # a message in its JSON form


def event_from_dict(data: dict[str, Any]) -> _events.Event | None:
    """The event ``data`` is the JSON form of (``Event.to_dict``); None for a type this
    version does not know."""
    if not _CLASSES:
        _CLASSES.update(_classes())
    cls = _CLASSES.get(str(data.get("type")))
    if cls is None or cls is _events.Event:
        return None
    fields: dict[str, Any] = {}
    for name in cls.__struct_fields__:
        if name not in data:
            continue
        value = data[name]
        if name in _MESSAGE_FIELDS and isinstance(value, dict):
            try:
                value = message_from_dict(value)
            except (KeyError, TypeError, ValueError):
                value = None
        elif name == "event":  # a sub-agent's event, inside its SubagentEvent
            value = event_from_dict(value) if isinstance(value, dict) else None
        elif name in ("messages", "tool_results") and isinstance(value, list):
            value = [message_from_dict(v) for v in value if isinstance(v, dict)]
        fields[name] = value
    try:
        return cls(**fields)
    except TypeError:
        return None

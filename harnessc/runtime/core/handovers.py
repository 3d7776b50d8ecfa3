"""The progress of working hand-overs, followed from their sub-agents' events.

One ``HandoverTracker`` turns a sub-agent's own events (``SubagentEvent``) into its
hand-over's ``HandoverProgressEvent``: the parent sends those on its stream (what the
doors serve) and the terminal draws its status line from the same counting.
"""

from __future__ import annotations

from harnessc.runtime.core.events import HandoverProgressEvent, SubagentEvent
from harnessc.runtime.core.messages import AssistantMessage

__all__ = ["HandoverTracker"]


class HandoverTracker:
    """The hand-overs working now, by (agent path, hand-over call id)."""

    def __init__(self) -> None:
        self.working: dict[tuple[tuple[str, ...], str], HandoverProgressEvent] = {}

    def see(self, event: SubagentEvent) -> HandoverProgressEvent | None:
        """The hand-over's progress after its sub-agent's ``event`` (None: unchanged)."""
        inner = event.event
        if inner is None:
            return None
        key = (tuple(event.agent_path), event.tool_call_id)
        kind = inner.type
        now = self.working.get(key)
        if kind in ("agent_start", "agent_resume"):
            now = HandoverProgressEvent(agent_path=list(key[0]), tool_call_id=key[1])
            self.working[key] = now
            return now
        if now is None:
            return None
        if kind in ("agent_end", "agent_pause"):
            del self.working[key]
            return _next(now, status="ended" if kind == "agent_end" else "paused")
        if kind == "turn_start":
            now = _next(now, turn=now.turn + 1)
        elif kind == "message_end":
            message = getattr(inner, "message", None)
            usage = getattr(message, "usage", None)
            if not isinstance(message, AssistantMessage) or usage is None:
                return None
            now = _next(
                now,
                input_tokens=now.input_tokens + usage.input + usage.cache_read + usage.cache_write,
                output_tokens=now.output_tokens + usage.output,
            )
        else:
            return None
        self.working[key] = now
        return now


def _next(now: HandoverProgressEvent, **changes: object) -> HandoverProgressEvent:
    """A new event (its own time) of the same hand-over, with ``changes``."""
    fields = {
        "agent_path": now.agent_path,
        "tool_call_id": now.tool_call_id,
        "turn": now.turn,
        "input_tokens": now.input_tokens,
        "output_tokens": now.output_tokens,
        "status": now.status,
    }
    fields.update(changes)
    return HandoverProgressEvent(**fields)  # type: ignore[arg-type]

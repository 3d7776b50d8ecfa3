"""The model context: messages with their session entry ids and size estimates.

``append`` is the one way a message enters a run: into the session, then the context,
with ``message_start`` / ``message_end`` events.
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessc.runtime.agent.bus import EventBus
from harnessc.runtime.events import MessageEndEvent, MessageStartEvent
from harnessc.runtime.messages import Message, estimate_context_tokens, estimate_tokens
from harnessc.runtime.session.session import Session

__all__ = ["ContextWindow"]


class ContextWindow:
    __slots__ = ("session", "bus", "messages", "entry_ids", "estimates")

    def __init__(self, session: Session, bus: EventBus) -> None:
        self.session = session
        self.bus = bus
        self.messages: list[Message] = []
        self.entry_ids: list[str | None] = []
        self.estimates: list[int] = []  # chars/4 estimate of each message, kept incrementally

    def set(self, messages: Sequence[Message], entry_ids: Sequence[str | None]) -> None:
        self.messages = list(messages)
        self.entry_ids = list(entry_ids)
        self.estimates = [estimate_tokens(m) for m in self.messages]

    def reload(self) -> None:
        """Rebuild from the session (after compaction or a tree move)."""
        ctx = self.session.context()
        self.set(ctx.messages, ctx.entry_ids)

    def tokens(self, use_usage: bool = True) -> int:
        return estimate_context_tokens(self.messages, use_usage, self.estimates)

    async def append(
        self, message: Message, into: list[Message] | None = None, *, started: bool = False
    ) -> None:
        await self.bus.flush()
        if not started:
            await self.bus.emit(MessageStartEvent(message=message))
        entry = self.session.append_message(message)
        self.messages.append(message)
        self.entry_ids.append(entry.id)
        self.estimates.append(estimate_tokens(message))
        if into is not None:
            into.append(message)
        await self.bus.emit(MessageEndEvent(message=message, entry_id=entry.id))

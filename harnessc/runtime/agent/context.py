"""The model context: messages with their session entry ids and size estimates.

``append`` is the one way a message enters a run: into the session, then the context,
with ``message_start`` / ``message_end`` events.
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessc.runtime.agent.bus import EventBus
from harnessc.runtime.core.events import MessageEndEvent, MessageStartEvent
from harnessc.runtime.core.message_size import estimate_tokens, reported_tokens
from harnessc.runtime.core.messages import AssistantMessage, Message
from harnessc.runtime.session.session import Session

__all__ = ["ContextWindow"]


class ContextWindow:
    __slots__ = (
        "session",
        "bus",
        "messages",
        "entry_ids",
        "estimates",
        "_usage_at",
        "_total",
        "_after",
    )

    def __init__(self, session: Session, bus: EventBus) -> None:
        self.session = session
        self.bus = bus
        self.messages: list[Message] = []
        self.entry_ids: list[str | None] = []
        # For tokens(): the last reply reporting usage, and the estimates summed (in all,
        # and after that reply), kept as messages are appended: no message measured twice.
        self._usage_at = -1
        self._total = 0
        self._after = 0

    def set(self, messages: Sequence[Message], entry_ids: Sequence[str | None]) -> None:
        self.messages = []
        self.entry_ids = []
        self._usage_at, self._total, self._after = -1, 0, 0
        for message, entry_id in zip(messages, entry_ids, strict=True):
            self.track(message, entry_id)

    def track(self, message: Message, entry_id: str | None) -> None:
        """Count a message that is already in the session (set and append use it)."""
        estimate = estimate_tokens(message)
        self.messages.append(message)
        self.entry_ids.append(entry_id)
        self._total += estimate
        if (
            isinstance(message, AssistantMessage)
            and message.stop_reason not in ("error", "aborted")
            and reported_tokens(message) > 0
        ):
            self._usage_at, self._after = len(self.messages) - 1, 0
        else:
            self._after += estimate

    def reload(self) -> None:
        """Rebuild from the session (after compaction or a tree move)."""
        ctx = self.session.context()
        self.set(ctx.messages, ctx.entry_ids)

    def tokens(self, use_usage: bool = True) -> int:
        """The last good reply's reported usage plus estimates after it (else all estimates);
        the same rule as ``message_size.estimate_context_tokens``, in constant time."""
        if use_usage and self._usage_at >= 0:
            reply = self.messages[self._usage_at]
            assert isinstance(reply, AssistantMessage)
            return reported_tokens(reply) + self._after
        return self._total

    async def append(
        self, message: Message, into: list[Message] | None = None, *, started: bool = False
    ) -> None:
        await self.bus.flush()
        if not started:
            await self.bus.emit(MessageStartEvent(message=message))
        entry = self.session.append_message(message)
        self.track(message, entry.id)
        if into is not None:
            into.append(message)
        await self.bus.emit(MessageEndEvent(message=message, entry_id=entry.id))

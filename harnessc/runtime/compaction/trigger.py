"""When to compact: the settings, the errors, and the threshold test.

Compact when the context passes ``context_window - reserve_tokens`` (tokens from the
last reply's usage unless a compaction came after it, else a chars/4 estimate).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from msgspec import Struct

from harnessc.runtime.core.message_size import estimate_context_tokens
from harnessc.runtime.session.session import Session

if TYPE_CHECKING:
    from harnessc.runtime.core.events import Event
    from harnessc.runtime.core.messages import Message
    from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model
    from harnessc.runtime.core.signal import AbortSignal
    from harnessc.runtime.providers.base import Provider

__all__ = [
    "CompactionError",
    "CompactionHost",
    "CompactionSettings",
    "NothingToCompactError",
    "compacted_since_reply",
    "needs_compaction",
    "should_compact",
]


class CompactionError(Exception):
    """The summary could not be produced (provider error, empty reply, ...)."""


class NothingToCompactError(CompactionError):
    """The context is already small enough: nothing before the cut point."""


class CompactionSettings(Struct):
    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


class CompactionHost(Protocol):
    """What compaction reads and calls of the agent it compacts (``needs_compaction``,
    ``compact_harness``): the agent's parts satisfy it, and so does the harness."""

    @property
    def session(self) -> Session: ...

    @property
    def compaction_settings(self) -> CompactionSettings | None: ...

    @property
    def model(self) -> Model: ...

    @property
    def stream_options(self) -> AgentHarnessStreamOptions: ...

    @property
    def messages(self) -> list[Message]: ...

    @property
    def is_busy(self) -> bool: ...

    @property
    def signal(self) -> AbortSignal | None:
        """The abort signal of the running run (read while busy)."""

    def context_tokens(self, use_usage: bool = True) -> int: ...

    def provider_for(self, model: Model) -> Provider: ...

    def has_handlers(self, moment: str) -> bool: ...

    async def call_hooks(
        self, moment: str, event: Any, tool_name: str | None = None
    ) -> list[Any]: ...

    def reload_messages(self) -> None: ...

    async def emit(self, event: Event) -> list[Any]: ...


# -- token estimates ------------------------------------------------------------


def should_compact(
    context_tokens: int, context_window: int, settings: CompactionSettings | None = None
) -> bool:
    """True when compaction is enabled and the context passed the window minus the reserve."""
    settings = settings or CompactionSettings()
    return settings.enabled and context_tokens > context_window - settings.reserve_tokens


def needs_compaction(harness: CompactionHost) -> bool:
    """True when the harness's context passed ``context_window - reserve_tokens`` and
    there is something to compact.

    The session summary keeps the last ``keep_recent_tokens`` (by the per-message
    estimate) and summarises what comes before: when the whole context's estimate is
    below that, it would find nothing, so it is not started (a window smaller than the
    reserve, like 8,192 against 16,384, passes the threshold at every turn). An
    extension's ``compactor`` decides for itself and is always asked.
    """
    settings = getattr(harness, "compaction_settings", None) or CompactionSettings()
    if not settings.enabled:
        return False
    use_usage = not compacted_since_reply(harness.session)
    counter = getattr(harness, "context_tokens", None)
    if counter is not None:
        tokens = counter(use_usage)
    else:
        tokens = estimate_context_tokens(harness.messages, use_usage)
    if not should_compact(tokens, harness.model.context_window, settings):
        return False
    if getattr(harness, "compactor", None) is not None:
        return True
    if counter is not None:
        estimate = counter(False)
    else:
        estimate = estimate_context_tokens(harness.messages, False)
    return estimate >= settings.keep_recent_tokens


def compacted_since_reply(session: Session) -> bool:
    """True when a compaction came after the last reply (its usage predates the cut).

    Walks back from the leaf and stops at the first reply, so it costs a few steps.
    """
    entry_id = session.leaf_id
    seen: set[str] = set()
    while entry_id is not None and entry_id not in seen:
        seen.add(entry_id)
        entry = session.get_entry(entry_id)
        if entry is None:
            return False
        if entry.type == "compaction":
            return True
        if entry.role == "assistant":
            return False
        entry_id = entry.parent_id
    return False

"""Appending a compaction to the session, and the harness's compaction step
(``session_before_compact`` hooks, the summary, ``session_compact``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessc.runtime.compaction.cut_point import (
    CompactionPreparation,
    prepare_compaction,
)
from harnessc.runtime.compaction.summarize import CompactionResult, generate_summary
from harnessc.runtime.compaction.trigger import (
    CompactionError,
    CompactionHost,
    CompactionSettings,
    NothingToCompactError,
)
from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.providers.base import Provider
from harnessc.runtime.session.session import Session

__all__ = ["apply_compaction", "compact", "compact_harness"]


def apply_compaction(
    session: Session,
    result: CompactionResult | Mapping[str, Any],
    preparation: CompactionPreparation | None = None,
    *,
    from_hook: bool = False,
) -> CompactionResult:
    """Append the compaction entry of ``result`` (a CompactionResult, or a hook's dict
    with ``summary`` and optionally ``firstKeptEntryId``/``first_kept_entry_id``,
    ``tokensBefore``/``tokens_before``, ``details``; missing fields come from
    ``preparation``)."""
    if isinstance(result, Mapping):
        summary = result.get("summary")
        if not isinstance(summary, str) or not summary:
            raise CompactionError("a supplied compaction needs a non-empty 'summary'")
        first_kept = result.get("firstKeptEntryId", result.get("first_kept_entry_id"))
        tokens = result.get("tokensBefore", result.get("tokens_before"))
        if first_kept is None and preparation is not None:
            first_kept = preparation.first_kept_entry_id
        if tokens is None:
            tokens = preparation.tokens_before if preparation is not None else 0
        if not isinstance(first_kept, str):
            raise CompactionError("a supplied compaction needs 'firstKeptEntryId'")
        details = result.get("details")
        result = CompactionResult(
            summary=summary,
            first_kept_entry_id=first_kept,
            tokens_before=int(tokens),
            details=details if isinstance(details, dict) else None,
            from_hook=from_hook,
        )
    else:
        result.from_hook = result.from_hook or from_hook
    if session.get_entry(result.first_kept_entry_id) is None:
        raise CompactionError(
            f"first kept entry {result.first_kept_entry_id!r} is not in the session"
        )
    result.entry = session.append_compaction(
        result.summary,
        result.first_kept_entry_id,
        result.tokens_before,
        result.details,
        from_hook=result.from_hook,
    )
    return result


async def compact(
    session: Session,
    model: Model,
    provider: Provider,
    settings: CompactionSettings | None = None,
    *,
    custom_instructions: str | None = None,
    preparation: CompactionPreparation | None = None,
    signal: AbortSignal | None = None,
    stream_options: AgentHarnessStreamOptions | None = None,
) -> CompactionResult:
    """Summarise the older part of the session's branch and append the compaction entry.

    Raises NothingToCompactError when there is nothing to cut, CompactionError when
    the summary request fails (the session is then unchanged).
    """
    preparation = preparation or prepare_compaction(session, settings)
    if preparation is None:
        raise NothingToCompactError("nothing to compact")
    result = await generate_summary(
        preparation,
        model,
        provider,
        custom_instructions=custom_instructions,
        signal=signal,
        stream_options=stream_options,
        session_id=session.id,
    )
    return apply_compaction(session, result, preparation)


def _supplied_compaction(value: Any) -> CompactionResult | Mapping[str, Any]:
    if isinstance(value, CompactionResult | Mapping):
        return value
    if hasattr(value, "summary"):  # a CompactResult-like object
        return {
            "summary": value.summary,
            "firstKeptEntryId": getattr(value, "first_kept_entry_id", None),
            "tokensBefore": getattr(value, "tokens_before", None),
            "details": getattr(value, "details", None),
        }
    raise CompactionError(f"a hook supplied a compaction of type {type(value).__name__}")


async def compact_harness(
    harness: CompactionHost, *, custom_instructions: str | None = None, reason: str = "manual"
) -> CompactionResult | None:
    """``AgentHarness.compact``: prepare, let ``session_before_compact`` hooks cancel or
    supply the compaction, else summarise with the harness's model; then append the
    entry, rebuild the harness context and emit ``session_compact``.

    ``reason`` is "manual", "threshold" or "overflow"; automatic ones do nothing when
    ``harness.compaction_settings.enabled`` is False. Returns None when there is
    nothing to compact or a hook cancelled.
    """
    from harnessc.runtime.core.events import SessionCompactEvent
    from harnessc.runtime.core.hooks import SessionBeforeCompactEvent

    settings = getattr(harness, "compaction_settings", None) or CompactionSettings()
    if reason != "manual" and not settings.enabled:
        return None
    session: Session = harness.session
    branch = session.branch()
    preparation = prepare_compaction(branch, settings)
    if preparation is None:
        return None
    supplied: Any = None
    if harness.has_handlers("session_before_compact"):
        event = SessionBeforeCompactEvent(
            preparation=preparation,
            branch_entries=branch,
            custom_instructions=custom_instructions,
        )
        for result in await harness.call_hooks("session_before_compact", event):
            if isinstance(result, Mapping):
                cancel, compaction = result.get("cancel"), result.get("compaction")
            else:
                cancel = getattr(result, "cancel", False)
                compaction = getattr(result, "compaction", None)
            if cancel:
                return None
            if compaction is not None:
                supplied = compaction
    if supplied is not None:
        outcome = apply_compaction(
            session, _supplied_compaction(supplied), preparation, from_hook=True
        )
    else:
        # Inside a run the summary request is the run's: an abort of the run ends it.
        signal = harness.signal if harness.is_busy else None
        if signal is None:
            signal = AbortSignal()
        outcome = await compact(
            session,
            harness.model,
            harness.provider_for(harness.model),
            settings,
            custom_instructions=custom_instructions,
            preparation=preparation,
            signal=signal,
            stream_options=harness.stream_options,
        )
    session.sync()
    harness.reload_messages()
    assert outcome.entry is not None
    await harness.emit(
        SessionCompactEvent(
            compaction_entry=outcome.entry.to_dict(),
            from_hook=outcome.from_hook,
            messages=harness.messages,
        )
    )
    return outcome

"""Compaction inside the loop: before a model call once the context passes the
threshold, and after a context overflow (then the turn is retried once)."""

from __future__ import annotations

from harnessc.runtime.agent.parts import Parts

__all__ = ["auto_compact", "recover_overflow"]


async def auto_compact(parts: Parts) -> None:
    """Compact before a model call once the context passes the compaction threshold.

    With a compaction pipeline installed, its own trigger (on the ``context`` moment)
    is the only one.
    """
    if parts.host.compaction_pipeline is not None:
        return
    from harnessc.runtime.session.compaction import needs_compaction

    if needs_compaction(parts.host):
        try:
            await parts.host.compact(reason="threshold")
        except Exception as exc:
            await parts.bus.error("compaction", exc)


async def recover_overflow(parts: Parts) -> bool:
    """Compact after a context overflow (the installed pipeline, else the session
    summary); True when the turn should be retried."""
    pipeline = parts.host.compaction_pipeline
    try:
        if pipeline is not None:
            return bool(await pipeline.recover(parts.host))
        outcome = await parts.host.compact(reason="overflow")
    except Exception as exc:
        await parts.bus.error("compaction", exc)
        return False
    return bool(outcome)

"""Closing a harness the command line built: its watcher, session and HTTP clients."""

from __future__ import annotations

from harnessc.runtime.agent import AgentHarness

__all__ = ["close_harness"]


async def close_harness(harness: AgentHarness) -> None:
    """Close the harness (watcher, session, its own provider pool), then a provider the
    options supplied (the harness does not own that one). Errors are swallowed: this
    runs while the agent exits."""
    try:
        await harness.close()
    except Exception:
        pass
    aclose = getattr(harness.options.provider, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:
            pass

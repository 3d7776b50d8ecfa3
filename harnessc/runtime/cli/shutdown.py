"""Closing a harness the command line built: its watcher, session and HTTP clients."""

from __future__ import annotations

import sys

from harnessc.runtime.harness import AgentHarness

__all__ = ["close_harness"]


async def close_harness(harness: AgentHarness) -> None:
    """Stop the watcher, close the session and the HTTP clients of the providers used."""
    try:
        await harness.close()
    except Exception:
        pass
    if "harnessc.runtime.providers.http" not in sys.modules:
        return
    from harnessc.runtime.providers import get_provider

    seen: set[int] = set()
    for model in harness.models.values():
        try:
            provider = harness.options.provider or get_provider(model.api)
        except Exception:
            continue
        aclose = getattr(provider, "aclose", None)
        if aclose is not None and id(provider) not in seen:
            seen.add(id(provider))
            try:
                await aclose()
            except Exception:
                pass

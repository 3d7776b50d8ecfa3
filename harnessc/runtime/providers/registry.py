"""Lazy factories of the HTTP wire-API providers, by api name.

Each factory imports its module on first call, so start-up does not pay for
providers a run never uses. ``providers.get_provider`` may use these.
"""

from __future__ import annotations

from collections.abc import Callable

from harnessc.runtime import catalog
from harnessc.runtime.providers.base import Provider

__all__ = ["PROVIDER_FACTORIES"]


PROVIDER_FACTORIES: dict[str, Callable[[], Provider]] = {
    entry.api: entry.build for entry in catalog.PROVIDERS
}

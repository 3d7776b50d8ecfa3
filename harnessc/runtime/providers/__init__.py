"""Providers: one module per wire API, resolved lazily by api name.

A harness owns a ``ProviderPool`` (``providers.pool``) that makes each provider once
and closes it with the harness. ``register_provider`` adds or replaces the factory
of an api for every pool; ``get_provider`` is the process-wide pool of callers that
have no harness (it shares one HttpClientPool, per event loop and origin).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from harnessc.runtime.providers.base import (
    AssistantMessageEvent,
    Context,
    Provider,
    ProviderRequest,
    ProviderRetry,
    ToolSpec,
)

if TYPE_CHECKING:
    from harnessc.runtime.providers.clients import HttpClientPool

__all__ = [
    "AssistantMessageEvent",
    "Context",
    "Provider",
    "ProviderRequest",
    "ProviderRetry",
    "ToolSpec",
    "get_provider",
    "register_provider",
    "registered_factories",
    "shared_http_clients",
]

_default_pool = None


def register_provider(api: str, factory: Callable[[], Provider]) -> None:
    """Serve ``api`` with providers made by ``factory`` (replaces a built-in one) in
    every pool: each makes its provider anew on its next ``get``."""
    registered_factories()[api] = factory


def registered_factories() -> dict[str, Callable[[], Provider]]:
    """The live table of registered factories (pools read it at every ``get``)."""
    from harnessc.runtime.providers.registry import REGISTERED

    return REGISTERED


def get_provider(api: str) -> Provider:
    """The process-wide provider for a wire API; raises KeyError for unknown apis.

    A harness uses its own pool instead; closing it never closes these."""
    global _default_pool
    if _default_pool is None:
        from harnessc.runtime.providers.pool import ProviderPool

        _default_pool = ProviderPool(shared_http_clients())
    return _default_pool.get(api)


def shared_http_clients() -> HttpClientPool:
    """The HttpClientPool the harnesses of a process share by default (a generated
    module's ``build_options`` gives it unless told otherwise): one set of keep-alive
    connections per event loop and origin, its cap on requests in flight adapting to
    the loop (``providers.clients``). Imports the HTTP stack's modules on first call."""
    from harnessc.runtime.providers.clients import shared_http_clients as shared

    return shared()

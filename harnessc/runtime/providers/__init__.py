"""Providers: one module per wire API, resolved lazily by api name."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from harnessc.runtime import catalog
from harnessc.runtime.providers.base import (
    AssistantMessageEvent,
    Context,
    Provider,
    ProviderRequest,
    ProviderRetry,
    ToolSpec,
)

__all__ = [
    "AssistantMessageEvent",
    "Context",
    "Provider",
    "ProviderRequest",
    "ProviderRetry",
    "ToolSpec",
    "get_provider",
    "register_provider",
]

# api name -> "module:Class"; imported on first use so start-up stays cheap.
_BUILTIN: dict[str, str] = {entry.api: entry.provider for entry in catalog.PROVIDERS}
_factories: dict[str, Callable[[], Provider]] = {}
_instances: dict[str, Provider] = {}


def register_provider(api: str, factory: Callable[[], Provider]) -> None:
    """Serve ``api`` with providers made by ``factory`` (replaces a built-in one)."""
    _factories[api] = factory
    _instances.pop(api, None)


def get_provider(api: str) -> Provider:
    """The shared provider instance for a wire API; raises KeyError for unknown apis."""
    provider = _instances.get(api)
    if provider is not None:
        return provider
    factory = _factories.get(api)
    if factory is None:
        target = _BUILTIN.get(api)
        if target is None:
            known = ", ".join(sorted(set(_BUILTIN) | set(_factories)))
            raise KeyError(f"no provider for api {api!r}; known apis: {known}")
        module_name, _, attr = target.partition(":")
        factory = getattr(importlib.import_module(module_name), attr)
    provider = factory()
    _instances[api] = provider
    return provider

"""The built-in wire-API providers, by api name: the one table pools read.

Each factory imports its module on first call, so start-up does not pay for
providers a run never uses; it gets the HttpClientPool to send through (None: the
provider owns a private one).
"""

from __future__ import annotations

from collections.abc import Callable

from harnessc.runtime.core import catalog
from harnessc.runtime.providers.base import Provider
from harnessc.runtime.providers.transport import HttpClientPool

__all__ = ["PROVIDER_FACTORIES", "REGISTERED", "BuiltinFactory"]

BuiltinFactory = Callable[[HttpClientPool | None], Provider]

# Factories ``providers.register_provider`` added (they win over the built-in ones).
REGISTERED: dict[str, Callable[[], Provider]] = {}


def _factory(entry: catalog.ProviderEntry) -> BuiltinFactory:
    """A factory importing ``entry``'s class on first call, so start-up stays cheap."""

    def build(clients: HttpClientPool | None = None) -> Provider:
        cls: Callable[..., Provider] = entry.load()
        return cls(clients)

    return build


PROVIDER_FACTORIES: dict[str, BuiltinFactory] = {
    entry.api: _factory(entry) for entry in catalog.PROVIDERS
}

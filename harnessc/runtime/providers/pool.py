"""Providers owned by one harness, and the HTTP clients they may share.

A ``ProviderPool`` makes each wire API's provider once, on first use, from the
factories every pool reads (the built-in ones and those added with
``providers.register_provider``), and closes what it made in ``aclose``. Closing
one pool never closes another's clients, so many harnesses run side by side in one
process and on any event loop.

The built-in HTTP providers of a pool send through one ``HttpClientPool``: its own
by default (closed with the pool), or one given to many pools so that they share one
set of keep-alive connections per base URL and one cap on concurrent requests per
origin (``HttpClientPool(max_concurrent=64)``; its owner closes it).

    clients = HttpClientPool(max_concurrent=100)
    pools = [ProviderPool(clients) for _ in range(1000)]   # one per harness
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from harnessc.runtime.providers import registry
from harnessc.runtime.providers.base import Provider
from harnessc.runtime.providers.clients import shared_http_clients
from harnessc.runtime.providers.registry import PROVIDER_FACTORIES
from harnessc.runtime.providers.transport import HttpClientPool

__all__ = ["ProviderFactory", "ProviderPool", "close_pool_of", "pool_of", "shared_http_clients"]

# What ``register_provider`` takes: makes a provider (which owns its HTTP clients).
ProviderFactory = Callable[[], Provider]


class ProviderPool:
    """One provider per wire API, made on first use; ``aclose`` closes them."""

    __slots__ = ("_clients", "_owns_clients", "_made", "_factories", "__weakref__")

    def __init__(
        self,
        clients: HttpClientPool | None = None,
        factories: dict[str, ProviderFactory] | None = None,
    ) -> None:
        self._owns_clients = clients is None
        self._clients = clients
        self._made: dict[str, tuple[ProviderFactory | None, Provider]] = {}
        # Registered factories, read at each ``get`` (a later registration wins).
        self._factories = factories if factories is not None else _registered()

    @property
    def clients(self) -> HttpClientPool:
        """The HTTP clients the pool's built-in providers send through."""
        if self._clients is None:
            self._clients = HttpClientPool()
        return self._clients

    def known_apis(self) -> list[str]:
        return sorted(set(PROVIDER_FACTORIES) | set(self._factories))

    def get(self, api: str) -> Provider:
        """The provider for ``api``; KeyError naming the known apis for another."""
        factory = self._factories.get(api)
        made = self._made.get(api)
        if made is not None and made[0] is factory:
            return made[1]
        if factory is not None:
            provider = factory()
        else:
            builtin = PROVIDER_FACTORIES.get(api)
            if builtin is None:
                known = ", ".join(self.known_apis())
                raise KeyError(f"no provider for api {api!r}; known apis: {known}")
            provider = builtin(self.clients)
        self._made[api] = (factory, provider)
        return provider

    async def aclose(self) -> None:
        """Close the providers made here and, if the pool owns them, its HTTP clients."""
        made, self._made = list(self._made.values()), {}
        for _, provider in made:
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:  # closing one provider must not keep others open
                    pass
        if self._owns_clients and self._clients is not None:
            await self._clients.aclose()


def _registered() -> dict[str, ProviderFactory]:
    return registry.REGISTERED  # read at every get: register_provider may add to it


# One pool per owner (a harness), without touching the owner's attributes.
_pools: weakref.WeakKeyDictionary[object, ProviderPool] = weakref.WeakKeyDictionary()


def pool_of(owner: object, clients: HttpClientPool | None = None) -> ProviderPool:
    """The ProviderPool of ``owner``, made on first call (with ``clients`` if given)."""
    pool = _pools.get(owner)
    if pool is None:
        pool = _pools[owner] = ProviderPool(clients)
    return pool


async def close_pool_of(owner: object) -> None:
    """Close ``owner``'s pool, if it has one (a later ``pool_of`` makes a new one)."""
    pool = _pools.pop(owner, None)
    if pool is not None:
        await pool.aclose()

"""Timeout scopes that end at a moment on the running event loop's clock.

A moment is a ``loop.time()`` value (a deadline) or None (no limit). ``until`` is
``asyncio.timeout_at`` for a moment and one shared no-op scope for None, so code that
waits under an optional deadline needs no branch and no object per wait; both scopes
answer ``expired()``.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["passed", "until"]


def until(moment: float | None) -> Any:
    """A timeout scope ending at ``moment`` (``asyncio.timeout_at``); a shared no-op one
    for None. Both have ``expired()``."""
    return _UNBOUNDED if moment is None else asyncio.timeout_at(moment)


def passed(moment: float | None) -> bool:
    """True once ``moment`` has come (never for None)."""
    return moment is not None and asyncio.get_running_loop().time() >= moment


class _Unbounded:
    """``asyncio.timeout(None)`` without an object per call."""

    __slots__ = ()

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None

    def expired(self) -> bool:
        return False


_UNBOUNDED = _Unbounded()

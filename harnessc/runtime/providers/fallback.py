"""Model fallback: which model a request goes to after the first one failed.

``models`` names, in order, the models tried when the chosen one (the spec's ``model``,
``--model`` or ``/model``) fails after its retries with one of the ``on`` kinds. A model
that failed is skipped for ``cooldown_s`` seconds; once its cooldown has passed the
chosen model is tried first again. The state is shared by every harness built with one
``ModelFallback`` (a model rate-limited for one session is for the others too).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from msgspec import Struct

__all__ = ["DEFAULT_FALLBACK_ON", "NEVER_FALLBACK_ON", "ModelFallback"]

DEFAULT_FALLBACK_ON = ("rate_limit", "overloaded", "server_error", "timeout", "connection")
# A request that fails with these would fail the same way on any model (or the budget
# is spent): they never move a run to another model.
NEVER_FALLBACK_ON = frozenset({"context_overflow", "auth", "bad_request"})


class ModelFallback(Struct):
    models: Sequence[str]
    on: Sequence[str] = DEFAULT_FALLBACK_ON
    cooldown_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    # model key -> the clock's time its cooldown ends
    cooling_until: dict[str, float] = {}

    def applies_to(self, kind: str) -> bool:
        """True when a failure of ``kind`` moves the request to the next model."""
        return bool(kind) and kind not in NEVER_FALLBACK_ON and kind in self.on

    def cooling(self, key: str) -> bool:
        until = self.cooling_until.get(key)
        if until is None:
            return False
        if self.clock() >= until:
            del self.cooling_until[key]
            return False
        return True

    def failed(self, key: str) -> None:
        """``key`` failed: keep it out for the cooldown."""
        if self.cooldown_s > 0:
            self.cooling_until[key] = self.clock() + self.cooldown_s

    def chain(self, chosen: str) -> list[str]:
        """``chosen``, then the fallback models (each once)."""
        out = [chosen]
        out.extend(k for k in self.models if k not in out)
        return out

    def pick(self, chosen: str) -> str:
        """The first model of the chain not cooling down (``chosen`` if all are)."""
        return next((k for k in self.chain(chosen) if not self.cooling(k)), chosen)

    def after(self, chosen: str, failed: str) -> str | None:
        """The model to try after ``failed`` (None: the chain is used up)."""
        chain = self.chain(chosen)
        start = chain.index(failed) + 1 if failed in chain else len(chain)
        return next((k for k in chain[start:] if not self.cooling(k)), None)

"""The "did you mean" of every message about a mistyped name (spec keys, hook moments,
Claude Code events, model ids): the closest known name, or nothing."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean"]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``"; did you mean 'x'?"`` suffix for the closest choice, or ``""``."""
    options = sorted({c for c in choices if isinstance(c, str)})
    longer = [c for c in options if len(word) >= 4 and c.startswith(word)]
    if longer:
        return f"; did you mean {min(longer, key=len)!r}?"
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in options}
        close = [lowered[word.lower()]] if word.lower() in lowered else []
    return f"; did you mean {close[0]!r}?" if close else ""

"""Build-time problems as values: ``path:line:col: error|warning: message``."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Diagnostic", "Severity", "did_you_mean", "format_diagnostics", "has_errors"]

Severity = Literal["error", "warning"]


@dataclass(slots=True, frozen=True)
class Diagnostic:
    """One problem of a spec file; ``line`` and ``col`` count from 1."""

    path: str
    line: int
    col: int
    severity: Severity
    message: str

    def format(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.severity}: {self.message}"

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.line, self.col, 0 if self.severity == "error" else 1, self.message)


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


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def format_diagnostics(diagnostics: Iterable[Diagnostic]) -> str:
    """Sorted, one per line, each ending in a newline."""
    return "".join(d.format() + "\n" for d in sorted(diagnostics, key=Diagnostic.sort_key))

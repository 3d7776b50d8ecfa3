"""Build-time problems as values: ``path:line:col: error|warning: message``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from harnessc.runtime.support.suggest import did_you_mean

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


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def format_diagnostics(diagnostics: Iterable[Diagnostic]) -> str:
    """Sorted, one per line, each ending in a newline."""
    return "".join(d.format() + "\n" for d in sorted(diagnostics, key=Diagnostic.sort_key))

"""A case's expectations against its outcome: the first mismatch, with a diff."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessc.agenttests.cases import Expect

__all__ = ["Mismatch", "first_mismatch", "subset"]


@dataclass(slots=True, frozen=True)
class Mismatch:
    """What did not hold (one line) and, where it helps, a unified diff."""

    message: str
    diff: str = ""


def subset(expected: Any, actual: Any) -> bool:
    """``expected`` is contained in ``actual``: mappings may hold more keys, lists match
    item by item (same length), other values are equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and subset(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual)


def _diff(expected: Any, actual: Any, label: str) -> str:
    def lines(value: Any) -> list[str]:
        text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True)
        return text.splitlines(keepends=False)

    return "\n".join(
        difflib.unified_diff(
            lines(expected), lines(actual), f"expected {label}", f"actual {label}", lineterm=""
        )
    )


def _in_order(wanted: list[str], called: list[str]) -> bool:
    position = iter(called)
    return all(any(name == c for c in position) for name in wanted)


def first_mismatch(expect: Expect, outcome: dict[str, Any], workspace: Path) -> Mismatch | None:
    """The first expectation that does not hold, or None."""
    if outcome.get("error"):
        return Mismatch(str(outcome["error"]))
    if outcome.get("stale"):
        return Mismatch(
            f"stale cassette: {outcome['stale']}; if the change is intended, "
            "re-record with `harnessc test --record`"
        )
    if outcome.get("unanswered"):
        return Mismatch(str(outcome["unanswered"]))
    if outcome.get("status") != expect.status:
        reason = outcome.get("reason") or ""
        return Mismatch(
            f"the run ended {outcome.get('status')}"
            + (f" ({reason})" if reason else "")
            + f", expected {expect.status}"
        )
    if expect.output is not None and not subset(expect.output, outcome.get("output")):
        return Mismatch(
            "the output does not match", _diff(expect.output, outcome.get("output"), "output")
        )
    called: list[str] = list(outcome.get("tools_called") or [])
    if expect.tools_called is not None and not _in_order(expect.tools_called, called):
        return Mismatch(
            f"tools called {called}, expected {expect.tools_called} in this order",
            _diff(expect.tools_called, called, "tools"),
        )
    for name in expect.tools_not_called or []:
        if name in called:
            return Mismatch(f"{name} was called (tools called: {called})")
    text = str(outcome.get("final_text") or "")
    if expect.final_text_matches is not None and not re.search(expect.final_text_matches, text):
        return Mismatch(
            f"the final text does not match /{expect.final_text_matches}/",
            _diff(expect.final_text_matches, text, "text"),
        )
    turns = int(outcome.get("turns") or 0)
    if expect.max_turns is not None and turns > expect.max_turns:
        return Mismatch(f"the run took {turns} turns, at most {expect.max_turns} expected")
    root = workspace.resolve()
    for rel, content in (expect.files or {}).items():
        path = workspace / rel
        if not path.resolve().is_relative_to(root):  # a link the run made: never read it
            return Mismatch(f"{rel} leads outside the workspace")
        if content is None:
            if path.exists():
                return Mismatch(f"{rel} exists, expected it not to")
            continue
        try:
            actual = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return Mismatch(f"{rel} is missing from the workspace")
        if actual != content:
            return Mismatch(f"{rel} differs", _diff(content, actual, rel))
    return None

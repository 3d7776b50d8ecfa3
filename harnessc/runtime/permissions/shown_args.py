"""What an approval answers: one call id and the exact arguments that were shown.

A call held for approval keeps the arguments its question showed (the input after every
``tool_call`` hook, what would run); an approval given at resume runs the call only when
the input the hooks give then is the same. Arguments changed after the question (by a
hook, a new process, anything) are a new question, never a silent run.

Two calls are the same when their tool and arguments are equal as canonical JSON (keys
sorted): key order does not matter, any change of a value does. A door shows a held
call's ``fingerprint`` (a hash of that JSON) beside its arguments; an approval that
carries one answers the call only while its arguments are still those.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["changed_note", "fingerprint", "same_call"]


def _canonical(tool: str, args: Mapping[str, Any]) -> str:
    return json.dumps(
        [tool, dict(args)], sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )


def fingerprint(tool: str, args: Mapping[str, Any]) -> str:
    """The fingerprint of a call as it is shown: 32 hex digits of the SHA-256 of its
    canonical JSON."""
    return hashlib.sha256(_canonical(tool, args).encode("utf-8")).hexdigest()[:32]


def same_call(tool: str, shown: Mapping[str, Any] | None, now: Mapping[str, Any]) -> bool:
    """Whether ``now`` are exactly the arguments the question showed (``shown``)."""
    return shown is not None and _canonical(tool, shown) == _canonical(tool, now)


def changed_note(tool: str, shown: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """What the user is told when a call's arguments changed after it was approved."""
    before = json.dumps(dict(shown), ensure_ascii=False, default=str)
    after = json.dumps(dict(now), ensure_ascii=False, default=str)
    return (
        f"the {tool} call's arguments changed after it was approved, so it is asked again "
        f"(approved: {_clip(before)}; now: {_clip(after)})"
    )


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."

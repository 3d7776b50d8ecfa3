"""Audit hook: append one JSON line per tool result to an audit log.

Used as ``tool_result: [{python: hooks.audit:record}]``. The log goes to
``$HARNESSC_AUDIT_LOG`` or ``.harnessc/audit.jsonl`` below the working directory (a
``.harnessc`` it creates gets a ``.gitignore``, as harnessc's own folders do).
It observes only: returning None leaves the result unchanged.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from harnessc.runtime.support.data_folder import make_folder


def record(event: Any) -> None:
    path = Path(os.environ.get("HARNESSC_AUDIT_LOG") or ".harnessc/audit.jsonl")
    make_folder(path.parent)
    line = {
        "time": round(time.time(), 3),
        "tool": getattr(event, "tool_name", None),
        "call_id": getattr(event, "tool_call_id", None),
        "is_error": bool(getattr(event, "is_error", False)),
        "input_keys": sorted((getattr(event, "input", None) or {}).keys()),
    }
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")

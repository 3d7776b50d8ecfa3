"""``block: {tool, pattern, reason}`` rules for the ``tool_call`` moment.

A rule blocks a call when ``tool`` (a regex over the whole tool name, harnessc's or
Claude Code's: ``bash`` or ``Bash``) matches and
``pattern`` (a regex) is found anywhere in the call's input serialised as JSON
(``json.dumps`` with its default ``", "``/``": "`` separators and non-ASCII kept, keys
in the order the model sent them). The reason is the tool result the model sees.
"""

from __future__ import annotations

import json
import re
from typing import Any

from harnessc.runtime.core.hooks import HookSpec, ToolCallResult

__all__ = ["BlockRule", "block_rule"]


def _compile(value: str, field: str) -> re.Pattern[str]:
    if not isinstance(value, str) or not value:
        raise ValueError(f"block rule {field} must be a non-empty regex")
    try:
        return re.compile(value)
    except re.error as exc:
        raise ValueError(f"block rule {field} {value!r} is not a valid regex: {exc}") from None


class BlockRule:
    """The handler behind ``block_rule``."""

    def __init__(self, tool: str, pattern: str, reason: str) -> None:
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("block rule reason must be a non-empty string")
        self.tool = _compile(tool, "tool")
        self.pattern = _compile(pattern, "pattern")
        self.reason = reason.strip()

    def __repr__(self) -> str:
        return f"BlockRule({self.tool.pattern!r}, {self.pattern.pattern!r}, {self.reason!r})"

    def matches(self, tool_name: str, arguments: Any) -> bool:
        from harnessc.runtime.extensions.claude_tools import claude_tool_names

        names = claude_tool_names(tool_name)
        if not any(self.tool.fullmatch(name) for name in names):
            return False
        text = json.dumps(arguments, ensure_ascii=False, default=str)
        return self.pattern.search(text) is not None

    def __call__(self, event: Any) -> ToolCallResult | None:
        if self.matches(str(getattr(event, "tool_name", "")), getattr(event, "input", {})):
            return ToolCallResult(block=True, reason=self.reason)
        return None


def block_rule(tool: str, pattern: str, reason: str) -> HookSpec:
    """A tool_call HookSpec blocking calls of ``tool`` whose JSON input matches ``pattern``."""
    rule = BlockRule(tool, pattern, reason)
    # the rule matches the tool itself (under both names): no harness matcher
    return HookSpec(moment="tool_call", handler=rule, matcher=None, name=f"block:{tool}:{pattern}")

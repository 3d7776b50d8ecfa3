"""The stdin JSON of a command hook, as Claude Code documents it for each event.

Common fields: ``session_id``, ``transcript_path`` (the session file, or null for an
in-memory session), ``cwd`` (the agent's working directory), ``permission_mode``
(the permission gate's mode under Claude Code's name; ``"bypassPermissions"`` for an
agent without permission rules, which runs tools without asking) and ``hook_event_name``. Then the event's own fields. What only harnessc knows
goes under the one key ``harnessc`` (``moment``, and for moments Claude Code has no
name for, the moment's own event fields).

Which Claude Code event each moment reports (``PreToolUse`` for ``tool_call``, ...) is
the catalog's (``core/moments.py``; its table is in docs/hooks.md); a moment Claude Code
has no event for is reported under its own name, its event fields under ``harnessc``.
"""

from __future__ import annotations

import os
import re
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from harnessc.runtime.core.events import to_jsonable
from harnessc.runtime.core.hooks import asks_for_approval
from harnessc.runtime.core.messages import Message, TextContent, UserMessage, message_text
from harnessc.runtime.core.moments import MOMENTS, moment_named
from harnessc.runtime.extensions.claude_tools import (
    claude_tool_input,
    claude_tool_name,
    claude_tool_names,
)

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "CLAUDE_EVENTS",
    "CLAUDE_EVENTS_WITHOUT_MOMENT",
    "EXTRA_KEY",
    "PERMISSION_MODE",
    "StopContinuations",
    "claude_event_name",
    "claude_payload",
    "compile_matcher",
    "session_cwd",
    "tool_base",
]

EXTRA_KEY = "harnessc"
PERMISSION_MODE = "bypassPermissions"

# Claude Code event -> the harnessc moment its hooks run at.
CLAUDE_EVENTS: dict[str, str] = {event.name: m.name for m in MOMENTS for event in m.claude}

# Claude Code's other hook events: harnessc has no moment for them (their hooks are
# skipped with a warning). Any name in neither table is a mistake (refused).
CLAUDE_EVENTS_WITHOUT_MOMENT: frozenset[str] = frozenset(
    {
        "ConfigChange",
        "CwdChanged",
        "Elicitation",
        "ElicitationResult",
        "FileChanged",
        "InstructionsLoaded",
        "PermissionDenied",
        "PermissionRequest",
        "PostCompact",
        "PostToolBatch",
        "SessionEnd",
        "Setup",
        "StopFailure",
        "SubagentStart",
        "SubagentStop",
        "TaskCompleted",
        "TaskCreated",
        "TeammateIdle",
        "UserPromptExpansion",
        "WorktreeCreate",
        "WorktreeRemove",
    }
)

_LITERAL = re.compile(r"[A-Za-z0-9_|,\s]*")


def claude_event_name(moment: str, event: Any) -> str:
    """The Claude Code event a hook at harnessc ``moment`` reports (or the moment)."""
    entry = moment_named(moment)
    for claude in entry.claude if entry is not None else ():
        if claude.only is None or claude.only(event):
            return claude.name
    return moment


def compile_matcher(matcher: str | None) -> Callable[[str], bool] | None:
    """A predicate over tool names, as Claude Code matches them; None matches everything.

    ``*``, ``""`` and no matcher match every tool; letters, digits, ``_``, ``|`` and
    ``,`` only: exact names (``Edit|Write``, ``Edit, Write``); anything else: a regex
    searched in the name (``mcp__.*``, ``^Bash``). A name matches under harnessc's name
    (``bash``) or Claude Code's (``Bash``).
    """
    if matcher is None or matcher.strip() in ("", "*"):
        return None
    if _LITERAL.fullmatch(matcher):
        names = frozenset(n.strip() for n in re.split(r"[|,]", matcher) if n.strip())
        return lambda name: any(n in names for n in claude_tool_names(name))
    try:
        pattern = re.compile(matcher)
    except re.error as exc:
        raise ValueError(f"matcher {matcher!r} is not a valid regex: {exc}") from None
    return lambda name: any(pattern.search(n) for n in claude_tool_names(name))


async def tool_base(harness: HarnessContext, cwd: str) -> Path:
    """Where the tools' relative paths start: the tool context's workspace, else ``cwd``."""
    from harnessc.runtime.tools.paths import tool_env

    source = getattr(getattr(harness, "options", None), "tool_context", None)
    context: Any = None
    if source is not None:
        try:
            context = await source.resolve()
        except Exception:  # the tools report their own context errors
            context = None
    if context is None:
        context = {"cwd": cwd}
    elif isinstance(context, dict) and "cwd" not in context:
        context = {**context, "cwd": cwd}
    try:
        return tool_env(context).base
    except Exception:
        return Path(cwd)


class StopContinuations:
    """The messages Stop hooks sent to keep a run going, per harness: ``stop_hook_active``
    is true while the newest user message is one of them."""

    def __init__(self) -> None:
        self._sent: weakref.WeakKeyDictionary[Any, list[Message]] = weakref.WeakKeyDictionary()

    def record(self, harness: HarnessContext, message: UserMessage) -> None:
        try:
            sent = self._sent.setdefault(harness, [])
        except TypeError:  # not weak-referenceable: nothing to remember it by
            return
        sent.append(message)
        del sent[:-8]

    def active(self, harness: HarnessContext, messages: list[Message]) -> bool:
        try:
            sent = self._sent.get(harness, [])
        except TypeError:
            return False
        last = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
        return last is not None and any(m is last for m in sent)


STOP_CONTINUATIONS = StopContinuations()


def session_cwd(harness: HarnessContext) -> str:
    """The agent's working directory: the session's cwd (else the process's), absolute."""
    header = getattr(getattr(harness, "session", None), "header", None)
    return os.path.abspath(getattr(header, "cwd", "") or os.getcwd())


def _session_fields(harness: HarnessContext) -> tuple[str, str, str | None]:
    session = getattr(harness, "session", None)
    session_id = getattr(session, "id", None) or ""
    path = getattr(session, "path", None)
    return str(session_id), session_cwd(harness), os.fspath(path) if path else None


def _result_text(event: Any) -> str:
    content = getattr(event, "content", None) or []
    return "".join(c.text for c in content if isinstance(c, TextContent))


def _event_fields(event: Any) -> dict[str, Any]:
    if not isinstance(event, Struct):
        return {}
    out: dict[str, Any] = {}
    for name in event.__struct_fields__:
        if name in ("hook", "resources"):
            continue
        out[name] = to_jsonable(getattr(event, name))
    event_type = getattr(event, "type", None)
    if isinstance(event_type, str):
        out["event_type"] = event_type
    return out


def _scrub_headers(value: Any) -> None:
    from harnessc.runtime.providers.errors import redact_headers

    if isinstance(value, dict):
        for key, item in value.items():
            if key == "headers" and isinstance(item, dict):
                value[key] = redact_headers(item)
            else:
                _scrub_headers(item)
    elif isinstance(value, list):
        for item in value:
            _scrub_headers(item)


def _permission_mode(harness: HarnessContext) -> str:
    from harnessc.runtime.permissions.gate import claude_permission_mode

    return claude_permission_mode(harness)


async def claude_payload(
    moment: str,
    event: Any,
    harness: HarnessContext,
    *,
    event_name: str | None = None,
    base: Path | None = None,
) -> dict[str, Any]:
    """The JSON object a command hook at ``moment`` reads on stdin (``base``: where the
    tools' relative paths start; found with ``tool_base`` when not given)."""
    session_id, cwd, path = _session_fields(harness)
    name = event_name or claude_event_name(moment, event)
    payload: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": path,
        "cwd": cwd,
        "permission_mode": _permission_mode(harness),
        "hook_event_name": name,
    }
    extra: dict[str, Any] = {"moment": moment}
    tool = getattr(event, "tool_name", None)
    if tool is not None and moment in ("tool_call", "tool_result"):
        arguments = getattr(event, "input", None) or {}
        if base is None:
            base = await tool_base(harness, cwd)
        payload["tool_name"] = claude_tool_name(tool)
        payload["tool_input"] = to_jsonable(claude_tool_input(tool, arguments, base))
        payload["tool_use_id"] = getattr(event, "tool_call_id", None)
        extra["tool_name"] = tool
        extra["tool_input"] = to_jsonable(arguments)
        if name == "PostToolUse":
            payload["tool_response"] = {
                "content": _result_text(event),
                "details": to_jsonable(getattr(event, "details", None)),
            }
        elif name == "PostToolUseFailure":
            payload["error"] = _result_text(event)
            payload["is_interrupt"] = False
    elif name in ("UserPromptSubmit", "SessionStart"):
        if name == "UserPromptSubmit":
            payload["prompt"] = getattr(event, "prompt", "")
        else:
            payload["source"] = "resume" if getattr(harness, "messages", None) else "startup"
            model = getattr(harness, "model", None)
            payload["model"] = getattr(model, "id", None)
    elif name == "Stop":
        message = getattr(event, "message", None)
        messages = list(getattr(event, "messages", None) or [])
        payload["stop_hook_active"] = STOP_CONTINUATIONS.active(harness, messages)
        payload["last_assistant_message"] = message_text(message) if message is not None else ""
    elif name == "PreCompact":
        instructions = getattr(event, "custom_instructions", None)
        payload["trigger"] = "manual" if instructions is not None else "auto"
        payload["custom_instructions"] = instructions or ""
    elif name == "Notification":
        reason = str(getattr(event, "reason", "") or "")
        approval = asks_for_approval(reason)
        payload["message"] = reason or "harnessc is waiting for input"
        payload["title"] = "harnessc"
        payload["notification_type"] = "permission_prompt" if approval else "idle_prompt"
        extra.update(_event_fields(event))
    else:
        extra.update(_event_fields(event))
    _scrub_headers(extra)
    payload[EXTRA_KEY] = extra
    return payload

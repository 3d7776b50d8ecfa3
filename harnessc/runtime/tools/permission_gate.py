"""The permission gate: a ``tool_call`` hook applying the rules of ``permissions.py``
(allow, block, ask the interactive user, or hold the call for ``--approve`` /
``--deny``), and the session entries that record a user's answers."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from harnessc.runtime.tools.permissions import (
    _PATH_TOOLS,
    Decision,
    PermissionRules,
    Rule,
    _call_path,
    decide,
    normalize_mode,
    remembered_rule,
)

__all__ = [
    "PERMISSION_ENTRY",
    "PermissionGate",
    "claude_permission_mode",
    "describe_call",
    "find_gate",
    "pending_asks",
    "permission_hook",
    "record_answer",
    "recorded_answer",
]


PERMISSION_ENTRY = "harnessc.permission"  # custom session entries: a user's answer to an ask
Asker = Callable[[str, Mapping[str, Any], "Decision"], Awaitable[str]]


class PermissionGate:
    """A ``tool_call`` hook: allow, block, ask (``asker``: the interactive mode's y / n /
    always question) or, with nobody to ask, pause the run as a pull point. An answer
    given later (``--approve CALL_ID`` / ``--deny CALL_ID``) is a session entry that the
    gate reads when the model calls the same tool with the same arguments again.
    """

    def __init__(self, rules: PermissionRules, mode: str = "default") -> None:
        self.rules = rules
        self.mode = normalize_mode(mode)
        self.remembered: list[Rule] = []  # "always" answers of this process
        self.asker: Asker | None = None

    def set_mode(self, mode: str) -> None:
        self.mode = normalize_mode(mode)

    async def __call__(self, event: Any, harness: Any) -> Any:
        from harnessc.runtime.hooks import PERMISSION_PAUSE, PauseRequest, ToolCallResult

        tool, args = event.tool_name, dict(event.input or {})
        decision = decide(
            self.rules,
            tool,
            args,
            mode=self.mode,
            cwd=_workspace(harness),
            remembered=self.remembered,
        )
        label = _label(tool, args)
        if decision.outcome == "allow":
            return None
        if decision.outcome == "deny":
            return ToolCallResult(block=True, reason=f"{label}: {decision.reason}")
        answered = recorded_answer(getattr(harness, "session", None), tool, args)
        if answered == "allow":
            return None
        if answered == "deny":
            return ToolCallResult(block=True, reason=f"{label}: denied by the user")
        if self.asker is None:
            session = getattr(harness, "session", None)
            if session is not None:  # what --approve / --deny CALL_ID answer
                record_answer(session, tool, args, "pending", event.tool_call_id)
            return PauseRequest(
                reason=f"{PERMISSION_PAUSE}{label} ({decision.reason}); call {event.tool_call_id}"
            )
        answer = (await self.asker(tool, args, decision)).strip().lower()
        if answer in ("a", "always"):
            self.remembered.append(remembered_rule(tool, args))
            return None
        if answer in ("y", "yes"):
            return None
        return ToolCallResult(block=True, reason=f"{label}: denied by the user")


def permission_hook(config: Mapping[str, Any] | None, mode: str = "default") -> Any:
    """The spec's ``permissions:`` as a ``tool_call`` HookSpec (what generated code calls)."""
    from harnessc.runtime.hooks import HookSpec

    gate = PermissionGate(PermissionRules.from_config(config), mode)
    return HookSpec(moment="tool_call", handler=gate, name="permissions")


def find_gate(hooks: Iterable[Any]) -> PermissionGate | None:
    """The PermissionGate among an options' hooks, if any."""
    for spec in hooks:
        if isinstance(getattr(spec, "handler", None), PermissionGate):
            return spec.handler  # type: ignore[no-any-return]
    return None


def record_answer(
    session: Any, tool: str, args: Mapping[str, Any], decision: str, call_id: str
) -> None:
    """Remember the user's answer to an ask in the session (``--approve`` / ``--deny``)."""
    session.append_custom(
        PERMISSION_ENTRY,
        {"tool": tool, "args": dict(args), "decision": decision, "callId": call_id},
    )


def recorded_answer(session: Any, tool: str, args: Mapping[str, Any]) -> str | None:
    """The latest recorded answer for exactly this call (tool and arguments), if any."""
    if session is None:
        return None
    found: str | None = None
    for entry in session.entries():
        if entry.type != "custom" or entry.data.get("customType") != PERMISSION_ENTRY:
            continue
        data = entry.data.get("data")
        if isinstance(data, dict) and data.get("tool") == tool and data.get("args") == dict(args):
            if data.get("decision") in ("allow", "deny"):
                found = str(data.get("decision"))
    return found


def _label(tool: str, args: Mapping[str, Any]) -> str:
    if tool == "bash":
        return f"Bash({args.get('command', '')})"
    if tool in _PATH_TOOLS:
        return f"{tool}({_call_path(tool, args)})"
    return tool


def _workspace(harness: Any) -> str:
    cwd = getattr(getattr(harness, "session", None), "cwd", None)
    return str(cwd) if isinstance(cwd, str) and cwd else os.getcwd()


def pending_asks(session: Any) -> dict[str, dict[str, Any]]:
    """Held calls not answered yet: call id -> {"tool", "args"} (from the session)."""
    pending: dict[str, dict[str, Any]] = {}
    for entry in session.entries():
        if entry.type != "custom" or entry.data.get("customType") != PERMISSION_ENTRY:
            continue
        data = entry.data.get("data")
        if not isinstance(data, dict):
            continue
        call_id = str(data.get("callId", ""))
        if data.get("decision") == "pending":
            pending[call_id] = {"tool": data.get("tool"), "args": data.get("args") or {}}
        else:
            pending.pop(call_id, None)
    return pending


def describe_call(tool: str, args: Mapping[str, Any]) -> str:
    """``Bash(git push)``, ``write(notes.md)``: a call as the rules name it."""
    return _label(tool, args)


_CLAUDE_MODES = {
    "default": "default",
    "accept-edits": "acceptEdits",
    "plan": "plan",
    "bypass": "bypassPermissions",
}


def claude_permission_mode(harness: Any) -> str:
    """The permission mode as Claude Code names it, for hooks (``permission_mode``):
    the gate's mode, or ``bypassPermissions`` for an agent without permission rules."""
    options = getattr(harness, "options", None)
    gate = find_gate(getattr(options, "hooks", ()) or ())
    return _CLAUDE_MODES.get(gate.mode, "default") if gate is not None else "bypassPermissions"

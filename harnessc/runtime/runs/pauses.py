"""What a paused run waits for, as one record every door reads: the ``Pause``.

A pause has a kind, a reason and a typed payload:

- ``tool_results``: external tool calls wait for their results (``calls``);
- ``approval``: calls a permission ``ask`` (or a hook) held wait for an allow or deny
  (``calls`` with ``held``);
- ``budget``: a limit was hit (``budget``: which, how much was used, the limit);
- ``shutdown``: the server drained the run at its turn end (SIGTERM);
- ``hook``: a hook paused the run for a review (``reason`` says why).

- ``mcp_login``: an MCP server met in a tool call (the run's or a sub-agent's) needs a
  login; ``payload``: ``call_id``, ``server``, ``url`` (to open), ``redirect_uri``,
  ``reason``, ``scopes``; answered by ``Answer.payload`` ``{"redirect": "<the URL the
  browser was sent back to>"}`` or ``{"redirect": "done"}`` (logged in elsewhere);
- ``mcp_elicitation``: an MCP server asks a question in a tool call; ``payload``:
  ``call_id``, ``server``, ``mode`` (form or url), ``message``, ``schema`` or ``url``;
  answered by ``{"action": "accept" | "decline" | "cancel", "content": {...}}``.

A login met while a server's tools were listed (its start, before the model request
that needs them) is an ``mcp_login`` pause with no held call: its ``call_id`` is
``mcp-start:<server>``, and ``path`` names the sub-agent whose own server it is. An MCP
pause found again in another process (a restart) has only ``call_id`` and
``stale: true`` in its payload: the request was lost with the process, and the resume
meets it again (a login with a fresh URL).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from msgspec import Struct

from harnessc.runtime.core.hooks import PERMISSION_PAUSE
from harnessc.runtime.core.messages import ToolCall
from harnessc.runtime.permissions.shown_args import fingerprint

if TYPE_CHECKING:
    from harnessc.runtime.agent import AgentHarness

__all__ = [
    "DRAIN_REASON",
    "PAUSE_KINDS",
    "BudgetUse",
    "PauseKind",
    "PendingCall",
    "Pause",
    "budget_limit",
    "is_permission_pause",
    "pause_of",
    "pause_reason",
]

PauseKind = Literal[
    "tool_results", "approval", "budget", "shutdown", "hook", "mcp_login", "mcp_elicitation"
]
PAUSE_KINDS: tuple[str, ...] = (
    "tool_results",
    "approval",
    "budget",
    "shutdown",
    "hook",
    "mcp_login",
    "mcp_elicitation",
)
# The pause reason of a run stopped by the server's shutdown (SIGTERM).
DRAIN_REASON = "server_shutdown"


class PendingCall(Struct):
    """A call a pause holds: one waiting for its result, one held for approval, or one
    not reached yet (a later call of the paused batch)."""

    id: str
    name: str
    arguments: dict[str, Any] = {}
    held: bool = False  # an approval answers it (a permission ask, a hook's hold)
    path: str = ""  # the sub-agent path of a call a paused sub-agent waits on ("" for the run's)

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the call as shown (an approval may carry it: it answers the
        call only while its arguments are these)."""
        return fingerprint(self.name, self.arguments)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.held:
            out["held"] = True
            out["fingerprint"] = self.fingerprint
        if self.path:
            out["path"] = self.path
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PendingCall:
        arguments = data.get("arguments")
        return cls(
            str(data.get("id", "")),
            str(data.get("name", "")),
            arguments if isinstance(arguments, dict) else {},
            bool(data.get("held")),
            str(data.get("path") or ""),
        )

    def tool_call(self) -> ToolCall:
        return ToolCall(id=self.id, name=self.name, arguments=self.arguments)


class BudgetUse(Struct):
    """The limit a budget pause hit: its name, what the run used, the limit."""

    limit: str
    used: float
    allowed: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "used": self.used, "allowed": self.allowed}


class Pause(Struct):
    """What a paused run waits for (see the module docstring)."""

    kind: PauseKind
    reason: str = ""
    calls: list[PendingCall] = []
    budget: BudgetUse | None = None
    payload: dict[str, Any] = {}  # the data of kinds to come (an MCP login's address...)

    @property
    def awaiting_tool(self) -> bool:
        """The run waits for external tool results (the loop's AWAITING_TOOL)."""
        return self.kind == "tool_results"

    @property
    def held(self) -> list[PendingCall]:
        """The calls an approval answers."""
        return [c for c in self.calls if c.held]

    @property
    def status(self) -> str:
        """The run's status while it waits: ``awaiting_tool`` or ``paused``."""
        return "awaiting_tool" if self.awaiting_tool else "paused"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "reason": self.reason,
            "calls": [c.to_dict() for c in self.calls],
        }
        if self.budget is not None:
            out["budget"] = self.budget.to_dict()
        if self.payload:
            out["payload"] = self.payload
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pause:
        kind = str(data.get("kind") or "hook")
        budget = data.get("budget")
        payload = data.get("payload")
        return cls(
            kind if kind in PAUSE_KINDS else "hook",  # type: ignore[arg-type]
            str(data.get("reason") or ""),
            [PendingCall.from_dict(c) for c in data.get("calls") or [] if isinstance(c, dict)],
            BudgetUse(str(budget["limit"]), float(budget.get("used") or 0), budget.get("allowed"))
            if isinstance(budget, dict) and budget.get("limit")
            else None,
            payload if isinstance(payload, dict) else {},
        )


def budget_limit(reason: str) -> str | None:
    """``"budget_exceeded:turns"`` -> ``"turns"``."""
    prefix = "budget_exceeded:"
    return reason[len(prefix) :] if reason.startswith(prefix) else None


def is_permission_pause(reason: str) -> bool:
    return reason.startswith(PERMISSION_PAUSE)


def pause_reason(session: Any) -> str:
    """The reason of the latest pause recorded on the session's branch ("" if none)."""
    for entry in reversed(session.branch()):
        if entry.type == "custom" and entry.data.get("customType") == "harnessc.pause":
            data = entry.data.get("data")
            return str(data.get("reason", "")) if isinstance(data, dict) else ""
    return ""


def pause_of(harness: AgentHarness, reason: str | None = None) -> Pause | None:
    """What ``harness``'s paused run waits for (None when it is not paused). ``reason``:
    the run's result's (default: the one its session recorded)."""
    state = harness.paused_reason
    if state is None:
        return None
    run = harness.run_state
    # the calls sub-agents paused inside the run's calls wait on: (call, kind, path)
    nested = (
        [n for r in run.calls if r.result is None for n in r.nested_calls()]
        if run is not None
        else []
    )
    if state == "awaiting_tool":
        if harness.pending_tool_calls and run is not None and run.awaiting:
            calls = [
                PendingCall(c.id, c.name, dict(c.arguments)) for c in harness.pending_tool_calls
            ]
        else:  # what a sub-agent awaits
            calls = [
                PendingCall(c.id, c.name, dict(c.arguments), path=path)
                for c, kind, path in nested
                if kind == "tool"
            ]
        return Pause("tool_results", "awaiting_tool", calls)
    if reason is None:
        reason = pause_reason(harness.session) or "paused"
    held = {c.id for c in harness.held_tool_calls}
    held |= {c.id for c, kind, _ in nested if kind == "approval"}
    paths = {c.id: path for c, _, path in nested}
    calls = [
        PendingCall(c.id, c.name, dict(c.arguments), c.id in held, paths.get(c.id, ""))
        for c in harness.pending_tool_calls
    ]
    known = {c.id for c in calls}
    calls += [
        PendingCall(c.id, c.name, dict(c.arguments), True, path)
        for c, kind, path in nested
        if kind == "approval" and c.id not in known
    ]
    mcp = _mcp_pause(reason, calls, harness)
    if mcp is not None:
        return mcp
    limit = budget_limit(reason)
    if limit is not None:
        tracker = harness.budget
        use = BudgetUse(limit, tracker.used(limit), getattr(tracker.budget, limit, None))
        return Pause("budget", reason, calls, use)
    if is_permission_pause(reason) or any(c.held for c in calls):
        return Pause("approval", reason, calls)
    if reason == DRAIN_REASON:
        return Pause("shutdown", reason, calls)
    return Pause("hook", reason, calls)


def _mcp_pause(reason: str, calls: list[PendingCall], harness: AgentHarness) -> Pause | None:
    """The pause of a call held for an MCP login or question, or of a login met while
    a server's tools were listed (the run's or a sub-agent's own server's: its
    ``call_id`` is ``start_key(server)``) (None: neither)."""
    held = [c for c in calls if c.held]
    if "harnessc.runtime.mcp.pausing_user" in sys.modules:  # a PausingUser may exist
        from harnessc.runtime.mcp.pausing_user import (
            request_payload,
            starting,
            users_of,
            waiting,
        )
        from harnessc.runtime.mcp.user_types import LoginRequest

        users = users_of(harness.options.extensions)
        for call in held:
            request = waiting(call.id, users)
            if request is not None:
                login = isinstance(request, LoginRequest)
                kind: PauseKind = "mcp_login" if login else "mcp_elicitation"
                payload = request_payload(request)
                if call.path:
                    payload["path"] = call.path
                return Pause(kind, reason, calls, payload=payload)
        start = starting(users, reason) if reason.startswith("mcp server ") else None
        if start is not None:
            request, user = start
            payload = request_payload(request)
            if user.path:
                payload["path"] = user.path
            return Pause("mcp_login", reason, calls, payload=payload)
    if not reason.startswith("mcp server "):
        return None
    from harnessc.runtime.mcp.pausing_user import is_login_reason, is_mcp_reason, start_key

    if not is_mcp_reason(reason):
        return None
    kind = "mcp_login" if is_login_reason(reason) else "mcp_elicitation"
    if held:
        return Pause(kind, reason, calls, payload={"call_id": held[0].id, "stale": True})
    if kind == "mcp_login":  # met while listing, in a process that is gone
        server = _quoted(reason[len("mcp server ") :])
        return Pause(kind, reason, calls, payload={"call_id": start_key(server), "stale": True})
    return None


def _quoted(text: str) -> str:
    """The Python literal ``text`` starts with (a server name as ``repr`` shows it)."""
    import ast

    literal = text.split(" needs a login", 1)[0]
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal.strip("'\"")
    return value if isinstance(value, str) else literal

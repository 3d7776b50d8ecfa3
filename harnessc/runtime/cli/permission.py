"""Permission rules on the command line: --permission-mode, the interactive y / n /
always question, and --approve / --deny CALL_ID for a run paused on an ``ask``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harnessc.runtime.cli.args import UsageError
from harnessc.runtime.core.hooks import PERMISSION_PAUSE
from harnessc.runtime.permissions.gate import (
    PermissionGate,
    describe_call,
    find_gate,
    pending_asks,
    permission_hook,
    record_answer,
)
from harnessc.runtime.permissions.rules import PermissionError_, check_rule_tools

if TYPE_CHECKING:
    from harnessc.runtime.agent.harness import AgentHarness

__all__ = [
    "PERMISSION_PAUSE",
    "answer_asks",
    "ask_here",
    "install_gate",
    "is_permission_pause",
]


def is_permission_pause(reason: str) -> bool:
    return reason.startswith(PERMISSION_PAUSE)


def install_gate(
    options: Any, mode: str | None, warn: Callable[[str], object] | None = None
) -> PermissionGate | None:
    """The agent's gate (its spec's ``permissions:``) in ``mode``; one without rules is
    added when a mode other than default is asked for and the spec has none. A rule
    naming no tool of the agent is a UsageError (the agent does not start)."""
    gate = find_gate(options.hooks)
    if gate is not None:
        tools = [str(getattr(tool, "name", "")) for tool in options.tools]
        if getattr(options, "output", None) is not None:  # the typed result's final_result
            from harnessc.runtime.options.typed_output import OUTPUT_TOOL

            tools.append(OUTPUT_TOOL)
        try:
            problems = check_rule_tools(gate.rules, tools, _mcp_prefixes(options))
        except PermissionError_ as exc:
            raise UsageError(str(exc)) from None
        for problem in problems:
            if warn is not None:
                warn(problem)
    if gate is None and mode not in (None, "default"):
        spec = permission_hook({}, mode or "default")
        options.hooks = [*options.hooks, spec]
        gate = spec.handler
    elif gate is not None and mode is not None:
        gate.set_mode(mode)
    return gate


def ask_here(
    options: Any,
    gate: PermissionGate | None,
    asker: Callable[[str, Any, Any], Any],
    previous: Any = None,
) -> None:
    """Ask the user (``asker``: the interactive prompt's y / n / always question) about
    an ``ask`` of the agent's gate and of every sub-agent's. ``previous``: the options
    of the harness these replace around the same session, whose sub-agents' "always"
    answers still hold."""
    from harnessc.runtime.agent.subagents import SubAgents

    if gate is not None:
        gate.asker = asker
    kept = [e.remembered for e in getattr(previous, "extensions", ()) if isinstance(e, SubAgents)]
    for extension in options.extensions:
        if isinstance(extension, SubAgents):
            extension.asker = asker
            if kept:
                extension.remembered = [*kept[0]]


def _mcp_prefixes(options: Any) -> list[str]:
    """The tool-name prefixes of the agent's MCP servers (their own ``prefix:``)."""
    from harnessc.runtime.mcp.config import tool_prefix

    prefixes: list[str] = []
    for extension in getattr(options, "extensions", ()) or ():
        for server in getattr(extension, "servers", ()) or ():
            name = getattr(server, "name", None)
            if isinstance(name, str):
                prefixes.append(tool_prefix(name, getattr(server, "prefix", None)))
    return prefixes


def answer_asks(
    harness: AgentHarness, approve: list[str], deny: list[str]
) -> tuple[list[str], dict[str, bool]]:
    """Take the user's answers to held calls: what to tell the user, and the approvals
    the run resumes with (``harness.resume(approvals=...)`` runs an approved call in place,
    refuses a denied one). A permission-gate answer is also recorded in the session, so
    the same call asked again is answered. UsageError for an id that is not held."""
    pending = pending_asks(harness.session)
    held = {c.id: c for c in harness.pending_tool_calls}
    lines: list[str] = []
    approvals: dict[str, bool] = {}
    for call_id, decision in [(i, "allow") for i in approve] + [(i, "deny") for i in deny]:
        if call_id not in held:
            known = ", ".join(held) or "none"
            raise UsageError(
                f"--{'approve' if decision == 'allow' else 'deny'}: no held call {call_id} "
                f"in session {harness.session.id} (held: {known})"
            )
        call = held[call_id]
        tool, args = call.name, dict(call.arguments)
        if call_id in pending:
            tool, args = str(pending[call_id]["tool"]), dict(pending[call_id]["args"])
            record_answer(harness.session, tool, args, decision, call_id)
        approvals[call_id] = decision == "allow"
        verb = "approved" if decision == "allow" else "denied"
        lines.append(f"{verb} {call_id}: {describe_call(tool, args)}")
    return lines, approvals

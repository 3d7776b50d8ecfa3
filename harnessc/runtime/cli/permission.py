"""Permission rules on the command line: the interactive y / n / always question, and
the lines that say what ``--approve`` / ``--deny CALL_ID`` did (the answers themselves
are the run-control layer's: ``runs.answers``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from harnessc.runtime.cli.args import UsageError
from harnessc.runtime.core.hooks import PERMISSION_PAUSE
from harnessc.runtime.permissions.gate import PermissionGate, describe_call, pending_asks
from harnessc.runtime.runs.overrides import install_gate
from harnessc.runtime.runs.pauses import is_permission_pause

if TYPE_CHECKING:
    from harnessc.runtime.agent.harness import AgentHarness
    from harnessc.runtime.runs.answers import Decision

__all__ = [
    "PERMISSION_PAUSE",
    "answer_lines",
    "approvals_of",
    "ask_here",
    "install_gate",
    "is_permission_pause",
]


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


def approvals_of(harness: AgentHarness, approve: list[str], deny: list[str]) -> dict[str, Decision]:
    """``--approve`` / ``--deny`` as the layer's approvals; UsageError for an id that is
    not held."""
    held = {c.id for c in harness.pending_tool_calls}
    out: dict[str, Decision] = {}
    for call_id, decision in [(i, "allow") for i in approve] + [(i, "deny") for i in deny]:
        if call_id not in held:
            known = ", ".join(held) or "none"
            raise UsageError(
                f"--{'approve' if decision == 'allow' else 'deny'}: no held call {call_id} "
                f"in session {harness.session.id} (held: {known})"
            )
        out[call_id] = decision  # type: ignore[assignment]
    return out


def answer_lines(harness: AgentHarness, approvals: Mapping[str, str]) -> list[str]:
    """What to tell the user about the answers given to held calls."""
    asks = pending_asks(harness.session)
    held = {c.id: c for c in harness.pending_tool_calls}
    lines = []
    for call_id, decision in approvals.items():
        if call_id in asks:
            tool, args = str(asks[call_id]["tool"]), dict(asks[call_id]["args"])
        elif call_id in held:
            tool, args = held[call_id].name, dict(held[call_id].arguments)
        else:
            continue
        verb = "denied" if decision == "deny" else "approved"
        lines.append(f"{verb} {call_id}: {describe_call(tool, args)}")
    return lines

"""Permission rules on the command line: --permission-mode, the interactive y / n /
always question, and --approve / --deny CALL_ID for a run paused on an ``ask``."""

from __future__ import annotations

from typing import Any

from harnessc.runtime.cli.args import UsageError
from harnessc.runtime.tools.permissions import (
    PermissionGate,
    describe_call,
    find_gate,
    pending_asks,
    permission_hook,
    record_answer,
)

__all__ = ["PERMISSION_PAUSE", "answer_asks", "install_gate", "is_permission_pause"]

PERMISSION_PAUSE = "permission needed: "


def is_permission_pause(reason: str) -> bool:
    return reason.startswith(PERMISSION_PAUSE)


def install_gate(options: Any, mode: str | None) -> PermissionGate | None:
    """The agent's gate (its spec's ``permissions:``) in ``mode``; one without rules is
    added when a mode other than default is asked for and the spec has none."""
    gate = find_gate(options.hooks)
    if gate is None and mode not in (None, "default"):
        spec = permission_hook({}, mode or "default")
        options.hooks = [*options.hooks, spec]
        gate = spec.handler
    elif gate is not None and mode is not None:
        gate.set_mode(mode)
    return gate


def answer_asks(harness: Any, approve: list[str], deny: list[str]) -> tuple[list[str], str]:
    """Record the user's answers to held calls. Returns what to tell the user and the
    message that tells the model (the prompt the run continues with); UsageError for an
    id that is not held."""
    pending = pending_asks(harness.session)
    lines: list[str] = []
    notes: list[str] = []
    for call_id, decision in [(i, "allow") for i in approve] + [(i, "deny") for i in deny]:
        held = pending.get(call_id)
        if held is None:
            known = ", ".join(pending) or "none"
            raise UsageError(
                f"--{'approve' if decision == 'allow' else 'deny'}: no held call {call_id} "
                f"in session {harness.session.id} (held: {known})"
            )
        tool, args = str(held["tool"]), dict(held["args"])
        record_answer(harness.session, tool, args, decision, call_id)
        label = describe_call(tool, args)
        if decision == "allow":
            notes.append(
                f"The user approved the held tool call {call_id} ({label}). "
                "Make exactly the same call again to run it."
            )
            lines.append(f"approved {call_id}: {label}")
        else:
            notes.append(
                f"The user denied the held tool call {call_id} ({label}): do not run it; "
                "go on without it or ask what to do instead."
            )
            lines.append(f"denied {call_id}: {label}")
    return lines, "\n".join(notes)

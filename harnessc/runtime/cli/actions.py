"""What an invocation does with the harness it built: the REPL, a prompt, a resume.

What a pause waits for is put in words (``cli.pause``) only for a paused session."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol

from harnessc.runtime.cli.args import UsageError

if TYPE_CHECKING:
    from harnessc.runtime.agent import AgentHarness
    from harnessc.runtime.cli.host import CliHost

    class CliInvocationHost(CliHost, Protocol):
        approvals: dict[str, Any] | None


__all__ = ["choose_action", "pending_message"]


def choose_action(
    cli: CliInvocationHost,
    harness: AgentHarness,
    prompt: str | None,
    results: dict[str, Any] | None,
) -> str:
    """What to do: "repl", "resume_tools", "resume" or "prompt"."""
    args = cli.args
    paused = harness.paused_reason
    if args.approve or args.deny:
        from harnessc.runtime.cli.permission import answer_lines, approvals_of

        if paused != "paused":
            raise UsageError(
                f"session {harness.session.id} holds no call to approve or deny (it is not paused)"
            )
        cli.approvals = dict(approvals_of(harness, args.approve, args.deny))
        for line in answer_lines(harness, cli.approvals):
            cli.err.write(line + "\n")
        return "repl" if args.interactive else "answers"
    if results is not None:
        if paused != "awaiting_tool":
            raise UsageError(
                f"--resume-with: session {harness.session.id} is not waiting for tool results"
            )
        from harnessc.runtime.cli.pause import check_results

        check_results(results, harness.pending_tool_calls)
        return "repl" if args.interactive else "resume_tools"
    if args.interactive:
        return "repl"
    if prompt is not None:
        if paused == "awaiting_tool":
            raise UsageError(pending_message(harness))
        return "prompt"
    if paused == "paused":
        return "resume"
    interactive_ok = _stdin_is_tty() and not args.json
    if paused == "awaiting_tool":
        if interactive_ok:
            return "repl"
        raise UsageError(pending_message(harness))
    if interactive_ok:
        return "repl"
    raise UsageError("no prompt: pass PROMPT, pipe it on stdin, or use -i")


def pending_message(harness: AgentHarness) -> str:
    from harnessc.runtime.cli.pause import describe_pause

    pending = harness.pending_tool_calls
    lines = describe_pause("awaiting_tool", pending, awaiting_tool=True)
    example = ", ".join(f'"{c.id}": "..."' for c in pending)
    return (
        f"session {harness.session.id} is waiting for tool results; continue it with "
        f"--resume-with '{{{example}}}'\n" + "\n".join(lines)
    )


# -- one run -----------------------------------------------------------------


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False

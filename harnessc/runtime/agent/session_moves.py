"""The harness's tree moves on its session outside a run: they settle a paused run
first and reopen it when the move fails or a hook cancels it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent import restore
from harnessc.runtime.agent.parts import AgentParts
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.core.loop_states import LoopState

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = ["navigate_tree", "reopen", "settle"]


async def navigate_tree(
    harness: HarnessContext,
    agent: AgentParts,
    target_id: str | None,
    *,
    summarize: bool,
    custom_instructions: str | None,
    replace_instructions: bool,
    label: str | None,
) -> Any:
    """Move the leaf to ``target_id``; a paused run is left on the old branch, and a
    pause still open on the new branch (a move back onto it) is the paused run again,
    exactly as a process opening the session after the move would find it."""
    from harnessc.runtime.agent.tree_moves import navigate_tree as move

    paused = agent.run if target_id != harness.session.leaf_id else None
    if paused is not None:
        settle(agent, "tree_move")
    try:
        outcome = await move(
            harness,
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
        )
    except BaseException:
        if paused is not None:  # the move failed: the run stays paused where it was
            reopen(agent, paused)
        raise
    if getattr(outcome, "cancelled", False):
        if paused is not None:
            reopen(agent, paused)
    else:  # the new branch's open pause, if any, is the paused run (as on reopening)
        restore.open_pause(agent)
    return outcome


def settle(agent: AgentParts, reason: str) -> None:
    """Close a paused run without continuing it (the session moved elsewhere)."""
    from harnessc.runtime.session import replay  # on first use: start-up stays lean

    run = agent.run
    if run is None:
        return
    replay.record_resume(agent.session, run_id=run.run_id, abandoned=True, reason=reason)
    agent.run = None
    agent.last_state = LoopState.IDLE


def reopen(agent: AgentParts, run: RunState) -> None:
    """Undo ``settle`` (the move did not happen): the run is paused again, and recorded."""
    agent.adopt(run)
    restore.record_pause(agent, run, run.pause_reason or "paused")

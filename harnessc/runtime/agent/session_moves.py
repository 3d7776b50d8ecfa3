"""The harness's tree moves on its session outside a run: they settle a paused run
first and reopen it when the move fails or a hook cancels it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent import endings, restore
from harnessc.runtime.agent.loop import AgentLoop
from harnessc.runtime.agent.run_state import RunState
from harnessc.runtime.core.loop_states import LoopState

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = ["navigate_tree", "reopen", "settle"]


async def navigate_tree(
    harness: HarnessContext,
    loop: AgentLoop,
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

    paused = loop.run if target_id != harness.session.leaf_id else None
    if paused is not None:
        settle(loop, "tree_move")
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
            reopen(loop, paused)
        raise
    if getattr(outcome, "cancelled", False):
        if paused is not None:
            reopen(loop, paused)
    else:  # the new branch's open pause, if any, is the paused run (as on reopening)
        restore.open_pause(loop)
    return outcome


def settle(loop: AgentLoop, reason: str) -> None:
    """Close a paused run without continuing it (the session moved elsewhere)."""
    from harnessc.runtime.session import replay  # on first use: start-up stays lean

    run = loop.run
    if run is None:
        return
    replay.record_resume(loop.session, run_id=run.run_id, abandoned=True, reason=reason)
    loop.run = None
    loop.last_state = LoopState.IDLE


def reopen(loop: AgentLoop, run: RunState) -> None:
    """Undo ``settle`` (the move did not happen): the run is paused again, and recorded."""
    loop.adopt(run)
    endings.record_pause(loop, run, run.pause_reason or "paused")

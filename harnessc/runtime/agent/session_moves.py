"""The harness's moves on its session outside a run: compaction (the extension's
``compactor`` or the session's own) and tree moves, which settle a paused run first and
reopen it when the move fails or a hook cancels it."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from harnessc.runtime.agent import driver
from harnessc.runtime.agent.parts import Parts

if TYPE_CHECKING:
    from harnessc.runtime.agent.harness import AgentHarness

__all__ = ["compact", "navigate_tree"]


async def compact(harness: AgentHarness, custom_instructions: str | None, reason: str) -> Any:
    """Run the harness's compactor (an extension's, else ``compact_harness``)."""
    compactor = harness.compactor
    if compactor is None:
        from harnessc.runtime.session.compaction import compact_harness

        compactor = compact_harness
    result = compactor(harness, custom_instructions=custom_instructions, reason=reason)
    if inspect.isawaitable(result):
        result = await result
    return result


async def navigate_tree(
    harness: AgentHarness,
    parts: Parts,
    target_id: str | None,
    *,
    summarize: bool,
    custom_instructions: str | None,
    replace_instructions: bool,
    label: str | None,
) -> Any:
    """Move the leaf to ``target_id``; a paused run is left on the old branch."""
    from harnessc.runtime.session.tree import navigate_tree as move

    paused = parts.run if target_id != harness.session.leaf_id else None
    if paused is not None:
        driver.settle(parts, "tree_move")
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
            driver.reopen(parts, paused)
        raise
    if paused is not None and getattr(outcome, "cancelled", False):
        driver.reopen(parts, paused)
    return outcome

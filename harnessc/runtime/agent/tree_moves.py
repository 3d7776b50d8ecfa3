"""Moving a harness to another point of its session tree (pi ``/tree``), with an
optional summary of the branch it leaves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harnessc.runtime.compaction import (
    generate_branch_summary,
    prepare_branch_summary,
)
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.session.session import Session, SessionEntry

if TYPE_CHECKING:  # the typed seam; no import at run time (no cycle)
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = ["TreeNavigation", "navigate_tree"]


@dataclass(slots=True)
class TreeNavigation:
    old_leaf_id: str | None
    new_leaf_id: str | None
    summary_entry: SessionEntry | None = None
    cancelled: bool = False
    from_hook: bool = False


async def navigate_tree(
    harness: HarnessContext,
    target_id: str | None,
    *,
    summarize: bool = False,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
) -> TreeNavigation:
    """Move the harness's session leaf to ``target_id`` and rebuild its context.

    ``session_before_tree`` hooks see the preparation (the entries left behind) and may
    cancel, supply the summary (``{"summary": ..., "details": ...}`` or a string),
    change the summary instructions or give a label (put on the summary entry, else on
    the target). With ``summarize`` (or instructions from a hook) and no supplied
    summary, the harness's model writes one. Emits ``session_tree``.
    """
    from harnessc.runtime.core.events import SessionTreeEvent
    from harnessc.runtime.core.hooks import SessionBeforeTreeEvent

    if harness.is_busy:
        raise RuntimeError("busy: the agent is running; navigate the tree when it is idle")
    session: Session = harness.session
    if target_id is not None and session.get_entry(target_id) is None:
        raise KeyError(f"no entry {target_id!r} in session {session.id}")
    old_leaf = session.leaf_id
    if target_id == old_leaf:
        return TreeNavigation(old_leaf, target_id)
    model = harness.model
    preparation = prepare_branch_summary(
        session, target_id, max(1000, model.context_window - 16384)
    )
    supplied: Any = None
    if harness.has_handlers("session_before_tree"):
        for result in await harness.call_hooks(
            "session_before_tree", SessionBeforeTreeEvent(preparation=preparation)
        ):
            get = (
                result.get
                if isinstance(result, Mapping)
                else lambda k, r=result: getattr(r, k, None)
            )
            if get("cancel"):
                return TreeNavigation(old_leaf, old_leaf, cancelled=True)
            if get("summary") is not None:
                supplied = get("summary")
            if get("custom_instructions"):
                custom_instructions = get("custom_instructions")
                summarize = True
            if get("replace_instructions") is not None:
                replace_instructions = bool(get("replace_instructions"))
            if get("label"):
                label = get("label")
    summary: str | None = None
    details: Any = None
    from_hook = False
    if supplied is not None:
        from_hook = True
        if isinstance(supplied, str):
            summary = supplied
        elif isinstance(supplied, Mapping):
            summary = str(supplied.get("summary", ""))
            details = supplied.get("details")
        else:
            summary = str(getattr(supplied, "summary", supplied))
            details = getattr(supplied, "details", None)
    elif summarize:
        result = await generate_branch_summary(
            session,
            target_id,
            model,
            harness.provider_for(model),
            preparation=preparation,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            signal=AbortSignal(),
            stream_options=harness.stream_options,
        )
        if result is not None:
            summary, details = result.summary, result.details
    entry = session.move_to(target_id, summary or None, details, from_hook)
    if label:
        labelled = entry.id if entry is not None else target_id
        if labelled is not None:
            session.append_label(labelled, label)
    session.sync()
    harness.reload_messages()
    await harness.emit(
        SessionTreeEvent(
            new_leaf_id=session.leaf_id,
            old_leaf_id=old_leaf,
            summary_entry=entry.to_dict() if entry is not None else None,
            from_hook=from_hook,
            messages=harness.messages,
        )
    )
    return TreeNavigation(old_leaf, session.leaf_id, entry, False, from_hook)

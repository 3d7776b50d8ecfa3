"""Summaries of the branch the leaf leaves when it moves (pi ``/tree``)."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from harnessc.runtime.compaction.file_ops import FileOperations
from harnessc.runtime.compaction.prompts import (
    BRANCH_SUMMARY_SYSTEM_PROMPT,
    build_branch_summary_prompt,
)
from harnessc.runtime.compaction.summarize import complete_summary
from harnessc.runtime.core.message_size import estimate_tokens
from harnessc.runtime.core.messages import CustomMessage, Message
from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.providers.base import Provider
from harnessc.runtime.session.session import Session, SessionEntry, entry_message

__all__ = [
    "BranchSummaryPreparation",
    "BranchSummaryResult",
    "generate_branch_summary",
    "prepare_branch_summary",
]


class BranchSummaryPreparation(Struct):
    target_id: str | None
    old_leaf_id: str | None
    common_ancestor_id: str | None
    entries: list[SessionEntry]  # the abandoned entries, oldest first
    messages: list[Message]  # their messages, within the token budget
    file_ops: FileOperations

    def to_dict(self) -> dict[str, Any]:
        return {
            "target_id": self.target_id,
            "old_leaf_id": self.old_leaf_id,
            "common_ancestor_id": self.common_ancestor_id,
            "entry_ids": [e.id for e in self.entries],
            "messages": [m.to_dict() for m in self.messages],
            "read_files": self.file_ops.read_files(),
            "modified_files": self.file_ops.modified_files(),
        }


class BranchSummaryResult(Struct):
    summary: str
    from_id: str
    details: dict[str, Any] | None = None


def prepare_branch_summary(
    session: Session, target_id: str | None, token_budget: int | None = None
) -> BranchSummaryPreparation:
    """The entries the leaf leaves behind when it moves to ``target_id``: from the
    current leaf back to the common ancestor (newest messages kept within
    ``token_budget``)."""
    old_leaf = session.leaf_id
    target_path = {e.id for e in session.branch(target_id)} if target_id is not None else set()
    abandoned: list[SessionEntry] = []
    ancestor: str | None = None
    for entry in reversed(session.branch()):
        if entry.id in target_path:
            ancestor = entry.id
            break
        abandoned.append(entry)
    abandoned.reverse()
    messages: list[Message] = []
    used = 0
    for entry in reversed(abandoned):
        message = entry_message(entry)
        if entry.type == "compaction":
            message = CustomMessage(
                custom_type="compaction_summary", content=str(entry.data.get("summary", ""))
            )
        if message is None:
            continue
        cost = estimate_tokens(message)
        if token_budget is not None and used + cost > token_budget and messages:
            break
        used += cost
        messages.append(message)
    messages.reverse()
    file_ops = FileOperations()
    file_ops.add_messages(messages)
    return BranchSummaryPreparation(
        target_id=target_id,
        old_leaf_id=old_leaf,
        common_ancestor_id=ancestor,
        entries=abandoned,
        messages=messages,
        file_ops=file_ops,
    )


async def generate_branch_summary(
    session: Session,
    target_id: str | None,
    model: Model,
    provider: Provider,
    *,
    preparation: BranchSummaryPreparation | None = None,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
    reserve_tokens: int = 16384,
    signal: AbortSignal | None = None,
    stream_options: AgentHarnessStreamOptions | None = None,
) -> BranchSummaryResult | None:
    """Summarise the branch the leaf is leaving (None when it leaves no messages).

    Nothing is appended: pass the summary to ``session.move_to(target_id, summary,
    details)``.
    """
    preparation = preparation or prepare_branch_summary(
        session, target_id, max(1000, model.context_window - reserve_tokens)
    )
    if not preparation.messages or preparation.old_leaf_id is None:
        return None
    summary = await complete_summary(
        model,
        provider,
        BRANCH_SUMMARY_SYSTEM_PROMPT,
        build_branch_summary_prompt(
            preparation.messages, custom_instructions, replace_instructions
        ),
        int(reserve_tokens * 0.8),
        signal,
        stream_options,
        session.id,
    )
    files = preparation.file_ops.format()
    if files:
        summary = f"{summary}\n\n{files}"
    return BranchSummaryResult(
        summary=summary, from_id=preparation.old_leaf_id, details=preparation.file_ops.details()
    )

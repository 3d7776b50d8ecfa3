"""Where to cut: the kept part of a branch and what is summarised (the preparation).

Walking back from the newest entry, message token estimates are summed until
``keep_recent_tokens``; the cut moves forward to the next entry that may start the
kept part (never a tool result, so a tool call keeps its results). When the cut falls
inside a turn, the part of that turn before the cut (its "prefix") is summarised on
its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec import Struct

from harnessc.runtime.compaction.file_ops import FileOperations
from harnessc.runtime.compaction.trigger import CompactionSettings
from harnessc.runtime.core.message_size import estimate_context_tokens, estimate_tokens
from harnessc.runtime.core.messages import Message
from harnessc.runtime.session.session import (
    Session,
    SessionEntry,
    build_context,
    entry_message,
)

__all__ = ["CompactionPreparation", "CutPoint", "find_cut_point", "prepare_compaction"]

_TURN_START_ROLES = frozenset({"user", "bashExecution"})
_CUTTABLE_ROLES = frozenset({"user", "assistant", "custom", "hookMessage", "bashExecution"})


def _is_turn_start(entry: SessionEntry) -> bool:
    if entry.type in ("custom_message", "branch_summary"):
        return True
    return entry.type == "message" and entry.role in _TURN_START_ROLES


def _is_valid_cut(entry: SessionEntry) -> bool:
    if entry.type in ("custom_message", "branch_summary"):
        return True
    return entry.type == "message" and entry.role in _CUTTABLE_ROLES


class CutPoint(Struct):
    first_kept_index: int  # index into the entries given to find_cut_point
    turn_start_index: int = -1  # start of the split turn, -1 when the cut is at a turn start
    is_split_turn: bool = False


def find_cut_point(
    entries: Sequence[SessionEntry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    messages: Sequence[Message | None] | None = None,
) -> CutPoint | None:
    """Where the kept part of ``entries[start:end]`` begins, or None to keep it all."""
    msgs = messages if messages is not None else [entry_message(e) for e in entries]
    cut = -1
    total = 0
    for i in range(end - 1, start - 1, -1):
        message = msgs[i]
        if message is None:
            continue
        total += estimate_tokens(message)
        if total >= keep_recent_tokens:
            for j in range(i, end):
                if _is_valid_cut(entries[j]):
                    cut = j
                    break
            break
    if cut <= start:
        return None
    # settings entries right before the cut stay with the kept part
    while cut > start and msgs[cut - 1] is None and entries[cut - 1].type != "compaction":
        cut -= 1
    first_message = cut
    while first_message < end and msgs[first_message] is None:
        first_message += 1
    if first_message >= end or _is_turn_start(entries[first_message]):
        return CutPoint(cut)
    for k in range(cut - 1, start - 1, -1):
        if _is_turn_start(entries[k]):
            return CutPoint(cut, turn_start_index=k, is_split_turn=True)
    return CutPoint(cut)


# -- preparation ----------------------------------------------------------------------


class CompactionPreparation(Struct):
    first_kept_entry_id: str
    messages_to_summarize: list[Message]
    turn_prefix_messages: list[Message]
    is_split_turn: bool
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings

    def to_dict(self) -> dict[str, Any]:
        return {
            "first_kept_entry_id": self.first_kept_entry_id,
            "messages_to_summarize": [m.to_dict() for m in self.messages_to_summarize],
            "turn_prefix_messages": [m.to_dict() for m in self.turn_prefix_messages],
            "is_split_turn": self.is_split_turn,
            "tokens_before": self.tokens_before,
            "previous_summary": self.previous_summary,
            "read_files": self.file_ops.read_files(),
            "modified_files": self.file_ops.modified_files(),
        }


def prepare_compaction(
    entries: Session | Sequence[SessionEntry], settings: CompactionSettings | None = None
) -> CompactionPreparation | None:
    """What to summarise and what to keep, for the branch ``entries`` (root first).

    Takes a Session (its current branch) or a branch. Returns None when there is
    nothing to compact (the branch ends with a compaction, or everything fits in
    ``keep_recent_tokens``).
    """
    settings = settings or CompactionSettings()
    path = entries.branch() if isinstance(entries, Session) else list(entries)
    if not path or path[-1].type == "compaction":
        return None
    previous_index = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            previous_index = i
            break
    # the entries of the current context: those kept by the previous compaction, then
    # everything after it
    if previous_index >= 0:
        previous = path[previous_index]
        first_kept = previous.data.get("firstKeptEntryId")
        begin = next((i for i in range(previous_index) if path[i].id == first_kept), previous_index)
        region = path[begin:previous_index] + path[previous_index + 1 :]
        previous_summary: str | None = str(previous.data.get("summary", ""))
    else:
        region = path
        previous_summary = None
    messages = [entry_message(e) for e in region]
    cut = find_cut_point(region, 0, len(region), settings.keep_recent_tokens, messages)
    if cut is None:
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    to_summarize = [m for m in messages[:history_end] if m is not None]
    prefix = (
        [m for m in messages[cut.turn_start_index : cut.first_kept_index] if m is not None]
        if cut.is_split_turn
        else []
    )
    if not to_summarize and not prefix:
        return None
    file_ops = FileOperations()
    if previous_index >= 0 and not path[previous_index].data.get("fromHook"):
        file_ops.add_details(path[previous_index].data.get("details"))
    file_ops.add_messages(to_summarize)
    file_ops.add_messages(prefix)
    return CompactionPreparation(
        first_kept_entry_id=region[cut.first_kept_index].id,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=estimate_context_tokens(
            build_context(path).messages, _reply_after(path, previous_index)
        ),
        previous_summary=previous_summary,
        file_ops=file_ops,
        settings=settings,
    )


def _reply_after(path: Sequence[SessionEntry], index: int) -> bool:
    """True when an assistant reply follows ``path[index]`` (its usage is current)."""
    return any(e.role == "assistant" for e in path[index + 1 :])

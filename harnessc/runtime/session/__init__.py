"""Sessions: the entry tree, the JSONL store, compaction, full-text index and replay."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harnessc.runtime.session.compaction import (
        BranchSummaryPreparation,
        BranchSummaryResult,
        CompactionError,
        CompactionPreparation,
        CompactionResult,
        CompactionSettings,
        CutPoint,
        FileOperations,
        NothingToCompactError,
        apply_compaction,
        build_branch_summary_prompt,
        build_summary_prompt,
        build_turn_prefix_prompt,
        compact,
        compact_harness,
        estimate_context_tokens,
        estimate_tokens,
        find_cut_point,
        generate_branch_summary,
        generate_summary,
        needs_compaction,
        prepare_branch_summary,
        prepare_compaction,
        serialize_conversation,
        should_compact,
    )
    from harnessc.runtime.session.index import (
        RefreshStats,
        SearchHit,
        SearchQueryError,
        SessionIndex,
        literal_query,
    )
    from harnessc.runtime.session.jsonl import SessionFileError, encode_line
    from harnessc.runtime.session.lock import SessionLockedError
    from harnessc.runtime.session.replay import (
        PauseState,
        PendingToolCall,
        ReplayedState,
        pending_state,
        record_pause,
        record_resume,
        replay_state,
    )
    from harnessc.runtime.session.repo import (
        JsonlSessionRepo,
        SessionMeta,
        SessionNotFoundError,
        SessionRepo,
        cwd_slug,
    )
    from harnessc.runtime.session.session import (
        Session,
        SessionContext,
        SessionEntry,
        SessionError,
        SessionHeader,
        SessionReadOnlyError,
        build_context,
    )
    from harnessc.runtime.session.tree import TreeNavigation, navigate_tree

# Public name -> the module defining it; imported on first use so that importing
# this package stays cheap for a one-shot agent run.
_EXPORTS: dict[str, str] = {
    "BranchSummaryPreparation": "harnessc.runtime.session.compaction",
    "BranchSummaryResult": "harnessc.runtime.session.compaction",
    "CompactionError": "harnessc.runtime.session.compaction",
    "CompactionPreparation": "harnessc.runtime.session.compaction",
    "CompactionResult": "harnessc.runtime.session.compaction",
    "CompactionSettings": "harnessc.runtime.session.compaction",
    "CutPoint": "harnessc.runtime.session.compaction",
    "FileOperations": "harnessc.runtime.session.compaction",
    "NothingToCompactError": "harnessc.runtime.session.compaction",
    "apply_compaction": "harnessc.runtime.session.compaction",
    "build_branch_summary_prompt": "harnessc.runtime.session.compaction",
    "build_summary_prompt": "harnessc.runtime.session.compaction",
    "build_turn_prefix_prompt": "harnessc.runtime.session.compaction",
    "compact": "harnessc.runtime.session.compaction",
    "compact_harness": "harnessc.runtime.session.compaction",
    "estimate_context_tokens": "harnessc.runtime.session.compaction",
    "estimate_tokens": "harnessc.runtime.session.compaction",
    "find_cut_point": "harnessc.runtime.session.compaction",
    "generate_branch_summary": "harnessc.runtime.session.compaction",
    "generate_summary": "harnessc.runtime.session.compaction",
    "needs_compaction": "harnessc.runtime.session.compaction",
    "prepare_branch_summary": "harnessc.runtime.session.compaction",
    "prepare_compaction": "harnessc.runtime.session.compaction",
    "serialize_conversation": "harnessc.runtime.session.compaction",
    "should_compact": "harnessc.runtime.session.compaction",
    "RefreshStats": "harnessc.runtime.session.index",
    "SearchHit": "harnessc.runtime.session.index",
    "SearchQueryError": "harnessc.runtime.session.index",
    "SessionIndex": "harnessc.runtime.session.index",
    "literal_query": "harnessc.runtime.session.index",
    "SessionFileError": "harnessc.runtime.session.jsonl",
    "encode_line": "harnessc.runtime.session.jsonl",
    "SessionLockedError": "harnessc.runtime.session.lock",
    "PauseState": "harnessc.runtime.session.replay",
    "PendingToolCall": "harnessc.runtime.session.replay",
    "ReplayedState": "harnessc.runtime.session.replay",
    "pending_state": "harnessc.runtime.session.replay",
    "record_pause": "harnessc.runtime.session.replay",
    "record_resume": "harnessc.runtime.session.replay",
    "replay_state": "harnessc.runtime.session.replay",
    "JsonlSessionRepo": "harnessc.runtime.session.repo",
    "SessionMeta": "harnessc.runtime.session.repo",
    "SessionNotFoundError": "harnessc.runtime.session.repo",
    "SessionRepo": "harnessc.runtime.session.repo",
    "cwd_slug": "harnessc.runtime.session.repo",
    "Session": "harnessc.runtime.session.session",
    "SessionContext": "harnessc.runtime.session.session",
    "SessionEntry": "harnessc.runtime.session.session",
    "SessionError": "harnessc.runtime.session.session",
    "SessionHeader": "harnessc.runtime.session.session",
    "SessionReadOnlyError": "harnessc.runtime.session.session",
    "build_context": "harnessc.runtime.session.session",
    "TreeNavigation": "harnessc.runtime.session.tree",
    "navigate_tree": "harnessc.runtime.session.tree",
}

__all__ = [
    "BranchSummaryPreparation",
    "BranchSummaryResult",
    "CompactionError",
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "CutPoint",
    "FileOperations",
    "JsonlSessionRepo",
    "NothingToCompactError",
    "PauseState",
    "PendingToolCall",
    "RefreshStats",
    "ReplayedState",
    "SearchHit",
    "SearchQueryError",
    "Session",
    "SessionContext",
    "SessionEntry",
    "SessionError",
    "SessionFileError",
    "SessionHeader",
    "SessionIndex",
    "SessionLockedError",
    "SessionMeta",
    "SessionNotFoundError",
    "SessionReadOnlyError",
    "SessionRepo",
    "TreeNavigation",
    "apply_compaction",
    "build_branch_summary_prompt",
    "build_context",
    "build_summary_prompt",
    "build_turn_prefix_prompt",
    "compact",
    "compact_harness",
    "cwd_slug",
    "encode_line",
    "estimate_context_tokens",
    "estimate_tokens",
    "find_cut_point",
    "generate_branch_summary",
    "generate_summary",
    "literal_query",
    "navigate_tree",
    "needs_compaction",
    "pending_state",
    "prepare_branch_summary",
    "prepare_compaction",
    "record_pause",
    "record_resume",
    "replay_state",
    "serialize_conversation",
    "should_compact",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

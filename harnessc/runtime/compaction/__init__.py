"""Compaction and branch summaries, as pi makes them (see docs/extensions.md).

One module per concern:

- ``trigger``: the settings, the errors, ``should_compact`` / ``needs_compaction``
  (context tokens past ``context_window - reserve_tokens``);
- ``cut_point``: ``find_cut_point`` and ``prepare_compaction`` (what is summarised,
  what is kept; a turn cut in two gets its prefix summarised on its own);
- ``file_ops``: the files the summarised part read and changed;
- ``prompts``: the conversation serialised as a document, and the summary prompts;
- ``summarize``: the model request, ``generate_summary``;
- ``apply``: ``apply_compaction`` (the ``compaction`` entry), ``compact`` and the
  harness's step ``compact_harness`` (``session_before_compact`` hooks may cancel or
  supply the compaction);
- ``branch_summary``: the summary of the branch the leaf leaves on a tree move.

Every public name stays importable from ``harnessc.runtime.compaction``; its
module is imported on the first use of the name (a run that never compacts loads
``trigger`` only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
    from harnessc.runtime.compaction.apply import apply_compaction, compact, compact_harness
    from harnessc.runtime.compaction.branch_summary import (
        BranchSummaryPreparation,
        BranchSummaryResult,
        generate_branch_summary,
        prepare_branch_summary,
    )
    from harnessc.runtime.compaction.cut_point import (
        CompactionPreparation,
        CutPoint,
        find_cut_point,
        prepare_compaction,
    )
    from harnessc.runtime.compaction.file_ops import FileOperations
    from harnessc.runtime.compaction.prompts import (
        BRANCH_SUMMARY_SYSTEM_PROMPT,
        SUMMARY_SYSTEM_PROMPT,
        TOOL_RESULT_MAX_CHARS,
        build_branch_summary_prompt,
        build_summary_prompt,
        build_turn_prefix_prompt,
        serialize_conversation,
    )
    from harnessc.runtime.compaction.summarize import CompactionResult, generate_summary
    from harnessc.runtime.compaction.trigger import (
        CompactionError,
        CompactionHost,
        CompactionSettings,
        NothingToCompactError,
        needs_compaction,
        should_compact,
    )
    from harnessc.runtime.core.message_size import estimate_context_tokens, estimate_tokens

_EXPORTS: dict[str, str] = {
    "estimate_context_tokens": "harnessc.runtime.core.message_size",
    "estimate_tokens": "harnessc.runtime.core.message_size",
    "apply_compaction": "harnessc.runtime.compaction.apply",
    "compact": "harnessc.runtime.compaction.apply",
    "compact_harness": "harnessc.runtime.compaction.apply",
    "BranchSummaryPreparation": "harnessc.runtime.compaction.branch_summary",
    "BranchSummaryResult": "harnessc.runtime.compaction.branch_summary",
    "generate_branch_summary": "harnessc.runtime.compaction.branch_summary",
    "prepare_branch_summary": "harnessc.runtime.compaction.branch_summary",
    "CompactionPreparation": "harnessc.runtime.compaction.cut_point",
    "CutPoint": "harnessc.runtime.compaction.cut_point",
    "find_cut_point": "harnessc.runtime.compaction.cut_point",
    "prepare_compaction": "harnessc.runtime.compaction.cut_point",
    "FileOperations": "harnessc.runtime.compaction.file_ops",
    "BRANCH_SUMMARY_SYSTEM_PROMPT": "harnessc.runtime.compaction.prompts",
    "SUMMARY_SYSTEM_PROMPT": "harnessc.runtime.compaction.prompts",
    "TOOL_RESULT_MAX_CHARS": "harnessc.runtime.compaction.prompts",
    "build_branch_summary_prompt": "harnessc.runtime.compaction.prompts",
    "build_summary_prompt": "harnessc.runtime.compaction.prompts",
    "build_turn_prefix_prompt": "harnessc.runtime.compaction.prompts",
    "serialize_conversation": "harnessc.runtime.compaction.prompts",
    "CompactionResult": "harnessc.runtime.compaction.summarize",
    "generate_summary": "harnessc.runtime.compaction.summarize",
    "CompactionError": "harnessc.runtime.compaction.trigger",
    "CompactionHost": "harnessc.runtime.compaction.trigger",
    "CompactionSettings": "harnessc.runtime.compaction.trigger",
    "NothingToCompactError": "harnessc.runtime.compaction.trigger",
    "needs_compaction": "harnessc.runtime.compaction.trigger",
    "should_compact": "harnessc.runtime.compaction.trigger",
}

__all__ = [
    "BRANCH_SUMMARY_SYSTEM_PROMPT",
    "SUMMARY_SYSTEM_PROMPT",
    "TOOL_RESULT_MAX_CHARS",
    "BranchSummaryPreparation",
    "BranchSummaryResult",
    "CompactionError",
    "CompactionHost",
    "CompactionPreparation",
    "CompactionResult",
    "CompactionSettings",
    "CutPoint",
    "FileOperations",
    "NothingToCompactError",
    "apply_compaction",
    "build_branch_summary_prompt",
    "build_summary_prompt",
    "build_turn_prefix_prompt",
    "compact",
    "compact_harness",
    "estimate_context_tokens",
    "estimate_tokens",
    "find_cut_point",
    "generate_branch_summary",
    "generate_summary",
    "needs_compaction",
    "prepare_branch_summary",
    "prepare_compaction",
    "serialize_conversation",
    "should_compact",
]

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)

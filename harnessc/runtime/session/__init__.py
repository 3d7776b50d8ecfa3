"""Sessions: the entry tree, the JSONL and PostgreSQL stores, the full-text index and replay.
Compaction (a model call) is ``runtime/compaction/``; tree moves are the agent's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
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
        SessionWriteError,
        build_context,
    )
    from harnessc.runtime.support.data_folder import DataFolder, resolve_folder

# Public name -> the module defining it; imported on first use so that importing
# this package stays cheap for a one-shot agent run.
_EXPORTS: dict[str, str] = {
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
    "SessionWriteError": "harnessc.runtime.session.session",
    "build_context": "harnessc.runtime.session.session",
    "DataFolder": "harnessc.runtime.support.data_folder",
    "resolve_folder": "harnessc.runtime.support.data_folder",
}

__all__ = [
    "DataFolder",
    "JsonlSessionRepo",
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
    "SessionWriteError",
    "build_context",
    "cwd_slug",
    "encode_line",
    "literal_query",
    "pending_state",
    "record_pause",
    "record_resume",
    "replay_state",
    "resolve_folder",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)

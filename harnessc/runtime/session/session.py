"""A session: an append-only tree of entries in the pi v3 format.

Entries keep their JSON form (see ``entries``), so a file written by pi round-trips
unchanged; message dicts are parsed into Message objects only when a context is built
(see ``context``). Storage is pluggable: ``Session`` keeps entries in memory and hands
every new line to a ``SessionStorage`` (the JSONL store writes it to disk; ``None``
keeps the session in memory only).

The leaf (current position) follows pi's rule, the last entry of the file, so pi and
harnessc continue a file at the same place: a tree move without a summary appends a
``custom`` entry ``harnessc.leaf`` under the new position (its ``parentId`` is the
target). harnessc takes the target as its leaf; pi takes the marker, whose path is the
target's, so both build the same context and new entries of either land on that branch.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Protocol

from harnessc.runtime.core.messages import Message
from harnessc.runtime.session.context import SessionContext, build_context, entry_message
from harnessc.runtime.session.entries import (
    ACTIVE_TOOLS_TYPE,
    ENTRY_TYPES,
    LEAF_MARKER_TYPE,
    LEGACY_ENTRY_TYPES,
    SESSION_VERSION,
    SessionEntry,
    SessionError,
    SessionHeader,
    SessionReadOnlyError,
    SessionWriteError,
    iso_now,
    iso_to_ms,
    no_gc,
)
from harnessc.runtime.session.message_parse import (
    BRANCH_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_PREFIX,
    branch_summary_message,
    compaction_summary_message,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "ENTRY_TYPES",
    "LEGACY_ENTRY_TYPES",
    "SESSION_VERSION",
    "Session",
    "SessionContext",
    "SessionEntry",
    "SessionError",
    "SessionHeader",
    "SessionReadOnlyError",
    "SessionStorage",
    "SessionWriteError",
    "branch_summary_message",
    "build_context",
    "compaction_summary_message",
    "entry_message",
    "iso_now",
    "iso_to_ms",
    "no_gc",
]

# Entry ids: a generator of the process's own (seeding ``random`` does not repeat them).
_ids = random.Random()


class SessionStorage(Protocol):
    """Where a session's lines go. The JSONL store appends them to a file."""

    def append(self, line: dict[str, Any]) -> None: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


class Session:
    """The entries of one session, the current leaf, and the model context they build."""

    __slots__ = (
        "header",
        "storage",
        "path",
        "diagnostics",
        "_entries",
        "_by_id",
        "_leaf_ids",
        "_markers",
        "_leaf_id",
        "__weakref__",
    )

    def __init__(
        self,
        header: SessionHeader | None = None,
        entries: Iterable[SessionEntry] = (),
        storage: SessionStorage | None = None,
        path: str | None = None,
        leaf_id: str | None = None,
        diagnostics: list[str] | None = None,
    ) -> None:
        self.header = header or SessionHeader.new()
        self.storage = storage
        self.path = path
        self.diagnostics: list[str] = list(diagnostics or [])
        self._entries: list[SessionEntry] = []
        self._by_id: dict[str, SessionEntry] = {}
        # legacy ``leaf`` entries (not tree nodes): id -> parentId, for entries pi appended
        # under one (pi takes it for an ordinary entry on the branch it ends)
        # Made at their first entry (most sessions have none of either).
        self._leaf_ids: dict[str, str | None] | None = None
        self._markers: dict[str, None] | None = None  # ids of ``harnessc.leaf`` entries
        self._leaf_id: str | None = None
        for entry in entries:
            self._index(entry)
        if leaf_id is not None:
            if leaf_id in self._by_id:
                self._leaf_id = leaf_id
            else:  # pi: an unknown leaf falls back to the last entry
                self.diagnostics.append(f"unknown leaf {leaf_id!r}: the last entry is the leaf")

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, entries={len(self._entries)}, path={self.path!r})"

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- reading --------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def cwd(self) -> str:
        return self.header.cwd

    @property
    def leaf_id(self) -> str | None:
        return self._leaf_id

    @property
    def leaf(self) -> SessionEntry | None:
        """The entry at the current position (None before the first entry)."""
        return None if self._leaf_id is None else self._by_id.get(self._leaf_id)

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[SessionEntry]:
        """Every entry in file order (tree-move records included)."""
        return list(self._entries)

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._by_id.get(entry_id)

    def children(self, entry_id: str | None) -> list[SessionEntry]:
        markers = self._markers or {}
        return [
            e
            for e in self._entries
            if e.parent_id == entry_id and e.type != "leaf" and e.id not in markers
        ]

    def is_move_record(self, entry: SessionEntry) -> bool:
        """True for the entries that record a tree move (no content of their own)."""
        return entry.type == "leaf" or (self._markers is not None and entry.id in self._markers)

    def branch(self, entry_id: str | None = None) -> list[SessionEntry]:
        """The path from the root to ``entry_id`` (default: the leaf), root first."""
        current = self._leaf_id if entry_id is None else entry_id
        by_id = self._by_id
        path: list[SessionEntry] = []
        seen: set[str] = set()
        while current is not None and current not in seen:
            seen.add(current)
            entry = by_id.get(current)
            if entry is None:
                if self._leaf_ids and current in self._leaf_ids:  # pi's legacy leaf entry
                    current = self._leaf_ids[current]
                    continue
                break
            path.append(entry)
            current = entry.parent_id
        path.reverse()
        return path

    def labels(self) -> dict[str, str]:
        """Entry id -> label, the latest label entry for each target winning."""
        out: dict[str, str] = {}
        for entry in self._entries:
            if entry.type == "label":
                target, label = entry.data.get("targetId"), entry.data.get("label")
                if isinstance(target, str):
                    if label:
                        out[target] = str(label)
                    else:
                        out.pop(target, None)
        return out

    def label(self, entry_id: str) -> str | None:
        return self.labels().get(entry_id)

    @property
    def name(self) -> str | None:
        """The display name from the latest ``session_info`` entry."""
        name: str | None = None
        for entry in self._entries:
            if entry.type == "session_info":
                value = entry.data.get("name")
                name = str(value) if value else None
        return name

    def context(self, entry_id: str | None = None) -> SessionContext:
        """The model context of the branch ending at ``entry_id`` (default: the leaf;
        an id not in the session falls back to the leaf, as pi falls back to the last
        entry)."""
        if entry_id is not None and entry_id not in self._by_id:
            entry_id = None
        return build_context(self.branch(entry_id))

    # -- writing --------------------------------------------------------------

    def new_entry_id(self) -> str:
        while True:
            # Unique within the session, not secret: no system call per entry.
            candidate = f"{_ids.getrandbits(32):08x}"
            if candidate not in self._by_id and not (
                self._leaf_ids and candidate in self._leaf_ids
            ):
                return candidate

    def append(self, type: str, **fields: Any) -> SessionEntry:
        """Append an entry of ``type`` (one of pi's ``ENTRY_TYPES``) under the leaf;
        ``fields`` use the JSON (camelCase) keys."""
        if type not in ENTRY_TYPES:
            raise ValueError(f"unknown entry type {type!r} (pi's types: {sorted(ENTRY_TYPES)})")
        return self._append_new(
            SessionEntry(type, self.new_entry_id(), self._leaf_id, time.time(), fields)
        )

    def _append_new(self, entry: SessionEntry) -> SessionEntry:
        if self.storage is not None:
            self.storage.append(entry.to_dict())
        self._index(entry)
        return entry

    def append_entry(self, entry: SessionEntry) -> SessionEntry:
        """Append a ready entry as is (ids and parent kept), e.g. when copying a branch.

        A legacy ``active_tools_change`` entry is written as its ``custom`` form."""
        if entry.type == "active_tools_change":
            names = entry.data.get("activeToolNames")
            entry = SessionEntry(
                "custom",
                entry.id,
                entry.parent_id,
                entry.timestamp,
                {"customType": ACTIVE_TOOLS_TYPE, "data": {"activeToolNames": names}},
            )
        if entry.type not in ENTRY_TYPES:
            raise ValueError(f"unknown entry type {entry.type!r}")
        if entry.id in self._by_id or (self._leaf_ids and entry.id in self._leaf_ids):
            raise ValueError(f"duplicate entry id {entry.id!r}")
        return self._append_new(entry)

    def append_message(self, message: Message) -> SessionEntry:
        """Append a ``message`` entry; the entry keeps ``message`` (see ``SessionEntry``)."""
        entry_id, now = self.new_entry_id(), time.time()
        return self._append_new(SessionEntry("message", entry_id, self._leaf_id, now, live=message))

    def append_thinking_level_change(self, level: str) -> SessionEntry:
        return self.append(
            "thinking_level_change", thinkingLevel=str(getattr(level, "value", level))
        )

    def append_model_change(self, provider: str, model_id: str) -> SessionEntry:
        return self.append("model_change", provider=provider, modelId=model_id)

    def append_active_tools_change(self, names: Sequence[str]) -> SessionEntry:
        """Record the active tools (a ``custom`` entry ``harnessc.active_tools``)."""
        return self.append_custom(ACTIVE_TOOLS_TYPE, {"activeToolNames": list(names)})

    def append_custom(self, custom_type: str, data: Any = None) -> SessionEntry:
        return self.append("custom", customType=custom_type, data=data)

    def append_custom_message(
        self, custom_type: str, content: Any, display: bool = True, details: Any = None
    ) -> SessionEntry:
        if isinstance(content, list):
            content = [c.to_dict() if hasattr(c, "to_dict") else c for c in content]
        fields: dict[str, Any] = {"customType": custom_type, "content": content, "display": display}
        if details is not None:
            fields["details"] = details
        return self.append("custom_message", **fields)

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str,
        tokens_before: int,
        details: Any = None,
        from_hook: bool = False,
    ) -> SessionEntry:
        fields: dict[str, Any] = {
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
        }
        if details is not None:
            fields["details"] = details
        if from_hook:
            fields["fromHook"] = True
        return self.append("compaction", **fields)

    def append_branch_summary(
        self, from_id: str, summary: str, details: Any = None, from_hook: bool = False
    ) -> SessionEntry:
        fields: dict[str, Any] = {"fromId": from_id, "summary": summary}
        if details is not None:
            fields["details"] = details
        if from_hook:
            fields["fromHook"] = True
        return self.append("branch_summary", **fields)

    def append_label(self, target_id: str, label: str | None) -> SessionEntry:
        if target_id not in self._by_id:
            raise KeyError(f"no entry {target_id!r} in session {self.id}")
        return self.append("label", targetId=target_id, label=label or None)

    def set_label(self, target_id: str, label: str | None) -> SessionEntry:
        """Label an entry (None or "" clears its label)."""
        return self.append_label(target_id, label)

    def append_session_info(self, name: str) -> SessionEntry:
        return self.append("session_info", name=name)

    def set_name(self, name: str) -> SessionEntry:
        return self.append_session_info(name)

    def move_to(
        self,
        entry_id: str | None,
        summary: str | None = None,
        details: Any = None,
        from_hook: bool = False,
    ) -> SessionEntry | None:
        """Move the leaf to ``entry_id``; optionally summarise the old branch.

        With a summary, a ``branch_summary`` entry (``fromId`` = the old leaf) is appended
        under the new position and becomes the leaf; it is returned. Without one, a
        ``custom`` entry ``harnessc.leaf`` is appended under the new position (see the
        module docstring) and the leaf is ``entry_id``.
        """
        if entry_id is not None and entry_id not in self._by_id:
            raise KeyError(f"no entry {entry_id!r} in session {self.id}")
        old_leaf = self._leaf_id
        if summary is not None and old_leaf is not None:
            self._leaf_id = entry_id
            try:
                return self.append_branch_summary(old_leaf, summary, details, from_hook)
            except BaseException:
                self._leaf_id = old_leaf
                raise
        self._leaf_id = entry_id
        try:
            self.append_custom(LEAF_MARKER_TYPE, {"targetId": entry_id})
        except BaseException:
            self._leaf_id = old_leaf
            raise
        return None

    def sync(self) -> None:
        """Make every appended entry durable (fsync); the harness calls it after each turn."""
        if self.storage is not None:
            self.storage.sync()

    async def sync_off_loop(self) -> None:
        """``sync`` for the end of a turn on the event loop: a session file's fsync runs
        on a session sync thread (``file_sync``), grouped with other sessions'; a
        storage without a file (PostgreSQL) syncs in place."""
        storage = self.storage
        if storage is None:
            return
        off_loop = getattr(storage, "sync_off_loop", None)  # the JSONL store's
        if off_loop is not None:
            await off_loop()
        elif self.path is not None:  # a file behind another storage (a durable run's)
            from harnessc.runtime.session.file_sync import sync_off_loop

            await sync_off_loop(storage.sync)
        else:
            storage.sync()

    def close(self) -> None:
        if self.storage is not None:
            self.storage.close()

    # -- internals ------------------------------------------------------------

    def _index(self, entry: SessionEntry) -> None:
        self._entries.append(entry)
        if entry.type == "leaf":
            if self._leaf_ids is None:
                self._leaf_ids = {}
            self._leaf_ids[entry.id] = entry.parent_id
            target = entry.data.get("targetId")
            if target is None:
                self._leaf_id = None
            elif isinstance(target, str) and target in self._by_id:
                self._leaf_id = target
            # a target that is not in the session (lost line) leaves the leaf where it was
            return
        self._by_id[entry.id] = entry
        if entry.type == "custom" and entry.data.get("customType") == LEAF_MARKER_TYPE:
            if self._markers is None:
                self._markers = {}
            self._markers[entry.id] = None
            self._leaf_id = entry.parent_id if entry.parent_id in self._by_id else None
            return
        self._leaf_id = entry.id

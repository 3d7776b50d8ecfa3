"""A session: an append-only tree of entries in the pi v3 format (seed 000 ``Session``).

Entries keep their JSON form (``SessionEntry.data`` holds every field but the four
common ones), so a file written by pi round-trips unchanged; message dicts are parsed
into Message objects only when a context is built. Storage is pluggable: ``Session``
keeps entries in memory and hands every new line to a ``SessionStorage`` (the JSONL
store writes it to disk; ``None`` keeps the session in memory only).
"""

from __future__ import annotations

import gc
import secrets
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Protocol

from harnessc.runtime.messages import (
    CustomMessage,
    Message,
    TextContent,
    UserMessage,
    message_from_dict,
)

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "ENTRY_TYPES",
    "SESSION_VERSION",
    "Session",
    "SessionContext",
    "SessionEntry",
    "SessionError",
    "SessionHeader",
    "SessionReadOnlyError",
    "SessionStorage",
    "build_context",
    "entry_message",
    "iso_now",
    "iso_to_ms",
    "no_gc",
]

SESSION_VERSION = 3

ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "active_tools_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "leaf",
    }
)

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
)
BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:"
)

_COMMON_KEYS = ("type", "id", "parentId", "timestamp")


class SessionError(Exception):
    """A session cannot be opened, found or written."""


class SessionReadOnlyError(SessionError):
    """An append to a session opened read-only."""


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects at once.

    Loading a long session creates hundreds of thousands of dicts and lists; without
    this, collections triggered midway make open + context two to four times slower.
    The previous state is restored (nested and concurrent uses are harmless).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def iso_now() -> str:
    """An ISO-8601 UTC timestamp with milliseconds, as pi writes them."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


@dataclass(slots=True)
class SessionHeader:
    id: str
    timestamp: str
    cwd: str = ""
    version: int = SESSION_VERSION
    parent_session: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "session",
            "version": self.version,
            "id": self.id,
            "timestamp": self.timestamp,
            "cwd": self.cwd,
        }
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @staticmethod
    def new(
        cwd: str = "",
        metadata: dict[str, Any] | None = None,
        parent_session: str | None = None,
    ) -> SessionHeader:
        return SessionHeader(
            id=str(uuid.uuid4()),
            timestamp=iso_now(),
            cwd=cwd,
            parent_session=parent_session,
            metadata=dict(metadata or {}),
        )

    @staticmethod
    def from_dict(data: dict[str, Any]) -> SessionHeader:
        if (
            not isinstance(data, dict)
            or data.get("type") != "session"
            or not isinstance(data.get("id"), str)
        ):
            raise ValueError("not a session header line")
        meta = data.get("metadata")
        parent = data.get("parentSession")
        version = data.get("version")
        return SessionHeader(
            id=data["id"],
            timestamp=str(data.get("timestamp", "")),
            cwd=str(data.get("cwd", "")),
            version=version if isinstance(version, int) else 1,
            parent_session=parent if isinstance(parent, str) else None,
            metadata=meta if isinstance(meta, dict) else {},
        )


@dataclass(slots=True)
class SessionEntry:
    type: str
    id: str
    parent_id: str | None
    timestamp: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "id": self.id,
            "parentId": self.parent_id,
            "timestamp": self.timestamp,
        }
        out.update(self.data)
        return out

    @staticmethod
    def from_dict(data: dict[str, Any]) -> SessionEntry:
        """An entry from its JSON form (``data`` is not modified)."""
        return SessionEntry.from_json(dict(data))

    @staticmethod
    def from_json(data: dict[str, Any]) -> SessionEntry:
        """An entry from a freshly parsed JSON dict, which it takes over (no copy)."""
        if not isinstance(data, dict):
            raise ValueError("an entry must be a JSON object")
        kind = data.pop("type", None)
        entry_id = data.pop("id", None)
        parent = data.pop("parentId", None)
        timestamp = data.pop("timestamp", "")
        if type(kind) is not str or type(entry_id) is not str:
            raise ValueError("an entry needs a string type and id")
        if parent is not None and type(parent) is not str:
            raise ValueError("parentId must be a string or null")
        return SessionEntry(
            kind,
            entry_id,
            parent,
            timestamp if type(timestamp) is str else str(timestamp),
            data,
        )

    @property
    def message(self) -> Message | None:
        """The message of a ``message`` entry, else None."""
        if self.type != "message":
            return None
        raw = self.data.get("message")
        if not isinstance(raw, dict):
            return None
        return _parse_message(raw)

    @property
    def role(self) -> str | None:
        """The role of a ``message`` entry's message without parsing it."""
        if self.type != "message":
            return None
        raw = self.data.get("message")
        role = raw.get("role") if isinstance(raw, dict) else None
        return role if isinstance(role, str) else None


@dataclass(slots=True)
class SessionContext:
    """What the model sees, plus the settings recorded on the current branch."""

    messages: list[Message]
    thinking_level: str | None = None
    model: tuple[str, str] | None = None  # (provider, model id)
    active_tool_names: list[str] | None = None
    entry_ids: list[str | None] = field(default_factory=list)  # entry behind each message


class SessionStorage(Protocol):
    """Where a session's lines go. The JSONL store appends them to a file."""

    def append(self, line: dict[str, Any]) -> None: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


class Session:
    """The entries of one session, the current leaf, and the model context they build."""

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
        self._leaf_ids: set[str] = set()  # ids of ``leaf`` entries (not tree nodes)
        self._leaf_id: str | None = None
        for entry in entries:
            self._index(entry)
        if leaf_id is not None:
            self._leaf_id = leaf_id

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
        """Every entry in file order (``leaf`` moves included)."""
        return list(self._entries)

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._by_id.get(entry_id)

    def children(self, entry_id: str | None) -> list[SessionEntry]:
        return [e for e in self._entries if e.parent_id == entry_id and e.type != "leaf"]

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
        """The model context of the branch ending at ``entry_id`` (default: the leaf)."""
        return build_context(self.branch(entry_id))

    # -- writing --------------------------------------------------------------

    def new_entry_id(self) -> str:
        while True:
            candidate = secrets.token_hex(4)
            if candidate not in self._by_id and candidate not in self._leaf_ids:
                return candidate

    def append(self, type: str, **fields: Any) -> SessionEntry:
        """Append an entry of ``type`` under the leaf; ``fields`` use the JSON (camelCase) keys."""
        if type not in ENTRY_TYPES:
            raise ValueError(f"unknown entry type {type!r}")
        entry = SessionEntry(
            type=type,
            id=self.new_entry_id(),
            parent_id=self._leaf_id,
            timestamp=iso_now(),
            data=fields,
        )
        if self.storage is not None:
            self.storage.append(entry.to_dict())
        self._index(entry)
        return entry

    def append_entry(self, entry: SessionEntry) -> SessionEntry:
        """Append a ready entry as is (ids and parent kept), e.g. when copying a branch."""
        if entry.type not in ENTRY_TYPES:
            raise ValueError(f"unknown entry type {entry.type!r}")
        if entry.id in self._by_id or entry.id in self._leaf_ids:
            raise ValueError(f"duplicate entry id {entry.id!r}")
        if self.storage is not None:
            self.storage.append(entry.to_dict())
        self._index(entry)
        return entry

    def append_message(self, message: Message) -> SessionEntry:
        return self.append("message", message=message.to_dict())

    def append_thinking_level_change(self, level: str) -> SessionEntry:
        return self.append(
            "thinking_level_change", thinkingLevel=str(getattr(level, "value", level))
        )

    def append_model_change(self, provider: str, model_id: str) -> SessionEntry:
        return self.append("model_change", provider=provider, modelId=model_id)

    def append_active_tools_change(self, names: Sequence[str]) -> SessionEntry:
        return self.append("active_tools_change", activeToolNames=list(names))

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
        """Move the leaf to ``entry_id`` (a ``leaf`` entry); optionally summarise the old branch.

        With a summary, a ``branch_summary`` entry (``fromId`` = the old leaf) is appended
        under the new position and becomes the leaf; it is returned.
        """
        if entry_id is not None and entry_id not in self._by_id:
            raise KeyError(f"no entry {entry_id!r} in session {self.id}")
        old_leaf = self._leaf_id
        self.append("leaf", targetId=entry_id)
        if summary is not None and old_leaf is not None:
            return self.append_branch_summary(old_leaf, summary, details, from_hook)
        return None

    def sync(self) -> None:
        """Make every appended entry durable (fsync); the harness calls it after each turn."""
        if self.storage is not None:
            self.storage.sync()

    def close(self) -> None:
        if self.storage is not None:
            self.storage.close()

    # -- internals ------------------------------------------------------------

    def _index(self, entry: SessionEntry) -> None:
        self._entries.append(entry)
        if entry.type == "leaf":
            self._leaf_ids.add(entry.id)
            target = entry.data.get("targetId")
            if target is None:
                self._leaf_id = None
            elif isinstance(target, str) and target in self._by_id:
                self._leaf_id = target
            # a target that is not in the session (lost line) leaves the leaf where it was
            return
        self._by_id[entry.id] = entry
        self._leaf_id = entry.id


# -- context ------------------------------------------------------------------


def build_context(path: Sequence[SessionEntry]) -> SessionContext:
    """The model context of a root-first path: cut at the latest compaction
    (its summary, then the kept entries from ``firstKeptEntryId``), settings taken from
    the whole path."""
    with no_gc():
        return _build_context(path)


def _build_context(path: Sequence[SessionEntry]) -> SessionContext:
    ctx = SessionContext(messages=[])
    compaction_index = -1
    for i, entry in enumerate(path):
        kind = entry.type
        if kind == "message" or kind == "custom" or kind == "label":
            continue
        if kind == "compaction":
            compaction_index = i
        elif kind == "thinking_level_change":
            level = entry.data.get("thinkingLevel")
            ctx.thinking_level = level if isinstance(level, str) else None
        elif kind == "model_change":
            ctx.model = (str(entry.data.get("provider", "")), str(entry.data.get("modelId", "")))
        elif kind == "active_tools_change":
            names = entry.data.get("activeToolNames")
            ctx.active_tool_names = [str(n) for n in names] if isinstance(names, list) else None

    messages = ctx.messages
    ids = ctx.entry_ids

    def add(entry: SessionEntry) -> None:
        message = entry_message(entry)
        if message is not None:
            messages.append(message)
            ids.append(entry.id)

    if compaction_index < 0:
        for entry in path:
            add(entry)
        return ctx
    compaction = path[compaction_index]
    messages.append(
        compaction_summary_message(
            str(compaction.data.get("summary", "")), iso_to_ms(compaction.timestamp)
        )
    )
    ids.append(compaction.id)
    first_kept = compaction.data.get("firstKeptEntryId")
    keeping = False
    for entry in path[:compaction_index]:
        if entry.id == first_kept:
            keeping = True
        if keeping:
            add(entry)
    for entry in path[compaction_index + 1 :]:
        add(entry)
    return ctx


def iso_to_ms(timestamp: str) -> int:
    """Milliseconds since the epoch of an ISO timestamp (0 when it does not parse)."""
    try:
        return int(datetime.fromisoformat(timestamp).timestamp() * 1000)
    except (ValueError, TypeError):
        return 0


def compaction_summary_message(summary: str, timestamp: int = 0) -> CustomMessage:
    return CustomMessage(
        custom_type="compaction_summary",
        content=f"{COMPACTION_SUMMARY_PREFIX}\n\n<summary>\n{summary}\n</summary>",
        display=False,
        timestamp=timestamp,
    )


def branch_summary_message(summary: str, timestamp: int = 0) -> CustomMessage:
    return CustomMessage(
        custom_type="branch_summary",
        content=f"{BRANCH_SUMMARY_PREFIX}\n\n<summary>\n{summary}\n</summary>",
        display=False,
        timestamp=timestamp,
    )


def entry_message(entry: SessionEntry) -> Message | None:
    """The message an entry contributes to the model context, if any.

    ``message`` entries give their message, ``custom_message`` entries a CustomMessage,
    ``branch_summary`` entries a summary message; every other type gives None.
    """
    kind = entry.type
    if kind == "message":
        return entry.message
    if kind == "custom_message":
        content = entry.data.get("content", "")
        try:
            parsed = message_from_dict({"role": "custom", "content": content})
        except (ValueError, TypeError, AttributeError):
            return None
        if not isinstance(parsed, CustomMessage):
            return None
        return CustomMessage(
            custom_type=str(entry.data.get("customType", "")),
            content=parsed.content,
            display=bool(entry.data.get("display", True)),
            details=entry.data.get("details"),
            timestamp=iso_to_ms(entry.timestamp),
        )
    if kind == "branch_summary":
        return branch_summary_message(
            str(entry.data.get("summary", "")), iso_to_ms(entry.timestamp)
        )
    return None


def _parse_message(raw: dict[str, Any]) -> Message | None:
    role = raw.get("role")
    try:
        if role == "bashExecution":  # pi's "!command" runs: the model sees them as user text
            return _bash_execution_message(raw)
        if role == "hookMessage":  # pi v2 name of the custom role
            raw = {**raw, "role": "custom"}
        elif role == "branchSummary":
            return branch_summary_message(str(raw.get("summary", "")), _ms(raw))
        elif role == "compactionSummary":
            return compaction_summary_message(str(raw.get("summary", "")), _ms(raw))
        return message_from_dict(raw)
    except (ValueError, TypeError, AttributeError, OverflowError):  # e.g. "timestamp": Infinity
        return None


def _bash_execution_message(raw: dict[str, Any]) -> Message | None:
    if raw.get("excludeFromContext"):
        return None
    text = f"Ran `{raw.get('command', '')}`\n"
    output = raw.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    if raw.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif raw.get("exitCode") not in (None, 0):
        text += f"\n\nCommand exited with code {raw.get('exitCode')}"
    return UserMessage(content=[TextContent(text)], timestamp=_ms(raw))


def _ms(raw: dict[str, Any]) -> int:
    ts = raw.get("timestamp")
    return int(ts) if isinstance(ts, int | float) else 0

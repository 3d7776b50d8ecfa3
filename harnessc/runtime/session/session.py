"""A session: an append-only tree of entries in the pi v3 format (seed 000 ``Session``).

Entries keep their JSON form (``SessionEntry.data`` holds every field but the four
common ones), so a file written by pi round-trips unchanged. Storage is pluggable:
``Session`` keeps entries in memory and hands every new line to a ``SessionStorage``
(the JSONL store writes it to disk; ``None`` keeps the session in memory only).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from harnessc.runtime.messages import CustomMessage, Message, UserMessage, message_from_dict

__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_PREFIX",
    "ENTRY_TYPES",
    "Session",
    "SessionContext",
    "SessionEntry",
    "SessionHeader",
    "SessionStorage",
    "iso_now",
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
    def new(cwd: str = "", metadata: dict[str, Any] | None = None) -> SessionHeader:
        return SessionHeader(
            id=str(uuid.uuid4()), timestamp=iso_now(), cwd=cwd, metadata=dict(metadata or {})
        )

    @staticmethod
    def from_dict(data: dict[str, Any]) -> SessionHeader:
        if data.get("type") != "session" or not isinstance(data.get("id"), str):
            raise ValueError("not a session header line")
        meta = data.get("metadata")
        parent = data.get("parentSession")
        return SessionHeader(
            id=data["id"],
            timestamp=str(data.get("timestamp", "")),
            cwd=str(data.get("cwd", "")),
            version=int(data.get("version", 1)) if isinstance(data.get("version"), int) else 1,
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
        kind = data.get("type")
        entry_id = data.get("id")
        if not isinstance(kind, str) or not isinstance(entry_id, str):
            raise ValueError("an entry needs a string type and id")
        parent = data.get("parentId")
        if parent is not None and not isinstance(parent, str):
            raise ValueError("parentId must be a string or null")
        rest = {k: v for k, v in data.items() if k not in ("type", "id", "parentId", "timestamp")}
        return SessionEntry(
            type=kind,
            id=entry_id,
            parent_id=parent,
            timestamp=str(data.get("timestamp", "")),
            data=rest,
        )

    @property
    def message(self) -> Message | None:
        """The message of a ``message`` entry, else None."""
        if self.type != "message":
            return None
        raw = self.data.get("message")
        if not isinstance(raw, dict):
            return None
        try:
            return message_from_dict(raw)
        except (ValueError, TypeError):
            return None


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
        self._leaf_id: str | None = None
        for entry in entries:
            self._index(entry)
        if leaf_id is not None:
            self._leaf_id = leaf_id

    # -- reading --------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.header.id

    @property
    def leaf_id(self) -> str | None:
        return self._leaf_id

    def entries(self) -> list[SessionEntry]:
        return list(self._entries)

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._by_id.get(entry_id)

    def children(self, entry_id: str | None) -> list[SessionEntry]:
        return [e for e in self._entries if e.parent_id == entry_id and e.type != "leaf"]

    def branch(self, entry_id: str | None = None) -> list[SessionEntry]:
        """The path from the root to ``entry_id`` (default: the leaf), root first."""
        current = self._leaf_id if entry_id is None else entry_id
        path: list[SessionEntry] = []
        seen: set[str] = set()
        while current is not None and current not in seen:
            seen.add(current)
            entry = self._by_id.get(current)
            if entry is None:
                break
            path.append(entry)
            current = entry.parent_id
        path.reverse()
        return path

    def labels(self) -> dict[str, str]:
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

    @property
    def name(self) -> str | None:
        name: str | None = None
        for entry in self._entries:
            if entry.type == "session_info":
                value = entry.data.get("name")
                name = str(value) if value else None
        return name

    def context(self, entry_id: str | None = None) -> SessionContext:
        """The model context of the branch ending at ``entry_id`` (default: the leaf)."""
        path = self.branch(entry_id)
        ctx = SessionContext(messages=[])
        compaction_index = -1
        for i, entry in enumerate(path):
            if entry.type == "compaction":
                compaction_index = i
            elif entry.type == "thinking_level_change":
                ctx.thinking_level = entry.data.get("thinkingLevel")
            elif entry.type == "model_change":
                ctx.model = (str(entry.data.get("provider", "")), str(entry.data.get("modelId", "")))
            elif entry.type == "active_tools_change":
                names = entry.data.get("activeToolNames")
                ctx.active_tool_names = list(names) if isinstance(names, list) else None

        def add(entry: SessionEntry) -> None:
            message = _entry_message(entry)
            if message is not None:
                ctx.messages.append(message)
                ctx.entry_ids.append(entry.id)

        if compaction_index < 0:
            for entry in path:
                add(entry)
            return ctx
        compaction = path[compaction_index]
        ctx.messages.append(
            CustomMessage(
                custom_type="compaction_summary",
                content=f"{COMPACTION_SUMMARY_PREFIX}\n\n<summary>\n{compaction.data.get('summary', '')}\n</summary>",
                display=False,
            )
        )
        ctx.entry_ids.append(compaction.id)
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

    # -- writing --------------------------------------------------------------

    def new_entry_id(self) -> str:
        while True:
            candidate = secrets.token_hex(4)
            if candidate not in self._by_id:
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

    def append_message(self, message: Message) -> SessionEntry:
        return self.append("message", message=message.to_dict())

    def append_thinking_level_change(self, level: str) -> SessionEntry:
        return self.append("thinking_level_change", thinkingLevel=level)

    def append_model_change(self, provider: str, model_id: str) -> SessionEntry:
        return self.append("model_change", provider=provider, modelId=model_id)

    def append_active_tools_change(self, names: list[str]) -> SessionEntry:
        return self.append("active_tools_change", activeToolNames=list(names))

    def append_custom(self, custom_type: str, data: Any) -> SessionEntry:
        return self.append("custom", customType=custom_type, data=data)

    def append_custom_message(
        self, custom_type: str, content: Any, display: bool = True, details: Any = None
    ) -> SessionEntry:
        fields: dict[str, Any] = {"customType": custom_type, "content": content, "display": display}
        if details is not None:
            fields["details"] = details
        return self.append("custom_message", **fields)

    def append_compaction(
        self, summary: str, first_kept_entry_id: str, tokens_before: int, details: Any = None
    ) -> SessionEntry:
        fields: dict[str, Any] = {
            "summary": summary,
            "firstKeptEntryId": first_kept_entry_id,
            "tokensBefore": tokens_before,
        }
        if details is not None:
            fields["details"] = details
        return self.append("compaction", **fields)

    def append_branch_summary(self, from_id: str, summary: str, details: Any = None) -> SessionEntry:
        fields: dict[str, Any] = {"fromId": from_id, "summary": summary}
        if details is not None:
            fields["details"] = details
        return self.append("branch_summary", **fields)

    def append_label(self, target_id: str, label: str | None) -> SessionEntry:
        return self.append("label", targetId=target_id, label=label)

    def append_session_info(self, name: str) -> SessionEntry:
        return self.append("session_info", name=name)

    def move_to(self, entry_id: str | None, summary: str | None = None) -> SessionEntry | None:
        """Move the leaf to ``entry_id`` (a ``leaf`` entry); optionally summarise the old branch.

        Returns the branch_summary entry when a summary was written.
        """
        if entry_id is not None and entry_id not in self._by_id:
            raise KeyError(f"no entry {entry_id!r} in session {self.id}")
        old_leaf = self._leaf_id
        self.append("leaf", targetId=entry_id)
        if summary is not None and old_leaf is not None:
            return self.append_branch_summary(old_leaf, summary)
        return None

    def sync(self) -> None:
        if self.storage is not None:
            self.storage.sync()

    def close(self) -> None:
        if self.storage is not None:
            self.storage.close()

    # -- internals ------------------------------------------------------------

    def _index(self, entry: SessionEntry) -> None:
        self._entries.append(entry)
        if entry.type == "leaf":
            target = entry.data.get("targetId")
            self._leaf_id = target if isinstance(target, str) else None
            return
        self._by_id[entry.id] = entry
        self._leaf_id = entry.id


def _entry_message(entry: SessionEntry) -> Message | None:
    if entry.type == "message":
        return entry.message
    if entry.type == "custom_message":
        content = entry.data.get("content", "")
        try:
            parsed = message_from_dict({"role": "custom", "content": content})
        except (ValueError, TypeError):
            return None
        assert isinstance(parsed, CustomMessage)
        return CustomMessage(
            custom_type=str(entry.data.get("customType", "")),
            content=parsed.content,
            display=bool(entry.data.get("display", True)),
            details=entry.data.get("details"),
        )
    if entry.type == "branch_summary":
        return CustomMessage(
            custom_type="branch_summary",
            content=f"{BRANCH_SUMMARY_PREFIX}\n\n<summary>\n{entry.data.get('summary', '')}\n</summary>",
            display=False,
        )
    return None


_ = UserMessage

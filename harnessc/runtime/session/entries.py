"""The pieces of a session file: its header and its entries (pi v3 format).

Entries keep their JSON form (``SessionEntry.data`` holds every field but the four
common ones), so a line written by pi round-trips unchanged.

Entry types harnessc writes are exactly pi's (``ENTRY_TYPES``). Its own records are pi
``custom`` entries (``customType`` ``harnessc.*``), which pi keeps and leaves out of
the model context. Two types written by earlier harnessc versions are still read
(``LEGACY_ENTRY_TYPES``): ``leaf`` (a tree move) and ``active_tools_change``.
"""

from __future__ import annotations

import gc
import math
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from msgspec import Struct

if TYPE_CHECKING:
    from harnessc.runtime.core.messages import Message

__all__ = [
    "ACTIVE_TOOLS_TYPE",
    "ENTRY_TYPES",
    "LEAF_MARKER_TYPE",
    "LEGACY_ENTRY_TYPES",
    "SESSION_VERSION",
    "SessionEntry",
    "SessionError",
    "SessionHeader",
    "SessionReadOnlyError",
    "SessionWriteError",
    "iso_at",
    "iso_now",
    "iso_to_ms",
    "no_gc",
]

SESSION_VERSION = 3

# the entry types of pi's session format (coding-agent session-manager.ts, v3)
ENTRY_TYPES = frozenset(
    {
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
# written by earlier harnessc versions; read, never written
LEGACY_ENTRY_TYPES = frozenset({"leaf", "active_tools_change"})

# harnessc's own records, as pi ``custom`` entries
LEAF_MARKER_TYPE = "harnessc.leaf"  # a tree move: parentId (= data.targetId) is the new leaf
ACTIVE_TOOLS_TYPE = "harnessc.active_tools"  # data.activeToolNames

_HEADER_KEYS = frozenset({"type", "version", "id", "timestamp", "cwd", "parentSession", "metadata"})


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


class SessionWriteError(SessionError, OSError):
    """An entry could not be written (disk full, file size limit, I/O error).

    The message names the session file; the entry is not in the session, which stays
    valid (a partly written line is cut off before the next append).
    """

    def __str__(self) -> str:  # the message, not OSError's "[Errno N] ..." form
        return str(self.args[0]) if self.args else ""


def iso_now() -> str:
    """An ISO-8601 UTC timestamp with milliseconds, as pi writes them."""
    return iso_at(time.time())


# The formatted whole second of the last timestamp written: a busy process writes many
# entries in one second, and formatting a datetime costs more than the rest of a line.
_second: list[Any] = [None, ""]


def iso_at(seconds: float) -> str:
    """``iso_now``'s form of a time in seconds since the epoch."""
    fraction, whole = math.modf(seconds)
    micro = round(fraction * 1e6)  # as datetime.fromtimestamp rounds
    if micro >= 1_000_000:
        whole, micro = whole + 1, micro - 1_000_000
    if micro < 0 or whole < 0:
        at = datetime.fromtimestamp(seconds, UTC)
        return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    cached = _second
    if cached[0] != whole:
        prefix = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
        cached[0], cached[1] = whole, prefix
    return f"{cached[1]}{micro // 1000:03d}Z"


def iso_to_ms(timestamp: str) -> int:
    """Milliseconds since the epoch of an ISO timestamp (0 when it does not parse)."""
    try:
        return int(datetime.fromisoformat(timestamp).timestamp() * 1000)
    except (ValueError, TypeError):
        return 0


class SessionHeader(Struct):
    id: str
    timestamp: str
    cwd: str = ""
    version: int = SESSION_VERSION
    parent_session: str | None = None
    metadata: dict[str, Any] = {}
    # any other header keys, kept as they are (v1 headers hold provider, modelId, ...)
    extra: dict[str, Any] = {}

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
        for key, value in self.extra.items():
            out.setdefault(key, value)
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
            extra={k: v for k, v in data.items() if k not in _HEADER_KEYS},
        )


class SessionEntry:
    """One entry of a session: the four common fields and the rest (``data``, JSON form).

    A ``message`` entry appended from a live message (``Session.append_message``) keeps
    that message object and builds its JSON form only when asked: a session file gets
    it once, at the append, and a run that never reads ``data`` back (the harness keeps
    its own context) does not hold every message twice. The message must not change
    after it is appended (the harness never changes one).
    """

    __slots__ = ("type", "id", "parent_id", "_time", "_data", "_live")

    def __init__(
        self,
        type: str,
        id: str,
        parent_id: str | None,
        timestamp: str | float,
        data: dict[str, Any] | None = None,
        *,
        live: Message | None = None,
    ) -> None:
        self.type = type
        self.id = id
        self.parent_id = parent_id
        self._time = timestamp  # a new entry's time.time(), formatted when read
        self._live = live
        self._data = {} if data is None and live is None else data  # None: built when read

    @property
    def timestamp(self) -> str:
        """The ISO-8601 time of the entry (``iso_now``'s form for a new one)."""
        at = self._time
        return at if isinstance(at, str) else iso_at(at)

    @property
    def data(self) -> dict[str, Any]:
        data = self._data
        if data is None:
            assert self._live is not None
            data = self._data = {"message": self._live.to_dict()}
        return data

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionEntry):
            return NotImplemented
        return (self.type, self.id, self.parent_id, self.timestamp, self.data) == (
            other.type,
            other.id,
            other.parent_id,
            other.timestamp,
            other.data,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"SessionEntry(type={self.type!r}, id={self.id!r}, parent_id={self.parent_id!r}, "
            f"timestamp={self.timestamp!r}, data={self.data!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "id": self.id,
            "parentId": self.parent_id,
            "timestamp": self.timestamp,
        }
        if self._data is None and self._live is not None:
            out["message"] = self._live.to_dict()  # not kept: see the class docstring
        else:
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
        from harnessc.runtime.session.message_parse import parse_message

        return parse_message(raw)

    @property
    def role(self) -> str | None:
        """The role of a ``message`` entry's message without parsing it."""
        if self.type != "message":
            return None
        if self._data is None and self._live is not None:
            return self._live.role
        raw = self.data.get("message")
        role = raw.get("role") if isinstance(raw, dict) else None
        return role if isinstance(role, str) else None

"""pi's session rules restated as test code, from its documented behaviour.

Sources (pi-mono commit 83378aad, see ../shared/interop/pi-sessions/SOURCE.txt):
``loadEntriesFromFile``, ``migrateV1ToV2``, ``migrateV2ToV3``, ``buildSessionContext``
and ``SessionManager._buildIndex`` / ``appendMessage`` in
``packages/coding-agent/src/core/session-manager.ts``, ``convertToLlm`` and
``bashExecutionToText`` in ``src/core/messages.ts``. This is an independent reading of
files (no harnessc code), checked against pi's own results in
``build-context-cases.json`` (test_pi_interop.py), so harnessc's files can be read by
pi's rules and pi's continuations written by them.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

CURRENT_VERSION = 3
# every entry type pi's SessionManager knows (the SessionEntry union)
PI_ENTRY_TYPES = frozenset(
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
COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUFFIX = "</summary>"

_UNDEFINED: Any = object()


def load_entries(path: Path) -> list[dict[str, Any]]:
    """``loadEntriesFromFile``: every line that parses; [] without a valid header."""
    text = path.read_text(encoding="utf-8", errors="replace")
    entries = []
    for line in text.strip().split("\n"):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    if not entries:
        return entries
    header = entries[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        return []
    return entries


def migrate(entries: list[dict[str, Any]]) -> bool:
    """``migrateToCurrentVersion``, in place; True when it changed something."""
    header = next((e for e in entries if e.get("type") == "session"), None)
    version = (header or {}).get("version") or 1
    if version >= CURRENT_VERSION:
        return False
    if version < 2:
        ids: set[str] = set()
        prev: str | None = None
        for entry in entries:
            if entry.get("type") == "session":
                entry["version"] = 2
                continue
            entry["id"] = _generate_id(ids)
            ids.add(entry["id"])
            entry["parentId"] = prev
            prev = entry["id"]
            if entry.get("type") == "compaction" and isinstance(
                entry.get("firstKeptEntryIndex"), int
            ):
                index = entry["firstKeptEntryIndex"]
                target = entries[index] if 0 <= index < len(entries) else None
                if target and target.get("type") != "session":
                    entry["firstKeptEntryId"] = target.get("id")
                del entry["firstKeptEntryIndex"]
    for entry in entries:
        if entry.get("type") == "session":
            entry["version"] = 3
        elif entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
    return True


def _generate_id(taken: set[str]) -> str:
    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


def open_session(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """What pi holds after opening ``path``: its entries (migrated) and its leaf, the
    last entry (``_buildIndex``)."""
    entries = load_entries(path)
    migrate(entries)
    body = [e for e in entries if e.get("type") != "session"]
    return body, (body[-1]["id"] if body else None)


def build_context(entries: list[dict[str, Any]], leaf_id: Any = _UNDEFINED) -> dict[str, Any]:
    """``buildSessionContext``: messages, thinkingLevel and model of a leaf's path."""
    by_id = {e.get("id"): e for e in entries}
    if leaf_id is None:
        return {"messages": [], "thinkingLevel": "off", "model": None}
    leaf = by_id.get(leaf_id) if leaf_id is not _UNDEFINED and leaf_id else None
    if leaf is None:
        leaf = entries[-1] if entries else None
    if leaf is None:
        return {"messages": [], "thinkingLevel": "off", "model": None}
    path: list[dict[str, Any]] = []
    current: dict[str, Any] | None = leaf
    while current is not None:
        path.insert(0, current)
        parent = current.get("parentId")
        current = by_id.get(parent) if parent else None
    thinking = "off"
    model: dict[str, Any] | None = None
    compaction: dict[str, Any] | None = None
    for entry in path:
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking = entry.get("thinkingLevel")
        elif kind == "model_change":
            model = {"provider": entry.get("provider"), "modelId": entry.get("modelId")}
        elif kind == "message" and entry["message"].get("role") == "assistant":
            model = {
                "provider": entry["message"].get("provider"),
                "modelId": entry["message"].get("model"),
            }
        elif kind == "compaction":
            compaction = entry
    messages: list[dict[str, Any]] = []

    def append(entry: dict[str, Any]) -> None:
        kind = entry.get("type")
        if kind == "message":
            messages.append(entry["message"])
        elif kind == "custom_message":
            messages.append({"role": "custom", "content": entry.get("content")})
        elif kind == "branch_summary" and entry.get("summary"):
            messages.append({"role": "branchSummary", "summary": entry["summary"]})

    if compaction is not None:
        messages.append({"role": "compactionSummary", "summary": compaction.get("summary")})
        index = next(i for i, e in enumerate(path) if e is compaction)
        found = False
        for entry in path[:index]:
            if entry.get("id") == compaction.get("firstKeptEntryId"):
                found = True
            if found:
                append(entry)
        for entry in path[index + 1 :]:
            append(entry)
    else:
        for entry in path:
            append(entry)
    return {"messages": messages, "thinkingLevel": thinking, "model": model}


def bash_execution_text(m: dict[str, Any]) -> str:
    text = f"Ran `{m.get('command')}`\n"
    text += f"```\n{m['output']}\n```" if m.get("output") else "(no output)"
    if m.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif m.get("exitCode") is not None and m.get("exitCode") != 0:
        text += f"\n\nCommand exited with code {m['exitCode']}"
    if m.get("truncated") and m.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {m['fullOutputPath']}]"
    return text


def convert_to_llm(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``convertToLlm``: what the model is sent (roles user / assistant / toolResult)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "bashExecution":
            if m.get("excludeFromContext"):
                continue
            out.append(
                {"role": "user", "content": [{"type": "text", "text": bash_execution_text(m)}]}
            )
        elif role == "custom":
            content = m.get("content")
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            out.append({"role": "user", "content": content})
        elif role == "branchSummary":
            text = BRANCH_PREFIX + m["summary"] + BRANCH_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}]})
        elif role == "compactionSummary":
            text = COMPACTION_PREFIX + str(m["summary"]) + COMPACTION_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}]})
        elif role in ("user", "assistant", "toolResult"):
            out.append(m)
    return out


def append_message(path: Path, message: dict[str, Any], timestamp: str) -> str:
    """pi's ``appendMessage`` on an opened file: a new entry under the leaf (the last
    entry), appended as one line; returns its id."""
    entries, leaf = open_session(path)
    entry_id = _generate_id({e.get("id") for e in entries if isinstance(e.get("id"), str)})
    entry = {
        "type": "message",
        "id": entry_id,
        "parentId": leaf,
        "timestamp": timestamp,
        "message": message,
    }
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n")
    return entry_id


def summary(llm: list[dict[str, Any]]) -> list[list[str]]:
    """[role, text] per message, as build-context-cases.json gives pi's results."""
    return [[m["role"], _text(m.get("content"))] for m in llm]


def detailed(llm: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Role, text, tool calls (id, name, arguments) and tool-call id of each message."""
    out = []
    for m in llm:
        content = m.get("content")
        calls = [
            (b.get("id"), b.get("name"), json.dumps(b.get("arguments"), sort_keys=True))
            for b in (content if isinstance(content, list) else [])
            if isinstance(b, dict) and b.get("type") == "toolCall"
        ]
        out.append((m.get("role"), _text(content), tuple(calls), m.get("toolCallId")))
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""

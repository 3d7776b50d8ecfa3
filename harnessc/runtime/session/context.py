"""The model context of a branch, built as pi builds it.

pi's rules (coding-agent ``buildSessionContext`` and ``convertToLlm``):

- the path runs from the root to the leaf; an unknown leaf falls back to the last entry;
- settings come from the whole path: ``thinking_level_change`` sets the thinking level
  (default ``off``), ``model_change`` sets the model, and every assistant message
  overwrites it with its own provider and model (``SessionContext.pi_model`` and
  ``pi_thinking_level``; ``model`` and ``thinking_level`` are what the branch recorded
  in ``model_change`` / ``thinking_level_change`` entries, None when nothing, which is
  what the harness restores: pi's agent too takes its default thinking level when the
  branch records none);
- at the latest compaction on the path, the model sees its summary, then the entries
  from ``firstKeptEntryId`` up to the compaction, then everything after it;
- messages: ``message`` entries; ``custom_message`` entries (as user text);
  ``branch_summary`` entries with a summary; pi's ``bashExecution`` messages as user
  text (left out when ``excludeFromContext``), with pi's exact wording;
- ``custom``, ``label``, ``session_info`` and settings entries give no message.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from harnessc.runtime.core.messages import CustomMessage, Message, message_from_dict
from harnessc.runtime.session.entries import (
    ACTIVE_TOOLS_TYPE,
    SessionEntry,
    iso_to_ms,
    no_gc,
)
from harnessc.runtime.session.message_parse import (
    branch_summary_message,
    compaction_summary_message,
    parse_message,
)

__all__ = [
    "DEFAULT_THINKING_LEVEL",
    "SessionContext",
    "build_context",
    "entry_message",
]

DEFAULT_THINKING_LEVEL = "off"  # pi's, when the branch records none


class SessionContext(Struct):
    """What the model sees, plus the settings recorded on the current branch."""

    messages: list[Message]
    thinking_level: str | None = None  # the latest thinking_level_change, None if none
    model: tuple[str, str] | None = None  # (provider, model id) of the latest model_change
    active_tool_names: list[str] | None = None
    entry_ids: list[str | None] = []  # entry behind each message
    # pi's buildSessionContext: "off" by default; assistant messages overwrite the model
    pi_thinking_level: str = DEFAULT_THINKING_LEVEL
    pi_model: tuple[str, str] | None = None


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
        if kind == "message":
            raw = entry.data.get("message")
            if type(raw) is dict and raw.get("role") == "assistant":
                # pi: an assistant message overwrites the model (one without any
                # provider or model says nothing and is skipped)
                provider, model = raw.get("provider"), raw.get("model")
                if provider or model:
                    ctx.pi_model = (str(provider or ""), str(model or ""))
        elif kind == "label":
            continue
        elif kind == "compaction":
            compaction_index = i
        elif kind == "thinking_level_change":
            level = entry.data.get("thinkingLevel")
            ctx.thinking_level = level if isinstance(level, str) else None
            ctx.pi_thinking_level = ctx.thinking_level or DEFAULT_THINKING_LEVEL
        elif kind == "model_change":
            ctx.model = (str(entry.data.get("provider", "")), str(entry.data.get("modelId", "")))
            ctx.pi_model = ctx.model
        elif kind == "custom":
            if entry.data.get("customType") == ACTIVE_TOOLS_TYPE:
                data = entry.data.get("data")
                names = data.get("activeToolNames") if isinstance(data, dict) else None
                ctx.active_tool_names = [str(n) for n in names] if isinstance(names, list) else None
        elif kind == "active_tools_change":  # written by earlier harnessc versions
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


def entry_message(entry: SessionEntry) -> Message | None:
    """The message an entry contributes to the model context, if any.

    ``message`` entries give their message, ``custom_message`` entries a CustomMessage,
    ``branch_summary`` entries with a summary a summary message; every other type None.
    """
    kind = entry.type
    if kind == "message":
        raw = entry.data.get("message")
        return parse_message(raw) if isinstance(raw, dict) else None
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
        summary = entry.data.get("summary")
        if not summary:  # pi: a branch summary without text gives no message
            return None
        return branch_summary_message(str(summary), iso_to_ms(entry.timestamp))
    return None

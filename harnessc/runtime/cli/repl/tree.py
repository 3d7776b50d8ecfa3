"""The session tree as /tree shows it: entry ids, branches indented, the current path."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.cli.output import one_line

if TYPE_CHECKING:
    from harnessc.runtime.session.session import Session, SessionEntry

__all__ = ["render_tree"]


def render_tree(session: Session) -> list[str]:
    """The message entries as a tree (branches indented), the current path marked."""
    entries = [e for e in session.entries() if not session.is_move_record(e)]
    children: dict[str | None, list[SessionEntry]] = {}
    for entry in entries:
        children.setdefault(entry.parent_id, []).append(entry)
    on_path = {e.id for e in session.branch()}
    leaf = session.leaf_id
    labels = session.labels()
    lines: list[str] = []

    def walk(parent: str | None, depth: int) -> None:
        # Follow a chain without indenting; indent only where it branches.
        kids = children.get(parent, [])
        while len(kids) == 1:
            _line(kids[0], depth)
            kids = children.get(kids[0].id, [])
        for kid in kids:
            _line(kid, depth + 1, branch=True)
            walk(kid.id, depth + 1)

    def _line(entry: SessionEntry, depth: int, branch: bool = False) -> None:
        text = _entry_text(entry)
        if text is None:
            return
        mark = "*" if entry.id in on_path else " "
        here = "  <- current" if entry.id == leaf else ""
        label = f" [{labels[entry.id]}]" if entry.id in labels else ""
        lead = "  " * depth + ("+ " if branch else "")
        lines.append(f"{mark} {lead}{entry.id}{label}  {text}{here}")

    walk(None, 0)
    return lines


def _entry_text(entry: SessionEntry) -> str | None:
    if entry.type == "message":
        raw = entry.data.get("message")
        role = raw.get("role") if isinstance(raw, dict) else "?"
        message = entry.message
        text = ""
        if message is not None:
            from harnessc.runtime.core.messages import message_text

            text = message_text(message)
            calls = getattr(message, "tool_calls", None)
            if calls and not text:
                text = "calls " + ", ".join(c.name for c in calls)
        return f"{role}: {one_line(text, 70)}"
    if entry.type == "compaction":
        return f"compaction ({entry.data.get('tokensBefore')} tokens before)"
    if entry.type == "branch_summary":
        return f"branch summary: {one_line(str(entry.data.get('summary', '')), 60)}"
    return None

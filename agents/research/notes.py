"""Note tools of the researcher agent: plain typed functions, exposed with ``python:``.

The JSON Schema of each tool comes from the type hints and the docstring. Notes are
Markdown files in the folder named by the tool context's ``notes_dir``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal


def _notes_dir(context: Any) -> Path:
    folder = context.get("notes_dir") if isinstance(context, dict) else None
    path = Path(folder or "research-notes")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "note"


def search_notes(query: str, limit: int = 5, context: Any = None) -> list[dict[str, str]]:
    """Find notes whose title or text contains every word of the query.

    Args:
        query: Words to look for (case-insensitive).
        limit: Most notes to return.
    """
    words = [w for w in query.lower().split() if w]
    hits: list[dict[str, str]] = []
    for file in sorted(_notes_dir(context).glob("*.md")):
        text = file.read_text(encoding="utf-8")
        if all(w in text.lower() for w in words):
            hits.append({"id": file.stem, "excerpt": text[:300]})
        if len(hits) >= limit:
            break
    return hits


def add_note(
    title: str,
    body: str,
    source: str,
    confidence: Literal["low", "medium", "high"] = "medium",
    context: Any = None,
) -> str:
    """Save a note.

    Args:
        title: Short title; the note id is derived from it.
        body: What was learned, in a few sentences.
        source: Where it comes from (URL, book and page, person).
        confidence: How sure the source is.
    """
    note_id = _slug(title)
    text = f"# {title}\n\n{body}\n\nSource: {source}\nConfidence: {confidence}\n"
    (_notes_dir(context) / f"{note_id}.md").write_text(text, encoding="utf-8")
    return note_id


def list_notes(context: Any = None) -> list[str]:
    """The ids of every saved note."""
    return sorted(file.stem for file in _notes_dir(context).glob("*.md"))

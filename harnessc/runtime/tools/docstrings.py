"""Reading a function's docstring: a summary and one description per parameter.

Understands Google style (``Args:`` sections), numpy style (``Parameters`` with a dashed
underline) and Sphinx style (``:param name: text``).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["ParsedDocstring", "parse_docstring"]

_GOOGLE_HEADERS = {"args", "arguments", "parameters", "params", "keyword args", "kwargs"}
_OTHER_HEADERS = {
    "returns",
    "return",
    "yields",
    "raises",
    "examples",
    "example",
    "notes",
    "note",
    "see also",
    "attributes",
    "warnings",
    "references",
}
_GOOGLE_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?::\s*(.*))?$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


@dataclass(slots=True)
class ParsedDocstring:
    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _header(line: str) -> str | None:
    stripped = line.strip().rstrip(":").lower()
    if stripped in _GOOGLE_HEADERS or stripped in _OTHER_HEADERS:
        return stripped
    return None


def _is_numpy_underline(line: str) -> bool:
    s = line.strip()
    return len(s) >= 3 and set(s) == {"-"}


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """The first paragraph (joined into one line) and parameter descriptions."""
    if not doc:
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    out = ParsedDocstring()

    # Summary: the first paragraph, stopping at a blank line or a section header.
    summary: list[str] = []
    for i, line in enumerate(lines):
        if not line.strip():
            if summary:
                break
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if _header(line) and (line.rstrip().endswith(":") or _is_numpy_underline(nxt)):
            break
        if line.strip().startswith(":"):
            break
        summary.append(line.strip())
    out.summary = " ".join(summary)

    section: str | None = None
    style = ""
    current: str | None = None
    item_indent = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        sphinx = _SPHINX_PARAM.match(stripped)
        if sphinx:
            current = sphinx.group(1)
            out.params[current] = sphinx.group(2).strip()
            section, style, item_indent = "sphinx", "sphinx", indent
            i += 1
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        head = _header(line)
        if head and indent == 0 and _is_numpy_underline(nxt):
            section, style, current = head, "numpy", None
            i += 2
            continue
        if head and stripped.endswith(":") and indent == 0:
            section, style, current = head, "google", None
            item_indent = -1
            i += 1
            continue
        if section in _GOOGLE_HEADERS and stripped:
            if style == "google":
                if item_indent < 0:
                    item_indent = indent
                match = _GOOGLE_ITEM.match(stripped)
                if indent <= item_indent and match:
                    current = match.group(1)
                    out.params[current] = match.group(3).strip()
                elif current and indent > item_indent:
                    out.params[current] = f"{out.params[current]} {stripped}".strip()
                elif indent < item_indent:
                    section, current = None, None
            elif style == "numpy":
                match = _NUMPY_ITEM.match(stripped)
                if indent == 0 and match:
                    current = match.group(1)
                    out.params[current] = ""
                elif current and indent > 0:
                    out.params[current] = f"{out.params[current]} {stripped}".strip()
        elif section == "sphinx" and stripped and current and indent > item_indent:
            out.params[current] = f"{out.params[current]} {stripped}".strip()
        elif section == "sphinx" and stripped and not stripped.startswith(":"):
            current = None
        i += 1
    return out

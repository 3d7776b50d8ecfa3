"""Frontmatter of skill and template files, without PyYAML.

Two forms are accepted: a JSON object closed by a ``---`` line (seed 000) and YAML
between ``---`` lines. The YAML side is the small subset frontmatter uses: ``key: value``
scalars (plain, quoted, booleans, null, numbers), ``|``/``>`` blocks, flow lists,
one level of nested lists or mappings. Anything else is reported as an error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Frontmatter", "FrontmatterError", "parse_frontmatter", "parse_yaml_subset"]


class FrontmatterError(ValueError):
    """A frontmatter that cannot be read; ``line`` is 1-based in the file."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass(slots=True)
class Frontmatter:
    data: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    error: str | None = None
    form: str = "none"  # "none" | "yaml" | "json"


_KEY = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.\-]*|\"[^\"]*\"|'[^']*')\s*:(?:\s+(.*))?$")
_BLOCK_HEADER = re.compile(r"^([|>])([+-]?)([1-9]?)([+-]?)\s*(?:#.*)?$")
_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9_]*)$")
_FLOAT = re.compile(
    r"^[-+]?(?:[0-9][0-9_]*)?\.[0-9]+(?:[eE][-+]?[0-9]+)?$|^[-+]?[0-9]+[eE][-+]?[0-9]+$"
)
_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
}


def _unquote_double(text: str, line: int) -> tuple[str, str]:
    """Decode a double-quoted scalar at the start of ``text``; returns (value, rest)."""
    out: list[str] = []
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), text[i + 1 :]
        if ch == "\\":
            if i + 1 >= len(text):
                break
            code = text[i + 1]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                i += 2
                continue
            width = {"x": 2, "u": 4, "U": 8}.get(code)
            digits = text[i + 2 : i + 2 + width] if width else ""
            if (
                width
                and len(digits) == width
                and all(c in "0123456789abcdefABCDEF" for c in digits)
            ):
                out.append(chr(int(digits, 16)))
                i += 2 + width
                continue
            raise FrontmatterError(f"unknown escape \\{code} in a double-quoted string", line)
        out.append(ch)
        i += 1
    raise FrontmatterError("double-quoted string is not closed", line)


def _unquote_single(text: str, line: int) -> tuple[str, str]:
    out: list[str] = []
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == "'":
            if text[i + 1 : i + 2] == "'":
                out.append("'")
                i += 2
                continue
            return "".join(out), text[i + 1 :]
        out.append(ch)
        i += 1
    raise FrontmatterError("single-quoted string is not closed", line)


def _check_rest(rest: str, line: int) -> None:
    rest = rest.strip()
    if rest and not rest.startswith("#"):
        raise FrontmatterError(f"unexpected text after a quoted string: {rest!r}", line)


def _plain(text: str) -> Any:
    if text in ("true", "True", "TRUE"):
        return True
    if text in ("false", "False", "FALSE"):
        return False
    if text in ("null", "Null", "NULL", "~", ""):
        return None
    if _INT.match(text):
        return int(text.replace("_", ""))
    if _FLOAT.match(text):
        return float(text.replace("_", ""))
    return text


def _strip_comment(text: str) -> str:
    match = re.search(r"\s#", text)
    return (text[: match.start()] if match else text).rstrip()


def _split_flow(inner: str, line: int) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in inner:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
            current.append(ch)
        elif ch in "[]{}":
            raise FrontmatterError("nested flow collections are not supported", line)
        elif ch == ",":
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    if quote:
        raise FrontmatterError("quoted string in a flow collection is not closed", line)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return parts


def _scalar(text: str, line: int) -> Any:
    """One inline value: quoted, flow list/map, or plain scalar."""
    text = text.strip()
    if not text:
        return None
    first = text[0]
    if first == '"':
        value, rest = _unquote_double(text, line)
        _check_rest(rest, line)
        return value
    if first == "'":
        value, rest = _unquote_single(text, line)
        _check_rest(rest, line)
        return value
    if first in "&*!%@`":
        raise FrontmatterError(
            f"YAML feature not supported in frontmatter (anchor, alias, tag or reserved "
            f"character {first!r}); quote the value",
            line,
        )
    if first == "[":
        body = _strip_comment(text)
        if not body.endswith("]"):
            raise FrontmatterError("flow list is not closed with ']' on the same line", line)
        return [_scalar(part, line) for part in _split_flow(body[1:-1], line)]
    if first == "{":
        body = _strip_comment(text)
        if not body.endswith("}"):
            raise FrontmatterError("flow mapping is not closed with '}' on the same line", line)
        out: dict[str, Any] = {}
        for part in _split_flow(body[1:-1], line):
            key, sep, value = part.partition(":")
            if not sep:
                raise FrontmatterError(f"expected 'key: value' in flow mapping, got {part!r}", line)
            out[str(_scalar(key, line))] = _scalar(value, line)
        return out
    return _plain(_strip_comment(text))


def _key(raw: str, line: int) -> str:
    if raw[:1] in "\"'":
        return str(_scalar(raw, line))
    return raw


def _block_scalar(header: str, lines: list[str], start: int, first_line: int) -> tuple[str, int]:
    """Read a ``|`` or ``>`` block; returns (text, index of the next unread line)."""
    match = _BLOCK_HEADER.match(header)
    if not match:
        raise FrontmatterError(f"bad block scalar header {header!r}", first_line + start - 1)
    style = match.group(1)
    chomp = match.group(2) or match.group(4)
    explicit = int(match.group(3)) if match.group(3) else None
    block: list[str] = []
    i = start
    indent: int | None = explicit
    while i < len(lines):
        raw = lines[i]
        if raw.strip() == "":
            block.append("")
            i += 1
            continue
        current = len(raw) - len(raw.lstrip(" "))
        if indent is None:
            if current == 0:
                break
            indent = current
        if current < indent:
            break
        block.append(raw[indent:])
        i += 1
    # trailing blank lines belong to the chomping rule, not the content
    trailing = 0
    while block and block[-1] == "":
        block.pop()
        trailing += 1
    if style == "|":
        text = "\n".join(block)
    else:
        folded: list[str] = []
        for piece in block:
            if piece == "":
                folded.append("\n")
            elif folded and not folded[-1].endswith("\n") and not piece.startswith(" "):
                folded.append(" " + piece)
            else:
                folded.append(piece)
        text = "".join(folded)
    if chomp == "-" or not block:
        return text, i
    if chomp == "+":
        return text + "\n" * (trailing + 1), i
    return text + "\n", i


def _nested(lines: list[str], start: int, first_line: int) -> tuple[Any, int]:
    """One level of ``- item`` list or ``key: value`` mapping under a key."""
    i = start
    items: list[Any] = []
    mapping: dict[str, Any] = {}
    kind: str | None = None
    indent: int | None = None
    while i < len(lines):
        raw = lines[i]
        line_no = first_line + i
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        if "\t" in raw[: len(raw) - len(raw.lstrip())]:
            raise FrontmatterError("tabs are not allowed for indentation", line_no)
        current = len(raw) - len(raw.lstrip(" "))
        if current == 0 and not (stripped.startswith("- ") or stripped == "-"):
            break
        if indent is None:
            indent = current
        elif current != indent:
            raise FrontmatterError("nested values deeper than one level are not supported", line_no)
        if stripped.startswith("- ") or stripped == "-":
            if kind == "map":
                raise FrontmatterError("a list item inside a mapping", line_no)
            kind = "list"
            value = stripped[1:].strip()
            if _KEY.match(value) and value[:1] not in "\"'":
                raise FrontmatterError("lists of mappings are not supported", line_no)
            items.append(_scalar(value, line_no))
        else:
            if kind == "list":
                raise FrontmatterError("a 'key: value' line inside a list", line_no)
            kind = "map"
            match = _KEY.match(stripped)
            if not match:
                raise FrontmatterError(f"expected 'key: value', got {stripped!r}", line_no)
            key = _key(match.group(1), line_no)
            if key in mapping:
                raise FrontmatterError(f"duplicate key {key!r}", line_no)
            rest = match.group(2) or ""
            if rest.strip()[:1] in ("|", ">"):
                raise FrontmatterError("block scalars inside a mapping are not supported", line_no)
            if not rest.strip() and i + 1 < len(lines):
                nxt = lines[i + 1]
                if nxt.strip() and len(nxt) - len(nxt.lstrip(" ")) > current:
                    raise FrontmatterError(
                        "nested values deeper than one level are not supported", line_no + 1
                    )
            mapping[key] = _scalar(rest, line_no)
        i += 1
    if kind == "list":
        return items, i
    if kind == "map":
        return mapping, i
    return None, i


def parse_yaml_subset(lines: list[str], first_line: int = 1) -> dict[str, Any]:
    """Parse frontmatter YAML lines; raises FrontmatterError naming the line."""
    data: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        raw = lines[i]
        line_no = first_line + i
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        if raw[0] in " \t":
            raise FrontmatterError(f"unexpected indentation: {stripped!r}", line_no)
        if stripped.startswith("- "):
            raise FrontmatterError("frontmatter must be a mapping, not a list", line_no)
        match = _KEY.match(raw.rstrip())
        if not match:
            raise FrontmatterError(f"expected 'key: value', got {stripped!r}", line_no)
        key = _key(match.group(1), line_no)
        if key in data:
            raise FrontmatterError(f"duplicate key {key!r}", line_no)
        rest = (match.group(2) or "").strip()
        i += 1
        if rest[:1] in ("|", ">"):
            data[key], i = _block_scalar(rest, lines, i, first_line)
        elif rest == "" or rest.startswith("#"):
            data[key], i = _nested(lines, i, first_line)
        elif rest[0] in "\"'":
            # a quoted string may continue on indented lines (folded with spaces)
            text = rest
            while True:
                try:
                    data[key] = _scalar(text, line_no)
                    break
                except FrontmatterError as exc:
                    if "not closed" not in str(exc) or i >= len(lines):
                        raise
                    nxt = lines[i]
                    if nxt.strip() and not nxt[:1].isspace():
                        raise
                    text += (" " + nxt.strip()) if nxt.strip() else "\n"
                    i += 1
        else:
            # plain scalars may continue on more-indented lines
            parts = [rest]
            while i < len(lines) and lines[i][:1] == " " and lines[i].strip():
                parts.append(lines[i].strip())
                i += 1
            joined = " ".join(parts)
            data[key] = _scalar(joined, line_no) if len(parts) == 1 else _strip_comment(joined)
    return data


def parse_frontmatter(text: str) -> Frontmatter:
    """Split a file into frontmatter data and body; problems go in ``error``."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[0].rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                break
        else:
            return Frontmatter(
                body=text,
                error="frontmatter opened with '---' on line 1 is never closed",
                form="yaml",
            )
        body = "\n".join(lines[end + 1 :])
        try:
            data = parse_yaml_subset(lines[1:end], first_line=2)
        except FrontmatterError as exc:
            return Frontmatter(body=body, error=f"frontmatter: {exc}", form="yaml")
        return Frontmatter(data=data, body=body, form="yaml")
    if text.lstrip().startswith("{"):
        close = next((n for n, line in enumerate(lines) if line.rstrip() == "---"), None)
        if close is None:
            return Frontmatter(body=text)
        source = "\n".join(lines[:close])
        body = "\n".join(lines[close + 1 :])
        try:
            data = json.loads(source)
        except json.JSONDecodeError as exc:
            return Frontmatter(
                body=body,
                error=f"JSON frontmatter: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                form="json",
            )
        if not isinstance(data, dict):
            return Frontmatter(body=body, error="JSON frontmatter must be an object", form="json")
        return Frontmatter(data=data, body=body, form="json")
    return Frontmatter(body=text)

"""The spec reference in Markdown, generated from the JSON Schema of a spec.

``render_reference(schema)`` walks the schema from its root and writes one table per
object (the top level, ``models.<key>``, ``tools[].python``, ...) with a row per key:
its full key path, its type (with the schema's bounds), its default and its
description. ``harnessc schema --markdown`` prints it; docs/spec-reference.md is its
committed output (a test keeps the two equal).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["render_reference"]

_ENUM_INLINE = 10  # longer enums are summarised in the type, listed in the description

_PREAMBLE = """\
Every key of an agent spec, generated from the JSON Schema (`schema/agent.schema.json`)
by `harnessc schema --markdown`; do not edit by hand. A key path reads `models.<key>.id`
for the `id` of every entry of `models`, and `tools[]` for each item of the list
`tools`. The default column shows the value a key takes when it is left out;
"required" marks a key that must be present. A section whose default is `{}` has
every key at the default its own table lists; a null default means "not set": the
runtime's own default applies, as the description says ("-" would mark a key left out
without a recorded default). Unknown keys are errors everywhere except in free-form
objects (`parameters`, `compat`, `metadata`, `tool_context`).
"""


@dataclass(slots=True)
class _Section:
    path: str
    description: str
    rows: list[tuple[str, str, str, str]] = field(default_factory=list)


def render_reference(schema: dict[str, Any]) -> str:
    """Markdown tables (key path, type, default, description) for every object of ``schema``."""
    walker = _Walker(schema)
    walker.object_section("", schema)
    out = ["# Spec reference", "", _PREAMBLE]
    for section in walker.sections:
        heading = "Top level" if not section.path else f"`{section.path}`"
        out.append(f"## {heading}")
        out.append("")
        if section.description:
            out.append(section.description)
            out.append("")
        if section.rows:
            out.append("| key | type | default | description |")
            out.append("|---|---|---|---|")
            for row in section.rows:
                out.append("| " + " | ".join(_cell(c) for c in row) + " |")
        else:
            out.append("No keys.")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


class _Walker:
    def __init__(self, root: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = dict(root.get("$defs") or {})
        self.sections: list[_Section] = []
        self._pending: list[tuple[str, dict[str, Any]]] = []
        self._stack: list[str] = []

    # -- schema helpers --------------------------------------------------------------

    def resolve(self, node: Any) -> dict[str, Any]:
        """``node`` with a ``$ref`` replaced by its definition (one level)."""
        if not isinstance(node, dict):
            return {}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = self.defs.get(ref.split("/")[-1], {})
            merged = dict(target)
            merged.update({k: v for k, v in node.items() if k != "$ref"})
            return merged
        return node

    def alternatives(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        """The non-null alternatives of a node (itself when it has no anyOf/oneOf)."""
        node = self.resolve(node)
        options = node.get("anyOf") or node.get("oneOf")
        if not isinstance(options, list):
            return [node]
        out: list[dict[str, Any]] = []
        for option in options:
            for alt in self.alternatives(option):
                if alt.get("type") != "null":
                    out.append(alt)
        return out

    @staticmethod
    def is_object(node: dict[str, Any]) -> bool:
        return node.get("type") == "object" and isinstance(node.get("properties"), dict)

    # -- types -----------------------------------------------------------------------

    def type_text(self, node: dict[str, Any]) -> str:
        parts = [self.one_type(alt) for alt in self.alternatives(node)]
        unique = list(dict.fromkeys(p for p in parts if p))
        return " or ".join(unique) if unique else "any"

    def one_type(self, node: dict[str, Any]) -> str:
        node = self.resolve(node)
        if "const" in node:
            return f"`{json.dumps(node['const'])}`"
        if isinstance(node.get("enum"), list):
            return _enum_text(node["enum"])
        kind = node.get("type")
        if kind == "array":
            items = node.get("items")
            if not isinstance(items, dict):
                return "list"
            inner = [self.one_type(alt) for alt in self.alternatives(items)]
            if len(inner) == 1:
                return f"list of {inner[0]}"
            return "list; each item: " + " or ".join(inner)
        if kind == "object":
            if isinstance(node.get("properties"), dict):
                return "object" if node["properties"] else "empty object (`{}`)"
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                names = node.get("propertyNames") or {}
                key = _enum_text(names["enum"]) if isinstance(names.get("enum"), list) else "string"
                return f"map of {key} to {self.type_text(extra)}"
            return "object (free-form)"
        if kind in ("integer", "number"):
            return kind + _bounds(node)
        if kind == "string":
            if node.get("format") == "regex":
                return "string (regex)"
            return "string"
        if kind == "boolean":
            return "boolean"
        return str(kind) if kind else ""

    def notes(self, node: dict[str, Any]) -> list[str]:
        """Constraints not shown in the type: patterns, sizes."""
        out: list[str] = []
        for alt in self.alternatives(node):
            names = alt.get("propertyNames") or {}
            for values in (alt.get("enum"), names.get("enum")):
                if isinstance(values, list) and len(values) > _ENUM_INLINE:
                    listed = ", ".join(f"`{v}`" for v in values)
                    out.append(f"{'Keys' if values is names.get('enum') else 'Values'}: {listed}.")
            pattern = alt.get("pattern")
            if isinstance(pattern, str):
                out.append(f"Pattern: `{pattern}`.")
            if alt.get("type") == "object" and "properties" not in alt:
                low = alt.get("minProperties")
                if isinstance(low, int) and low > 0:
                    out.append(f"At least {low} {'entry' if low == 1 else 'entries'}.")
            if alt.get("type") == "string" and alt.get("minLength") == 1 and "enum" not in alt:
                out.append("Not empty.")
            if alt.get("minProperties") == 1 and alt.get("maxProperties") == 1:
                out.append("Exactly one key.")
        return list(dict.fromkeys(out))

    # -- walking ---------------------------------------------------------------------

    def object_section(self, path: str, node: dict[str, Any]) -> None:
        """Add the section of object ``node`` at ``path``, then the sections below it."""
        # The section text is the object's own docstring; the key's description (which
        # the schema puts beside a ``$ref``) is in the parent's row.
        name = self.def_name(node)
        own = self.defs.get(name, {}).get("description") if name is not None else None
        node = self.resolve(node)
        section = _Section(path, _text(own or node.get("description") or ""))
        self.sections.append(section)
        children: list[tuple[str, dict[str, Any]]] = []
        required = set(node.get("required") or [])
        for key, prop in (node.get("properties") or {}).items():
            prop = prop if isinstance(prop, dict) else {}
            key_path = f"{path}.{key}" if path else key
            section.rows.append(
                (
                    f"`{key_path}`",
                    self.type_text(prop),
                    _default_text(prop, key in required),
                    self.description(prop),
                )
            )
            children.extend(self.nested(key_path, prop))
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra and node.get("properties"):
            # named entries beside fixed keys (``mcp.<name>`` beside ``mcp.from``)
            children.extend(self.nested(f"{path}.<name>" if path else "<name>", extra))
        for child_path, child in children:
            name = self.def_name(child)
            if name is not None and name in self._stack:
                continue  # a recursive definition: documented once
            if name is not None:
                self._stack.append(name)
            self.object_section(child_path, child)
            if name is not None:
                self._stack.pop()

    def def_name(self, node: dict[str, Any]) -> str | None:
        ref = node.get("$ref")
        return ref.split("/")[-1] if isinstance(ref, str) else None

    def nested(self, path: str, prop: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """The objects documented below ``path``: the key's own, its items', its values'."""
        out: list[tuple[str, dict[str, Any]]] = []
        options = prop.get("anyOf") or prop.get("oneOf")
        raw = [prop] if not isinstance(options, list) else options
        for option in raw:
            if not isinstance(option, dict):
                continue
            resolved = self.resolve(option)
            if resolved.get("anyOf") or resolved.get("oneOf"):
                out.extend(self.nested(path, resolved))
                continue
            if self.is_object(resolved) and resolved["properties"]:
                out.append((path, option))
            elif resolved.get("type") == "array" and isinstance(resolved.get("items"), dict):
                out.extend(self.nested(f"{path}[]", resolved["items"]))
            elif resolved.get("type") == "object" and isinstance(
                resolved.get("additionalProperties"), dict
            ):
                out.extend(self.nested(f"{path}.<key>", resolved["additionalProperties"]))
        return out

    def description(self, prop: dict[str, Any]) -> str:
        text = prop.get("description")
        if not text:
            for alt in self.alternatives(prop):
                if self.is_object(alt) and alt.get("description"):
                    text = alt["description"]
                    break
        parts = [_sentence(_text(text or "")), *self.notes(prop)]
        return " ".join(p for p in parts if p)


def _text(text: str) -> str:
    """Docstring text for Markdown: one line, RST double backticks as code spans."""
    return _escape_html(" ".join(str(text).replace("``", "`").split()))


def _sentence(text: str) -> str:
    return text + "." if text and text[-1] not in ".!?)" else text


def _escape_html(text: str) -> str:
    """``<`` and ``>`` outside code spans, so Markdown does not read them as tags."""
    pieces = text.split("`")
    for i in range(0, len(pieces), 2):  # even pieces are outside code spans
        pieces[i] = pieces[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(pieces)


def _enum_text(values: list[Any]) -> str:
    if len(values) > _ENUM_INLINE:
        return f"one of {len(values)} names (see description)"
    return " \\| ".join(f"`{json.dumps(v)}`" for v in values)


def _bounds(node: dict[str, Any]) -> str:
    low = ""
    if "exclusiveMinimum" in node:
        low = f"> {_num(node['exclusiveMinimum'])}"
    elif "minimum" in node:
        low = f">= {_num(node['minimum'])}"
    high = ""
    if "exclusiveMaximum" in node:
        high = f"< {_num(node['exclusiveMaximum'])}"
    elif "maximum" in node:
        high = f"<= {_num(node['maximum'])}"
    both = ", ".join(b for b in (low, high) if b)
    return f" ({both})" if both else ""


def _num(value: Any) -> str:
    return json.dumps(value)


def _default_text(prop: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in prop:
        return "-"
    return f"`{json.dumps(prop['default'], ensure_ascii=False)}`"


def _cell(text: str) -> str:
    """A table cell: pipes escaped (also inside code spans, as GFM wants), no newlines."""
    escaped = text.replace("\\|", "\x00").replace("|", "\\|").replace("\x00", "\\|")
    return escaped.replace("\n", " ")

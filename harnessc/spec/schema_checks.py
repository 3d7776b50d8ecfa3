"""The checks of an ``output:`` JSON Schema: what the meta-schema refuses, said in the
words of the mistake, and what it lets through though no answer could ever match.

- a ``type`` that is not one of the seven JSON types, with the type it probably means;
- ``required`` naming a property the schema does not list: an error with the closest
  name, or when ``additionalProperties: false`` makes it impossible; else a warning;
- a ``$ref`` that points at nothing, and one that leads back to itself with no way out
  (``a -> b -> a``, or a required property holding the whole schema again): no finite
  value matches, so every answer of every run would fail validation;
- a keyword JSON Schema does not have, close to one it has (``propertes``): a warning,
  since validators ignore unknown keywords (and ``title``, ``x-...`` are fine).

Each problem is a ``SchemaProblem``: where (the key path inside the schema, for
``file:line:col``; ``at_key``: the key itself rather than its value), severity, message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from harnessc.spec.diagnostics import Severity, did_you_mean
from harnessc.spec.yamlsource import KeyPath

__all__ = ["SchemaProblem", "output_schema_problems"]


class SchemaProblem(NamedTuple):
    where: KeyPath
    severity: Severity
    message: str
    at_key: bool = False


TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")

# keywords whose value is one schema, a mapping of schemas, a list of schemas
_ONE = (
    "additionalProperties",
    "items",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "contentSchema",
)
_MAP = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")

# every keyword of draft 2020-12 (and draft 7's definitions / additionalItems), and the
# annotations schemas commonly carry
KEYWORDS = frozenset(
    {
        *_ONE,
        *_MAP,
        *_LIST,
        "$schema",
        "$id",
        "$ref",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$vocabulary",
        "$comment",
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "dependencies",
        "format",
        "contentEncoding",
        "contentMediaType",
        "title",
        "description",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
        "examples",
    }
)


def _subschemas(node: Any, path: KeyPath) -> Iterator[tuple[KeyPath, Any]]:
    """Every schema inside ``node`` (itself first), with its key path."""
    yield path, node
    if not isinstance(node, dict):
        return
    for key in _ONE:
        if isinstance(node.get(key), dict | bool):
            yield from _subschemas(node[key], (*path, key))
    for key in _MAP:
        if isinstance(node.get(key), dict):
            for name, value in node[key].items():
                if isinstance(value, dict | bool):
                    yield from _subschemas(value, (*path, key, name))
    for key in (*_LIST, "items"):
        if isinstance(node.get(key), list):
            for index, value in enumerate(node[key]):
                if isinstance(value, dict | bool):
                    yield from _subschemas(value, (*path, key, index))


def _pointer(root: Any, ref: str) -> tuple[bool, KeyPath]:
    """``(found, path)`` of a local ``$ref`` (``#`` or ``#/a/b``); other refs are not
    followed (found, with an empty path)."""
    if not ref.startswith("#") or (len(ref) > 1 and not ref.startswith("#/")):
        return True, ()
    node = root
    path: list[str | int] = []
    for raw in ref[2:].split("/") if len(ref) > 1 else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
            path.append(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            path.append(int(part))
        else:
            return False, ()
    return True, tuple(path)


def _type_problems(path: KeyPath, node: dict[str, Any]) -> list[SchemaProblem]:
    value = node.get("type")
    named = [(path, value)] if isinstance(value, str) else []
    if isinstance(value, list):
        named = [((*path, i), v) for i, v in enumerate(value) if isinstance(v, str)]
    return [
        SchemaProblem(
            where,
            "error",
            f"{name!r} is not a JSON Schema type ({', '.join(TYPES)}){did_you_mean(name, TYPES)}",
        )
        for where, name in named
        if name not in TYPES
    ]


def _node_problems(root: Any, path: KeyPath, node: dict[str, Any]) -> list[SchemaProblem]:
    problems = _type_problems((*path, "type"), node)
    for key in node:
        if isinstance(key, str) and key not in KEYWORDS and not key.startswith("x-"):
            hint = did_you_mean(key, KEYWORDS)
            if hint:
                problems.append(
                    SchemaProblem(
                        (*path, key),
                        "warning",
                        f"unknown JSON Schema keyword {key!r} (ignored by validation){hint}",
                        at_key=True,
                    )
                )
    properties = node.get("properties")
    required = node.get("required")
    if isinstance(properties, dict) and isinstance(required, list):
        names = [str(name) for name in properties]
        closed = node.get("additionalProperties") is False
        for index, name in enumerate(required):
            if isinstance(name, str) and name not in properties:
                listed = ", ".join(names) or "none"
                hint = did_you_mean(name, names)
                # a typo, or a key no answer may have: an error; else other keys may hold it
                severity: Severity = "error" if hint or closed else "warning"
                problems.append(
                    SchemaProblem(
                        (*path, "required", index),
                        severity,
                        f"required names {name!r}, which is not among the properties "
                        f"({listed}){hint}",
                    )
                )
    ref = node.get("$ref")
    if isinstance(ref, str) and not _pointer(root, ref)[0]:
        problems.append(SchemaProblem((*path, "$ref"), "error", f"$ref {ref!r} points at nothing"))
    return problems


def _needs(path: KeyPath, node: Any, root: Any) -> tuple[list[KeyPath], list[list[KeyPath]]]:
    """What a value matching the schema at ``path`` must match as well: schemas it must
    match too (its local ``$ref``, ``allOf``, its required properties, the items of a
    list that may not be empty), and groups of which it must match one (``anyOf``,
    ``oneOf``). Paths from the root."""
    if not isinstance(node, dict):
        return [], []
    every: list[KeyPath] = []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        found, target = _pointer(root, ref)
        if found:
            every.append(target)
    every += [(*path, "allOf", i) for i in range(len(node.get("allOf") or []))]
    properties = node.get("properties")
    if isinstance(properties, dict):
        for name in node.get("required") or []:
            if isinstance(name, str) and name in properties:
                every.append((*path, "properties", name))
    least = node.get("minItems")
    if isinstance(least, int) and not isinstance(least, bool) and least > 0:
        prefix = node.get("prefixItems")
        count = len(prefix) if isinstance(prefix, list) else 0
        every += [(*path, "prefixItems", i) for i in range(min(least, count))]
        if "items" in node and not isinstance(node["items"], list) and least > count:
            every.append((*path, "items"))
    some = [
        [(*path, key, i) for i in range(len(node[key]))]
        for key in ("anyOf", "oneOf")
        if isinstance(node.get(key), list) and node[key]
    ]
    return every, some


def _endless(root: Any, nodes: dict[KeyPath, Any]) -> list[KeyPath]:
    """The schemas on a cycle no finite value can get out of (a ``false`` schema counts
    as one that matches here: refusing is a choice, not a cycle). The stuck ones are
    those outside the least set of schemas shown to have a match; of them, those that
    lead back to themselves."""
    rules = {path: _needs(path, node, root) for path, node in nodes.items()}

    def matched(target: KeyPath) -> bool:
        return target not in nodes or target in matchable

    matchable: set[KeyPath] = set()
    changed = True
    while changed:
        changed = False
        for path, (every, some) in rules.items():
            if path in matchable:
                continue
            if all(matched(t) for t in every) and all(any(matched(t) for t in g) for g in some):
                matchable.add(path)
                changed = True
    stuck = {path for path in nodes if path not in matchable}

    def leads_to(start: KeyPath) -> set[KeyPath]:
        """The stuck schemas a value matching ``start`` must match as well."""
        every, some = rules[start]
        nxt = [t for t in every if t in stuck]
        nxt += [t for group in some if all(u in stuck for u in group) for t in group]
        return set(nxt)

    on_cycle = []
    for path in nodes:
        if path not in stuck:
            continue
        seen: set[KeyPath] = set()
        todo = list(leads_to(path))
        while todo and path not in seen:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo += leads_to(current)
        if path in seen:
            on_cycle.append(path)
    return on_cycle


def output_schema_problems(schema: dict[str, Any]) -> list[SchemaProblem]:
    """The problems of ``schema`` (an ``output.schema``), at most a few of each kind."""
    from jsonschema import Draft202012Validator

    nodes = dict(_subschemas(schema, ()))
    problems: list[SchemaProblem] = []
    for path, node in nodes.items():
        if isinstance(node, dict):
            problems += _node_problems(schema, path, node)
    typed = {p.where for p in problems if "is not a JSON Schema type" in p.message}
    typed |= {where[:-1] for where in typed if where and isinstance(where[-1], int)}
    broken = False
    for error in Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(schema):
        where = tuple(error.absolute_path)
        if where in typed:
            continue  # said above, with the type it probably means
        broken = True
        problems.append(SchemaProblem(where, "error", f"not a valid JSON Schema: {error.message}"))
    if not broken and not any(p.severity == "error" for p in problems):
        for path in _endless(schema, nodes):
            node = nodes[path]
            if isinstance(node, dict) and isinstance(node.get("$ref"), str):
                problems.append(
                    SchemaProblem(
                        (*path, "$ref"),
                        "error",
                        f"$ref {node['$ref']!r} leads back here with no way out: no finite "
                        "value matches, so every answer would fail (make the recursion "
                        "optional: a property not required, a list that may be empty)",
                    )
                )
    return problems[:10]

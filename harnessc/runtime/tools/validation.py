"""Tool-argument validation: pi's coercion first, then a real JSON Schema validator.

1. Depth: arguments nested more than MAX_ARGUMENT_DEPTH levels are refused with a
   message the model can act on (never a RecursionError).
2. Coercion, as pi does it: where the schema asks for an integer, number or boolean
   and the model sent a string spelling one ("42", "2.5", "true"), the value is
   converted; an integral float becomes an int where an integer is asked for. It
   follows properties, items, additionalProperties, anyOf / oneOf / allOf and local
   ``$ref`` entries.
3. Validation with fastjsonschema (imported on first use, about 7 ms; jsonschema costs
   65-100 ms): drafts 4, 6 and 7, so oneOf, $ref, pattern, format, exclusiveMinimum and
   the rest are enforced. It reports the first problem. A schema it cannot compile (a
   bad pattern, an unresolvable $ref) falls back to the built-in checker of the subset
   below: type (with unions), properties, required, additionalProperties, items, enum,
   const, anyOf / oneOf / allOf, minimum / maximum, minLength / maxLength, minItems /
   maxItems.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_ARGUMENT_DEPTH", "argument_depth", "coerce_arguments", "validate_arguments"]

MAX_ARGUMENT_DEPTH = 100
_MAX_REF_HOPS = 32

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def _is_type(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    types = _TYPES.get(kind)
    return True if types is None else isinstance(value, types)


def _coerce(value: Any, kinds: list[str]) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if "integer" in kinds:
            try:
                return int(text)
            except ValueError:
                pass
        if "number" in kinds:
            try:
                return float(text)
            except ValueError:
                pass
        if "boolean" in kinds and text in ("true", "false"):
            return text == "true"
    return value


def _check(value: Any, schema: Any, path: str, errors: list[str]) -> Any:
    if not isinstance(schema, dict):
        return value
    kind = schema.get("type")
    if kind is not None:
        kinds = kind if isinstance(kind, list) else [kind]
        if not any(_is_type(value, k) for k in kinds):
            coerced = _coerce(value, kinds)
            if coerced is value or not any(_is_type(coerced, k) for k in kinds):
                errors.append(f"{path}: expected {' or '.join(kinds)}, got {_describe(value)}")
                return value
            value = coerced
        if "integer" in kinds and isinstance(value, float) and value.is_integer():
            value = int(value)
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must be {schema['const']!r}")
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        errors.append(f"{path}: must be one of {', '.join(repr(v) for v in enum)}")
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            for option in options:
                sub: list[str] = []
                candidate = _check(value, option, path, sub)
                if not sub:
                    value = candidate
                    break
            else:
                errors.append(f"{path}: matches none of the allowed forms")
    for option in schema.get("allOf") or []:
        value = _check(value, option, path, errors)
    if isinstance(value, dict):
        value = _check_object(value, schema, path, errors)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            value = [_check(v, items, f"{path}[{i}]", errors) for i, v in enumerate(value)]
        _bounds(len(value), schema, "minItems", "maxItems", f"{path}: number of items", errors)
    elif isinstance(value, str):
        _bounds(len(value), schema, "minLength", "maxLength", f"{path}: length", errors)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _bounds(value, schema, "minimum", "maximum", path, errors)
    return value


def _check_object(
    value: dict[str, Any], schema: dict[str, Any], path: str, errors: list[str]
) -> dict[str, Any]:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(f"{_join(path, name)}: required property is missing")
    out = dict(value)
    for name, item in value.items():
        if name in props:
            out[name] = _check(item, props[name], _join(path, name), errors)
        else:
            extra = schema.get("additionalProperties", True)
            if extra is False:
                errors.append(f"{_join(path, name)}: unexpected property")
            elif isinstance(extra, dict):
                out[name] = _check(item, extra, _join(path, name), errors)
    return out


def _bounds(
    number: float, schema: dict[str, Any], low: str, high: str, what: str, errors: list[str]
) -> None:
    minimum, maximum = schema.get(low), schema.get(high)
    if isinstance(minimum, int | float) and number < minimum:
        errors.append(f"{what} must be at least {minimum}")
    if isinstance(maximum, int | float) and number > maximum:
        errors.append(f"{what} must be at most {maximum}")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    names = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }
    return names.get(type(value), type(value).__name__)


def argument_depth(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> int:
    """How deeply ``value`` nests objects and arrays (counted without recursion);
    stops counting once past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    """``schema`` with local ``$ref`` entries followed (a few hops at most)."""
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
            return schema
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        target: Any = root
        for part in ref[1:].lstrip("/").split("/") if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return schema
        schema = target
    return schema


def _kinds(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    return [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []


# The types whose values a schema of that type takes as they are (no coercion).
_EXACT: dict[str, type] = {"string": str, "integer": int, "boolean": bool}


def _coerce_value(value: Any, schema: Any, root: dict[str, Any]) -> Any:
    if type(schema) is dict:
        kind = schema.get("type")
        if (
            type(kind) is str
            and type(value) is _EXACT.get(kind)
            and "$ref" not in schema
            and "anyOf" not in schema
            and "oneOf" not in schema
            and "allOf" not in schema
        ):
            return value  # already of its plain type (most arguments)
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return value
    kinds = _kinds(schema)
    if kinds and not any(_is_type(value, k) for k in kinds):
        coerced = _coerce(value, kinds)
        if any(_is_type(coerced, k) for k in kinds):
            value = coerced
    if "integer" in kinds and isinstance(value, float) and value.is_integer():
        value = int(value)
    for key in ("anyOf", "oneOf"):
        options = [_resolve(o, root) for o in schema.get(key) or [] if isinstance(o, dict)]
        if options:
            fitting = [
                o for o in options if not _kinds(o) or any(_is_type(value, k) for k in _kinds(o))
            ]
            for option in fitting or options:
                candidate = _coerce_value(value, option, root)
                if not _kinds(option) or any(_is_type(candidate, k) for k in _kinds(option)):
                    value = candidate
                    break
    for option in schema.get("allOf") or []:
        value = _coerce_value(value, option, root)
    if isinstance(value, dict):
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        for name, item in value.items():
            if name in props:
                out[name] = _coerce_value(item, props[name], root)
            elif isinstance(extra, dict):
                out[name] = _coerce_value(item, extra, root)
            else:
                out[name] = item
        value = out
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [_coerce_value(item, schema["items"], root) for item in value]
    return value


def coerce_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """pi's coercion of numbers and booleans sent as strings (see the module doc)."""
    value = _coerce_value(arguments, schema, schema)
    return value if isinstance(value, dict) else arguments


_Validator = Callable[[Any], Any]
_COMPILED: dict[str, _Validator | None] = {}
_COMPILED_LOCK = threading.Lock()
_BY_ID: dict[int, tuple[dict[str, Any], _Validator | None]] = {}


def _validator(schema: dict[str, Any]) -> _Validator | None:
    """The compiled fastjsonschema validator of ``schema``, or None (use the subset)."""
    known = _BY_ID.get(id(schema))
    if known is not None and known[0] is schema:  # the same dict as last time: no dump
        return known[1]
    try:
        key = json.dumps(schema, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return None
    with _COMPILED_LOCK:
        if key in _COMPILED:
            _BY_ID[id(schema)] = (schema, _COMPILED[key])
            return _COMPILED[key]
    try:
        import fastjsonschema
    except ImportError:  # pragma: no cover - a dependency of harnessc
        compiled: _Validator | None = None
    else:
        try:
            compiled = fastjsonschema.compile(schema, use_default=False, use_formats=True)
        except Exception:  # a schema it cannot compile: the subset checker still works
            compiled = None
    with _COMPILED_LOCK:
        if len(_COMPILED) > 512:
            _COMPILED.clear()
            _BY_ID.clear()
        _COMPILED[key] = compiled
        _BY_ID[id(schema)] = (schema, compiled)  # holds the dict: its id is not reused
    return compiled


def _messages(exc: Any) -> list[str]:
    """fastjsonschema's error in the wording of the built-in checker where it has one."""
    name = str(getattr(exc, "name", "data"))
    where = name[len("data") :].lstrip(".") if name.startswith("data") else name
    rule = getattr(exc, "rule", None)
    value = getattr(exc, "value", None)
    definition = getattr(exc, "definition", None)
    definition = definition if isinstance(definition, dict) else {}
    if rule == "required" and isinstance(value, dict):
        missing = [n for n in definition.get("required") or [] if n not in value]
        if missing:
            return [f"{_join(where, str(n))}: required property is missing" for n in missing]
    if rule == "type":
        kinds = _kinds(definition) or ["the declared type"]
        return [f"{where or 'arguments'}: expected {' or '.join(kinds)}, got {_describe(value)}"]
    if rule == "additionalProperties" and isinstance(value, dict):
        props = definition.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = [n for n in value if n not in props]
        if extra and definition.get("additionalProperties") is False:
            return [f"{_join(where, str(n))}: unexpected property" for n in extra]
    text = str(getattr(exc, "message", exc))
    if text.startswith(name + " "):
        text = text[len(name) + 1 :]
    return [f"{where or 'arguments'}: {text}"]


def validate_arguments(
    arguments: Any, schema: dict[str, Any] | None
) -> tuple[dict[str, Any], list[str]]:
    """Check ``arguments`` against ``schema``; returns (coerced arguments, errors)."""
    if not isinstance(arguments, dict):
        return {}, [f"arguments must be a JSON object, got {_describe(arguments)}"]
    depth = argument_depth(arguments)
    if depth > MAX_ARGUMENT_DEPTH:
        return {}, [
            f"arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep (objects "
            "and arrays inside each other); send flatter arguments"
        ]
    if not schema:
        return arguments, []
    value = coerce_arguments(arguments, schema)
    validator = _validator(schema)
    if validator is None:
        errors: list[str] = []
        checked = _check(value, schema, "", errors)
        return (checked if isinstance(checked, dict) else value), errors
    try:
        validator(value)
    except RecursionError:
        return value, ["arguments are nested too deeply to check; send flatter arguments"]
    except Exception as exc:  # fastjsonschema.JsonSchemaValueException
        if type(exc).__name__ != "JsonSchemaValueException":
            raise
        return value, _messages(exc)
    return value, []

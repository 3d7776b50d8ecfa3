"""Tool-argument validation against a JSON schema (the subset tool schemas use).

Supports type (with unions), properties, required, additionalProperties, items,
enum, const, anyOf / oneOf / allOf, minimum / maximum, minLength / maxLength,
minItems / maxItems. Like pi, integers given as numeric strings and numbers given as
strings are coerced when the schema asks for a number, since models often do that.
"""

from __future__ import annotations

from typing import Any

__all__ = ["validate_arguments"]

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


def validate_arguments(
    arguments: Any, schema: dict[str, Any] | None
) -> tuple[dict[str, Any], list[str]]:
    """Check ``arguments`` against ``schema``; returns (coerced arguments, errors)."""
    if not isinstance(arguments, dict):
        return {}, [f"arguments must be a JSON object, got {_describe(arguments)}"]
    if not schema:
        return arguments, []
    errors: list[str] = []
    value = _check(arguments, schema, "", errors)
    return (value if isinstance(value, dict) else arguments), errors

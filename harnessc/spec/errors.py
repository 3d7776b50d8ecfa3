"""Turn pydantic validation errors into located, readable diagnostics."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from harnessc.spec.diagnostics import Diagnostic, did_you_mean
from harnessc.spec.models import SpecModel
from harnessc.spec.yamlsource import KeyPath, YamlSource

__all__ = ["describe_value", "dotted", "translate_errors"]

_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
    "list_type": "a list",
    "none_required": "nothing (null)",
}


def dotted(path: KeyPath) -> str:
    """``tools[0].bash.timeout_s``; the whole file is ``spec``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part) else repr(part)
            out += f".{name}" if out else name
    return out or "spec"


def describe_value(value: Any) -> str:
    if value is None:
        return "an empty value (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _resolve(data: Any, loc: tuple[Any, ...]) -> tuple[KeyPath, list[Any], bool]:
    """Follow ``loc`` through the YAML data; skip union tags and converted shapes.

    Returns the deepest path that exists in the data, the loc parts left over, and
    whether the error is about a mapping key (pydantic's ``[key]``).
    """
    path: list[str | int] = []
    node = data
    rest: list[Any] = []
    is_key = False
    for part in loc:
        if part == "[key]":
            is_key = True
            continue
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        else:
            rest.append(part)
    return tuple(path), rest, is_key


def _at(source: YamlSource, path: KeyPath, message: str, *, key: bool = False) -> Diagnostic:
    mark = source.mark(path, key=key and bool(path) and isinstance(path[-1], str))
    return Diagnostic(source.path, mark.line, mark.col, "error", message)


def _parent_mapping(data: Any, path: KeyPath) -> Any:
    node = data
    for part in path:
        node = node[part]
    return node


def _allowed_keys(model: type[SpecModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


_BOUNDS = {
    "greater_than": ">",
    "greater_than_equal": ">=",
    "less_than": "<",
    "less_than_equal": "<=",
}


def _body(kind: str, value: Any, ctx: dict[str, Any], msg: str) -> str:
    """What is wrong with one value, without saying where."""
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {describe_value(value)}"
    if kind == "literal_error":
        choices = re.findall(r"'((?:[^'\\]|\\.)*)'", str(ctx.get("expected", "")))
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        shown = ", ".join(repr(c) for c in choices)
        got = repr(value) if isinstance(value, str) else describe_value(value)
        return f"{got} is not one of {shown}{hint}"
    if kind in _BOUNDS:
        bound = next(iter(ctx.values()), "?")
        return f"must be {_BOUNDS[kind]} {bound}, got {value!r}"
    if kind == "finite_number":
        return "must be a finite number"
    if kind in ("too_short", "string_too_short") and ctx.get("min_length") == 1:
        return "must not be empty"
    message = msg.removeprefix("Value error, ")
    if message.startswith("Input should"):
        message = "should" + message[len("Input should") :]
    return message


def _one(source: YamlSource, err: Any, models: dict[int, type[SpecModel]]) -> Diagnostic | None:
    kind: str = err["type"]
    loc = tuple(err["loc"])
    value = err.get("input")
    ctx = err.get("ctx") or {}
    if kind == "extension_config" and ctx.get("field"):
        loc = (*loc, str(ctx["field"]))  # the runtime's check names the field at fault
    path, rest, is_key = _resolve(source.data, loc)
    if any(path[: len(b)] == b for b in source.broken):
        return None  # the loader already reported this value

    if kind == "extra_forbidden":
        key = path[-1] if path else (rest[-1] if rest else "?")
        parent = path[:-1]
        model = models.get(id(_parent_mapping(source.data, parent)))
        hint = ""
        if model is not None:
            hint = did_you_mean(str(key), _allowed_keys(model))
            if not hint and str(key) in model.misplaced_keys:
                hint = f"; {model.misplaced_keys[str(key)]}"
        where = f" in {dotted(parent)}" if parent else ""
        return _at(source, path, f"unknown key {key!r}{where}{hint}", key=True)
    if kind == "missing":
        key = rest[-1] if rest else loc[-1]
        where = dotted(path) + ": " if path else ""
        return _at(source, path, f"{where}missing required key {key!r}", key=True)
    body = _body(kind, value, ctx, str(err["msg"]))
    if kind == "extension_config":
        # A field the spec leaves at its default is named, pointing at its mapping.
        named = (*path, *(str(part) for part in rest))
        return _at(source, path, f"{dotted(named)}: {body}", key=bool(rest))
    if is_key:
        key = path[-1] if path else "?"
        about = "" if repr(key) in body else f"key {key!r}: "
        return _at(source, path, f"{dotted(path[:-1])}: {about}{body}", key=True)
    return _at(source, path, f"{dotted(path)}: {body}")


def translate_errors(
    exc: ValidationError, source: YamlSource, context: dict[str, Any]
) -> list[Diagnostic]:
    """One diagnostic per pydantic error, located in the YAML, deduplicated."""
    models: dict[int, type[SpecModel]] = context.get("models", {})
    out: list[Diagnostic] = []
    seen: set[tuple[int, int, str]] = set()
    errors = exc.errors(include_url=False)
    for err in errors:
        if _other_branch_explains(err, errors):
            continue
        diagnostic = _one(source, err, models)
        if diagnostic is None:
            continue
        ident = (diagnostic.line, diagnostic.col, diagnostic.message)
        if ident not in seen:
            seen.add(ident)
            out.append(diagnostic)
    return out


def _other_branch_explains(err: Any, errors: list[Any]) -> bool:
    """A mapping given to a union of a model and a literal (``auth: false`` or a table):
    the literal branch's "not one of" is noise when the model branch says what is wrong."""
    loc = tuple(err["loc"])
    if err["type"] != "literal_error" or not isinstance(err.get("input"), dict) or not loc:
        return False
    if not (isinstance(loc[-1], str) and loc[-1].startswith("literal[")):
        return False
    stem = loc[:-1]
    return any(
        other is not err
        and tuple(other["loc"])[: len(stem)] == stem
        and len(other["loc"]) > len(stem)
        for other in errors
    )

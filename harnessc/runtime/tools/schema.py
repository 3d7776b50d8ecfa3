"""JSON schemas from Python type hints and signatures (for ``python_tool``)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import functools
import inspect
import json
import pathlib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harnessc.runtime.tools.docstrings import parse_docstring

__all__ = [
    "CONTEXT_MARKER",
    "ToolContext",
    "context_parameter",
    "hint_target",
    "schema_for_function",
    "schema_for_type",
]


class _ContextMarker:
    """Marks a parameter that receives the tool context instead of a model argument."""

    def __repr__(self) -> str:
        return "ToolContext"


CONTEXT_MARKER = _ContextMarker()
# Annotate a parameter with ``ToolContext`` to receive the tool context (any name).
ToolContext = typing.Annotated[Any, CONTEXT_MARKER]

_PRIMITIVES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    bytes: {"type": "string"},
    pathlib.Path: {"type": "string"},
    pathlib.PurePath: {"type": "string"},
    _dt.datetime: {"type": "string", "format": "date-time"},
    _dt.date: {"type": "string", "format": "date"},
    _dt.time: {"type": "string", "format": "time"},
}


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception:
        return dict(getattr(obj, "__annotations__", {}) or {})


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str) and set(schema) <= {"type", "items", "format", "description", "enum"}:
        out = dict(schema)
        out["type"] = [kind, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [schema, {"type": "null"}]}


def _literal(values: tuple[Any, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {"enum": list(values)}
    kinds = {type(v) for v in values}
    if len(kinds) == 1:
        prim = _PRIMITIVES.get(next(iter(kinds)))
        if prim is not None:
            out = {"type": prim["type"], "enum": list(values)}
    return out


def _object_from_fields(
    hints: Mapping[str, Any], required: Sequence[str], docs: Mapping[str, str], seen: set[Any]
) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for name, hint in hints.items():
        prop = schema_for_type(hint, seen)
        if docs.get(name) and "description" not in prop:
            prop = {**prop, "description": docs[name]}
        props[name] = prop
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    return out


def schema_for_type(tp: Any, seen: set[Any] | None = None) -> dict[str, Any]:
    """The JSON schema of one annotation (``{}`` = anything, for unknown types)."""
    seen = set() if seen is None else seen
    if tp is inspect.Parameter.empty or tp is Any or tp is object:
        return {}
    if isinstance(tp, str):  # unresolved forward reference
        return {}
    if tp in _PRIMITIVES:
        return dict(_PRIMITIVES[tp])
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        inner = schema_for_type(args[0], seen)
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            inner = {**inner, "description": " ".join(notes)}
        return inner
    if origin is typing.Literal:
        return _literal(args)
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            inner = schema_for_type(members[0], seen)
            return _nullable(inner) if len(members) < len(args) else inner
        options = [schema_for_type(a, seen) for a in args]
        return {"anyOf": options}
    if origin in (list, set, frozenset) or origin in (Sequence, typing.Sequence):
        items = schema_for_type(args[0], seen) if args else {}
        out: dict[str, Any] = {"type": "array"}
        if items:
            out["items"] = items
        if origin in (set, frozenset):
            out["uniqueItems"] = True
        return out
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            inner = schema_for_type(args[0], seen)
            return {"type": "array", "items": inner} if inner else {"type": "array"}
        if args == ((),):
            return {"type": "array", "maxItems": 0}
        return {
            "type": "array",
            "prefixItems": [schema_for_type(a, seen) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in (dict, Mapping, typing.Mapping) or tp in (dict, Mapping):
        out = {"type": "object"}
        if len(args) == 2 and schema_for_type(args[1], seen):
            out["additionalProperties"] = schema_for_type(args[1], seen)
        return out
    if tp in (list, set, frozenset, tuple, Sequence):
        return {"type": "array"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        return _literal(tuple(values))
    if tp in seen:  # recursive type: stop here
        return {"type": "object"}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        seen = seen | {tp}
        hints = _hints(tp)
        fields = [f for f in dataclasses.fields(tp) if f.init]
        required = [
            f.name
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        docs = parse_docstring(tp.__doc__).params if tp.__doc__ else {}
        out = _object_from_fields(
            {f.name: hints.get(f.name, Any) for f in fields}, required, docs, seen
        )
        summary = parse_docstring(tp.__doc__).summary if tp.__doc__ else ""
        if summary and not summary.startswith(f"{tp.__name__}("):
            out["description"] = summary
        return out
    if _is_typeddict(tp):
        seen = seen | {tp}
        hints = _hints(tp)
        required_keys: frozenset[str] = getattr(tp, "__required_keys__", frozenset())
        total = getattr(tp, "__total__", True)
        required = []
        for key, hint in hints.items():
            wrapper = typing.get_origin(hint)
            if wrapper is typing.Required or (
                wrapper is not typing.NotRequired and (key in required_keys or total)
            ):
                required.append(key)
        clean = {
            k: (typing.get_args(v)[0] if typing.get_origin(v) in _REQ_WRAPPERS else v)
            for k, v in hints.items()
        }
        return _object_from_fields(clean, required, {}, seen)
    return {}


_REQ_WRAPPERS = {typing.Required, typing.NotRequired}


def hint_target(func: Callable[..., Any]) -> Any:
    """The object whose annotations describe ``func``'s parameters."""
    if inspect.isfunction(func) or inspect.ismethod(func):
        return func
    if isinstance(func, functools.partial):
        return hint_target(func.func)
    if isinstance(func, type):
        return getattr(func, "__init__", func)
    return type(func).__call__


def context_parameter(param: inspect.Parameter, hint: Any) -> bool:
    """True when ``param`` receives the tool context rather than a model argument."""
    if param.name == "context":
        return True
    if typing.get_origin(hint) is typing.Annotated:
        return any(a is CONTEXT_MARKER for a in typing.get_args(hint)[1:])
    return False


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def schema_for_function(func: Callable[..., Any]) -> tuple[dict[str, Any], str, list[str]]:
    """The parameters schema, the description and the names of context parameters."""
    signature = inspect.signature(func)
    hints = _hints(hint_target(func))
    doc = parse_docstring(inspect.getdoc(func))
    props: dict[str, Any] = {}
    required: list[str] = []
    context_names: list[str] = []
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        hint = hints.get(name, param.annotation)
        if context_parameter(param, hint):
            context_names.append(name)
            continue
        prop = schema_for_type(hint)
        if param.default is not param.empty:
            if param.default is None and prop and "null" not in json.dumps(prop):
                prop = _nullable(prop)
            if _jsonable(_plain_default(param.default)):
                prop = {**prop, "default": _plain_default(param.default)}
        else:
            required.append(name)
        if doc.params.get(name):
            prop = {**prop, "description": doc.params[name]}
        props[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema, doc.summary, context_names


def _plain_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, pathlib.PurePath):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value

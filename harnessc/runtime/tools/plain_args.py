"""Python tool parameters of plain types, read without pydantic.

A plain type is ``str``, ``int``, ``float``, ``bool``, ``None``, ``Any`` (or no
annotation), ``X | None``, a ``Literal`` of strings, integers or booleans, ``list[X]``,
``tuple[X, ...]``, ``Sequence[X]`` and ``dict[str, X]`` of plain types, and
``Annotated[X, "a note"]``. For these this module writes the JSON schema pydantic
writes (in pydantic's form, before ``schema._tidy``) and checks and converts the
model's arguments as pydantic's lax mode does: ``"3"`` and ``3.0`` are 3 for an int,
``1`` is True for a bool, a list is a tuple for ``tuple[int, ...]``; its messages are
pydantic's. Start-up then skips pydantic (about 160 ms and 7-9 MiB per process).

A value whose outcome it cannot be sure of (one that JSON cannot spell, such as bytes
or a set, or a number written as ``"1_000"`` or ``"inf"``) raises ``Unsure``: the caller
then asks pydantic.
"""

from __future__ import annotations

import collections.abc
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct

__all__ = [
    "NOT_JSON",
    "PlainArguments",
    "PlainField",
    "Unsure",
    "json_default",
    "plain_type",
    "pydantic_order",
    "raw_schema",
]


class Unsure(Exception):
    """The value is one whose outcome only pydantic gives for certain."""


Loc = tuple[str | int, ...]
Errors = list[tuple[Loc, str]]

_INT_TYPE = "Input should be a valid integer"
_INT_PARSING = "Input should be a valid integer, unable to parse string as an integer"
_INT_FRACTION = "Input should be a valid integer, got a number with a fractional part"
_FINITE = "Input should be a finite number"
_FLOAT_TYPE = "Input should be a valid number"
_FLOAT_PARSING = "Input should be a valid number, unable to parse string as a number"
_BOOL_TYPE = "Input should be a valid boolean"
_BOOL_PARSING = "Input should be a valid boolean, unable to interpret input"
_STR_TYPE = "Input should be a valid string"
_NONE_TYPE = "Input should be None"
_MISSING = "Field required"

# The values JSON gives; anything else is left to pydantic.
_JSON_SCALARS = (str, int, float, bool, type(None))
# Whitespace Rust's str::trim removes that is ASCII (not \x1c-\x1f, which str.strip takes).
_ASCII_SPACE = " \t\n\r\x0b\x0c"
_PLAIN_INT = re.compile(r"[+-]?[0-9]+(?:\.0+)?")
_PLAIN_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NOT_FINITE_WORDS = frozenset({"inf", "infinity", "nan"})
_TRUE_WORDS = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE_WORDS = frozenset({"0", "off", "f", "false", "n", "no"})
# Past these the fast path does not follow pydantic's integer range rules.
_SAFE_INT = 2**62
_LONG_STRING = 4000


class _Failed:
    """The result of a check that added an error."""


FAILED = _Failed()


def _is_json(value: Any) -> bool:
    return type(value) in _JSON_SCALARS or type(value) is list or type(value) is dict


def _has_digit(text: str) -> bool:
    return any("0" <= c <= "9" for c in text)


class _Node:
    """One plain type: its schema and its check."""

    __slots__ = ()

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        raise NotImplementedError


class _AnyNode(_Node):
    __slots__ = ()

    def schema(self) -> dict[str, Any]:
        return {}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        return value


class _StrNode(_Node):
    __slots__ = ()

    def schema(self) -> dict[str, Any]:
        return {"type": "string"}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        if type(value) is str:
            return value
        if not _is_json(value):
            raise Unsure
        errors.append((loc, _STR_TYPE))
        return FAILED


class _IntNode(_Node):
    __slots__ = ()

    def schema(self) -> dict[str, Any]:
        return {"type": "integer"}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        kind = type(value)
        if kind is int:
            return value
        if kind is bool:
            return int(value)
        if kind is float:
            if not math.isfinite(value):
                errors.append((loc, _FINITE))
                return FAILED
            if not value.is_integer():
                errors.append((loc, _INT_FRACTION))
                return FAILED
            if abs(value) >= _SAFE_INT:
                raise Unsure
            return int(value)
        if kind is str:
            if len(value) > _LONG_STRING or not value.isascii():
                raise Unsure
            if not _has_digit(value):
                errors.append((loc, _INT_PARSING))
                return FAILED
            text = value.strip(_ASCII_SPACE)
            if not _PLAIN_INT.fullmatch(text):
                raise Unsure
            return int(text.split(".", 1)[0])
        if kind in (type(None), list, dict):
            errors.append((loc, _INT_TYPE))
            return FAILED
        raise Unsure


class _FloatNode(_Node):
    __slots__ = ()

    def schema(self) -> dict[str, Any]:
        return {"type": "number"}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        kind = type(value)
        if kind is float:
            return value
        if kind is bool:
            return float(value)
        if kind is int:
            if abs(value) >= _SAFE_INT:
                raise Unsure
            return float(value)
        if kind is str:
            if len(value) > _LONG_STRING or not value.isascii():
                raise Unsure
            text = value.strip(_ASCII_SPACE)
            if _PLAIN_FLOAT.fullmatch(text):
                return float(text)
            if text.lstrip("+-").lower() in _NOT_FINITE_WORDS or _has_digit(text):
                raise Unsure
            errors.append((loc, _FLOAT_PARSING))
            return FAILED
        if kind in (type(None), list, dict):
            errors.append((loc, _FLOAT_TYPE))
            return FAILED
        raise Unsure


class _BoolNode(_Node):
    __slots__ = ()

    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        kind = type(value)
        if kind is bool:
            return value
        if kind is int:
            if value in (0, 1):
                return value == 1
            if abs(value) >= _SAFE_INT:
                raise Unsure
            errors.append((loc, _BOOL_PARSING))
            return FAILED
        if kind is float:
            if not math.isfinite(value) or abs(value) >= _SAFE_INT:
                raise Unsure
            if value in (0.0, 1.0):
                return value == 1.0
            errors.append((loc, _BOOL_PARSING if value.is_integer() else _BOOL_TYPE))
            return FAILED
        if kind is str:
            if not value.isascii():
                raise Unsure
            word = value.lower()
            if word in _TRUE_WORDS:
                return True
            if word in _FALSE_WORDS:
                return False
            errors.append((loc, _BOOL_PARSING))
            return FAILED
        if kind in (type(None), list, dict):
            errors.append((loc, _BOOL_TYPE))
            return FAILED
        raise Unsure


class _NoneNode(_Node):
    __slots__ = ()

    def schema(self) -> dict[str, Any]:
        return {"type": "null"}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        if value is None:
            return None
        if not _is_json(value):
            raise Unsure
        errors.append((loc, _NONE_TYPE))
        return FAILED


class _LiteralNode(_Node):
    """Literal values (str, int, bool): a value equal to one (as a dict key is: 1.0
    and True are 1) is that one."""

    __slots__ = ("values", "lookup", "message")

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values
        self.lookup = {v: v for v in values}
        shown = [repr(v) for v in values]
        listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
        self.message = f"Input should be {listed}"

    def schema(self) -> dict[str, Any]:
        kinds = {type(v) for v in self.values}
        out: dict[str, Any] = (
            {"const": self.values[0]} if len(self.values) == 1 else {"enum": list(self.values)}
        )
        if len(kinds) == 1:
            out["type"] = {str: "string", int: "integer", bool: "boolean"}[kinds.pop()]
        return out

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        kind = type(value)
        if kind is int or kind is float:
            if not math.isfinite(value) or abs(value) >= _SAFE_INT:
                raise Unsure  # pydantic's range rules for numbers apply first
        if kind in _JSON_SCALARS and value in self.lookup:
            return self.lookup[value]
        if not _is_json(value) or (kind is str and not value.isascii()):
            raise Unsure
        errors.append((loc, self.message))
        return FAILED


class _NullableNode(_Node):
    __slots__ = ("inner",)

    def __init__(self, inner: _Node) -> None:
        self.inner = inner

    def schema(self) -> dict[str, Any]:
        return {"anyOf": [self.inner.schema(), {"type": "null"}]}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        return None if value is None else self.inner.check(value, loc, errors)


class _ArrayNode(_Node):
    """``list[X]``, ``tuple[X, ...]`` (a tuple is made) or ``Sequence[X]`` (a list)."""

    __slots__ = ("item", "kind")

    _MESSAGES: typing.ClassVar[dict[str, str]] = {
        "list": "Input should be a valid list",
        "tuple": "Input should be a valid tuple",
        "sequence": "Input should be an instance of Sequence",
    }

    def __init__(self, item: _Node, kind: str) -> None:
        self.item = item
        self.kind = kind

    def schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.schema()}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        if type(value) is list:
            out = []
            ok = True
            for index, item in enumerate(value):
                checked = self.item.check(item, (*loc, index), errors)
                ok = ok and checked is not FAILED
                out.append(checked)
            if not ok:
                return FAILED
            return tuple(out) if self.kind == "tuple" else out
        if not _is_json(value):
            raise Unsure
        if self.kind == "sequence" and type(value) is str:
            errors.append((loc, "'str' instances are not allowed as a Sequence value"))
        else:
            errors.append((loc, self._MESSAGES[self.kind]))
        return FAILED


class _DictNode(_Node):
    """``dict[str, X]``."""

    __slots__ = ("value",)

    def __init__(self, value: _Node) -> None:
        self.value = value

    def schema(self) -> dict[str, Any]:
        inner = self.value.schema()
        return {"type": "object", "additionalProperties": inner or True}

    def check(self, value: Any, loc: Loc, errors: Errors) -> Any:
        if type(value) is dict:
            out = {}
            ok = True
            for key, item in value.items():
                if type(key) is not str:
                    raise Unsure
                checked = self.value.check(item, (*loc, key), errors)
                ok = ok and checked is not FAILED
                out[key] = checked
            return out if ok else FAILED
        if not _is_json(value):
            raise Unsure
        errors.append((loc, "Input should be a valid dictionary"))
        return FAILED


_SCALARS: dict[Any, _Node] = {
    str: _StrNode(),
    int: _IntNode(),
    float: _FloatNode(),
    bool: _BoolNode(),
    None: _NoneNode(),
    type(None): _NoneNode(),
    Any: _AnyNode(),
}
_SEQUENCES = (collections.abc.Sequence, typing.Sequence)


def _literal(args: tuple[Any, ...]) -> _Node | None:
    for value in args:
        if type(value) not in (str, int, bool):
            return None
        if type(value) is int and abs(value) >= 2**53:
            return None
    # 1 and True (0 and False) are one key: pydantic tells them apart, this does not.
    if len({(v if type(v) is str else ("n", v)) for v in args}) != len(args):
        return None
    return _LiteralNode(args)


def plain_type(hint: Any) -> _Node | None:
    """The plain type ``hint`` is, or None when it is not one (pydantic reads it then)."""
    try:
        known = _SCALARS.get(hint)
    except TypeError:  # not hashable
        return None
    if known is not None:
        return known
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        if not all(isinstance(note, str) for note in args[1:]):
            return None
        return plain_type(args[0])
    if origin in (typing.Union, types.UnionType):
        others = [a for a in args if a is not type(None)]
        if len(args) != 2 or len(others) != 1:
            return None
        inner = plain_type(others[0])
        if inner is None or isinstance(inner, _NullableNode | _NoneNode):
            return None
        return _NullableNode(inner)
    if origin is typing.Literal:
        return _literal(args)
    item: _Node | None
    if hint is list or origin is list:
        item = plain_type(args[0]) if len(args) == 1 else (_SCALARS[Any] if not args else None)
        return None if item is None else _ArrayNode(item, "list")
    if hint is tuple or origin is tuple:
        if not args:
            item = _SCALARS[Any]
        elif len(args) == 2 and args[1] is Ellipsis:
            item = plain_type(args[0])
        else:
            return None
        return None if item is None else _ArrayNode(item, "tuple")
    if origin in _SEQUENCES and len(args) == 1:
        item = plain_type(args[0])
        if item is None or isinstance(item, _AnyNode):  # pydantic takes a str for Sequence[Any]
            return None
        return _ArrayNode(item, "sequence")
    if hint is dict or origin is dict:
        if not args:
            return _DictNode(_SCALARS[Any])
        if len(args) != 2 or args[0] is not str:
            return None
        value = plain_type(args[1])
        return None if value is None else _DictNode(value)
    return None


# What ``json_default`` gives for a value that is not made of JSON values.
NOT_JSON = object()


def json_default(value: Any) -> Any:
    """``value`` as pydantic writes a default in a schema (a tuple is a list), or
    ``NOT_JSON`` when it is not made of JSON values only."""
    kind = type(value)
    if kind in (str, int, bool, type(None)):
        return value
    if kind is float:
        return value if math.isfinite(value) else NOT_JSON
    if kind is list or kind is tuple:
        items = [json_default(v) for v in value]
        return NOT_JSON if any(v is NOT_JSON for v in items) else items
    if kind is dict:
        if not all(type(k) is str for k in value):
            return NOT_JSON
        entries = {k: json_default(v) for k, v in value.items()}
        return NOT_JSON if any(v is NOT_JSON for v in entries.values()) else entries
    return NOT_JSON


def pydantic_order(value: Any, parent_key: str | None = None) -> Any:
    """Keys sorted as pydantic sorts a schema's: all but those of ``properties`` and
    ``default`` mappings (so the schema of a parameter called ``default`` keeps the
    order the nodes write their keys in, which is pydantic's)."""
    if isinstance(value, dict):
        keys = value if parent_key in ("properties", "default") else sorted(value)
        return {key: pydantic_order(value[key], key) for key in keys}
    if isinstance(value, list):
        return [pydantic_order(item, parent_key) for item in value]
    return value


class PlainField(Struct, frozen=True):
    """A model argument: its name, type, schema default (``json_default``) and
    description."""

    name: str
    node: _Node
    default: Any
    description: str
    required: bool


def raw_schema(fields: tuple[PlainField, ...], accepts_any: bool) -> dict[str, Any]:
    """The parameters' schema as pydantic writes it (titles left out)."""
    properties: dict[str, Any] = {}
    for field in fields:
        prop = field.node.schema()
        if not field.required:
            prop["default"] = field.default
        if field.description:
            prop["description"] = field.description
        properties[field.name] = prop
    schema: dict[str, Any] = {"properties": properties, "type": "object"}
    required = [field.name for field in fields if field.required]
    if required:
        schema["required"] = required
    if accepts_any:
        schema["additionalProperties"] = True
    return typing.cast(dict[str, Any], pydantic_order(schema))


class PlainArguments:
    """Checks and converts the model's arguments to plain-typed parameters; a value it
    is unsure of sends the whole call to ``fallback`` (pydantic's check)."""

    __slots__ = ("fields", "names", "accepts_any", "fallback")

    def __init__(
        self,
        fields: tuple[PlainField, ...],
        accepts_any: bool,
        fallback: Callable[[Mapping[str, Any]], dict[str, Any]],
    ) -> None:
        self.fields = fields
        self.names = frozenset(field.name for field in fields)
        self.accepts_any = accepts_any
        self.fallback = fallback

    def __call__(self, params: Mapping[str, Any]) -> dict[str, Any]:
        given = dict(params)
        try:
            return self._check(given)
        except Unsure:
            return self.fallback(given)

    def _check(self, given: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        errors: Errors = []
        for field in self.fields:
            if field.name in given:
                value = field.node.check(given[field.name], (field.name,), errors)
                if value is not FAILED:
                    out[field.name] = value
            elif field.required:
                errors.append(((field.name,), _MISSING))
        if self.accepts_any:
            for key, value in given.items():
                if type(key) is not str:
                    raise Unsure
                if key not in self.names:
                    out[key] = value
        if errors:
            raise ValueError(
                "; ".join(f"{'.'.join(str(p) for p in loc)}: {msg}" for loc, msg in errors[:10])
            )
        return out

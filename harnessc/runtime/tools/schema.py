"""A python tool's parameters from its signature: pydantic makes both the JSON schema
the model is shown and the validator the model's arguments go through.

Whatever pydantic understands works as in pydantic-ai: primitives, Optional and unions,
Literal, Enum, lists, tuples, sets and dicts, TypedDict, dataclasses, pydantic models,
paths and dates, ``Annotated[..., Field(description=..., ge=...)]`` and defaults.
Parameter descriptions come from the docstring (Google, NumPy or Sphinx style), a
``Field(description=...)`` winning over it; a bare string in ``Annotated[int, "how
many"]`` describes the parameter too. A type pydantic cannot handle is taken as
"anything" (schema ``{}``, the value passed as it came). Definitions are inlined
(only a recursive type keeps ``$defs``), titles are dropped, and ``X | None`` of a
simple ``X`` is written ``{"type": [X, "null"]}``.

Parameters all of plain types (str, int, float, bool, None, Any, ``X | None``,
Literal, lists, ``tuple[X, ...]``, ``Sequence[X]``, ``dict[str, X]``, string notes in
``Annotated``: see ``plain_args``) are read without pydantic, giving the same schema and
the same checked arguments. pydantic (about 160 ms and 7-9 MiB) is imported for the
first python tool with another type, so an agent without one never loads it.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from harnessc.runtime.tools.docstrings import parse_docstring
from harnessc.runtime.tools.plain_args import (
    NOT_JSON,
    PlainArguments,
    PlainField,
    json_default,
    plain_type,
    raw_schema,
)

if TYPE_CHECKING:
    from pydantic import BaseModel, ValidationError

__all__ = [
    "CONTEXT_MARKER",
    "FunctionSchema",
    "ToolContext",
    "context_parameter",
    "function_schema",
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

# Keys whose value is one schema, a list of schemas, or a mapping of name -> schema.
_ONE = frozenset(
    {"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"}
)
_MANY = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})
_NAMED = frozenset({"properties", "patternProperties", "dependentSchemas"})
# A nullable member with only these keys is written {"type": [kind, "null"]}.
_NULLABLE_KEYS = frozenset({"type", "items", "format", "description", "enum"})


@dataclass(frozen=True, slots=True)
class FunctionSchema:
    """What a function's signature gives a python tool.

    ``schema``: the parameters' JSON schema; ``summary``: the docstring's first
    paragraph; ``context_names``: parameters that receive the tool context.
    """

    schema: dict[str, Any]
    summary: str
    context_names: tuple[str, ...]
    check: Callable[[Mapping[str, Any]], dict[str, Any]]

    def arguments(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments the model sent, validated and converted to the annotated types
        (dataclasses, enums, paths, models...). Arguments it left out are left out, so the
        function's own defaults apply. Raises ValueError naming every bad argument."""
        return self.check(params)


class _PydanticArguments:
    """The model's arguments through the pydantic model of the parameters."""

    __slots__ = ("model", "fields", "accepts_any")

    def __init__(
        self, model: type[BaseModel], fields: tuple[tuple[str, str], ...], accepts_any: bool
    ) -> None:
        self.model = model
        # (parameter name, pydantic field name) of each model argument
        self.fields = fields
        self.accepts_any = accepts_any

    def __call__(self, params: Mapping[str, Any]) -> dict[str, Any]:
        from pydantic import ValidationError

        try:
            value = self.model.model_validate(dict(params))
        except ValidationError as exc:
            raise ValueError(_problems(exc)) from None
        sent = value.model_fields_set
        out = {name: getattr(value, key) for name, key in self.fields if key in sent}
        if self.accepts_any and value.model_extra:
            out.update(value.model_extra)
        return out


def _problems(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors(include_url=False)[:10]:
        where = ".".join(str(part) for part in error["loc"]) or "(arguments)"
        lines.append(f"{where}: {error['msg']}")
    return "; ".join(lines)


def hint_target(func: Callable[..., Any]) -> Any:
    """The object whose annotations describe ``func``'s parameters."""
    if inspect.isfunction(func) or inspect.ismethod(func):
        return func
    if isinstance(func, functools.partial):
        return hint_target(func.func)
    if isinstance(func, type):
        return getattr(func, "__init__", func)
    return type(func).__call__


def _hints(obj: Any) -> dict[str, Any]:
    """Resolved annotations; one that does not resolve (a name defined in a function,
    a typo) is ``Any`` instead of failing the others."""
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception:
        pass
    raw = dict(getattr(obj, "__annotations__", None) or {})
    scope = dict(getattr(obj, "__globals__", None) or {})
    hints: dict[str, Any] = {}
    for name, hint in raw.items():
        if isinstance(hint, str):
            try:
                hint = eval(hint, scope)  # what get_type_hints does, one name at a time
            except Exception:
                hint = Any
        hints[name] = hint
    return hints


def context_parameter(param: inspect.Parameter, hint: Any) -> bool:
    """True when ``param`` receives the tool context rather than a model argument."""
    if param.name == "context":
        return True
    if typing.get_origin(hint) is typing.Annotated:
        return any(a is CONTEXT_MARKER for a in typing.get_args(hint)[1:])
    return False


def _admits_none(hint: Any) -> bool:
    if typing.get_origin(hint) is typing.Annotated:
        return _admits_none(typing.get_args(hint)[0])
    if hint is None or hint is type(None) or hint is Any or hint is object:
        return True
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_admits_none(a) for a in typing.get_args(hint))
    return False


def _or_none(hint: Any) -> Any:
    """``hint | None``, keeping ``Annotated`` metadata on the outside."""
    if typing.get_origin(hint) is typing.Annotated:
        inner, *meta = typing.get_args(hint)
        return typing.Annotated[(typing.Optional[inner], *meta)]  # noqa: UP045
    return typing.Optional[hint]  # noqa: UP045


def _notes(hint: Any) -> tuple[str, bool]:
    """The bare strings of ``Annotated[X, "..."]`` and whether a Field describes it."""
    if typing.get_origin(hint) is not typing.Annotated:
        return "", False
    meta = typing.get_args(hint)[1:]
    if all(isinstance(m, str) for m in meta):
        return " ".join(meta), False
    from pydantic.fields import FieldInfo

    described = any(isinstance(m, FieldInfo) and m.description for m in meta)
    return " ".join(m for m in meta if isinstance(m, str)), described


def _portable(hint: Any, seen: frozenset[Any] = frozenset()) -> Any:
    """``hint`` with each ``typing.TypedDict`` (in it, its unions, containers and other
    TypedDicts) rebuilt as a ``typing_extensions.TypedDict``: before Python 3.12 pydantic
    reads only those. A TypedDict inside a dataclass or model is not reached."""
    if sys.version_info >= (3, 12):
        return hint
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if typing.is_typeddict(hint) and type(hint).__module__ == "typing":
        if hint in seen:  # recursive: left as it is (pydantic then takes it as anything)
            return hint
        import typing_extensions

        required: frozenset[str] = getattr(hint, "__required_keys__", frozenset())
        fields = {}
        for key, value in _hints(hint).items():
            value = _portable(value, seen | {hint})
            if typing.get_origin(value) not in (typing.Required, typing.NotRequired):
                value = typing.Required[value] if key in required else typing.NotRequired[value]
            fields[key] = value
        rebuilt: Any = typing_extensions.TypedDict(hint.__name__, fields)  # type: ignore[misc,operator]
        rebuilt.__doc__, rebuilt.__module__ = hint.__doc__, hint.__module__
        return rebuilt
    if not args or origin is typing.Literal:
        return hint
    if origin is typing.Annotated:
        return typing.Annotated[(_portable(args[0], seen), *args[1:])]
    new = tuple(_portable(a, seen) for a in args)
    if all(a is b for a, b in zip(new, args, strict=True)):
        return hint
    if origin in (typing.Union, types.UnionType):
        return typing.Union[new]  # noqa: UP007
    if origin in (typing.Required, typing.NotRequired):
        return origin[new[0]]
    if isinstance(hint, types.GenericAlias):
        return types.GenericAlias(origin, new)
    copy_with = getattr(hint, "copy_with", None)
    return copy_with(new) if callable(copy_with) else hint


def _usable(hint: Any) -> bool:
    """Whether pydantic can validate ``hint`` and write its schema."""
    from pydantic import create_model

    try:
        probe = create_model("Probe", value=(hint, ...))
        probe.model_json_schema(schema_generator=_generator())
    except Exception:
        return False
    return True


class _Parameter(Struct, frozen=True):
    """A model argument: ``default`` is ``...`` when it is required."""

    name: str
    hint: Any
    default: Any
    description: str


class _Signature(Struct, frozen=True):
    """What ``func``'s signature, hints and docstring say of its model arguments."""

    parameters: tuple[_Parameter, ...]
    summary: str
    context_names: tuple[str, ...]
    accepts_any: bool


def _read_signature(func: Callable[..., Any]) -> _Signature:
    signature = inspect.signature(func)
    hints = _hints(hint_target(func))
    doc = parse_docstring(inspect.getdoc(func))
    parameters: list[_Parameter] = []
    context_names: list[str] = []
    accepts_any = False
    for name, param in signature.parameters.items():
        if param.kind is param.VAR_KEYWORD:
            accepts_any = True
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        hint = hints.get(name, param.annotation)
        if context_parameter(param, hint):
            context_names.append(name)
            continue
        if hint is param.empty or isinstance(hint, str):
            hint = Any
        hint = _portable(hint)
        if param.default is None and not _admits_none(hint):
            hint = _or_none(hint)
        notes, described = _notes(hint)
        description = "" if described else (doc.params.get(name) or notes)
        default = ... if param.default is param.empty else param.default
        parameters.append(_Parameter(name, hint, default, description))
    return _Signature(tuple(parameters), doc.summary, tuple(context_names), accepts_any)


def function_schema(func: Callable[..., Any]) -> FunctionSchema:
    """The schema and the validator of ``func``'s model arguments."""
    found = _read_signature(func)
    return _plain_schema(found) or _pydantic_schema(found)


def _pydantic_function_schema(func: Callable[..., Any]) -> FunctionSchema:
    """``function_schema`` through pydantic whatever the types (tests compare the two)."""
    return _pydantic_schema(_read_signature(func))


def _plain_schema(found: _Signature) -> FunctionSchema | None:
    """The schema and check without pydantic, when every parameter has a plain type
    and a default made of JSON values (None otherwise)."""
    fields: list[PlainField] = []
    for parameter in found.parameters:
        node = plain_type(parameter.hint)
        required = parameter.default is ...
        default = None if required else json_default(parameter.default)
        if node is None or default is NOT_JSON:
            return None
        fields.append(PlainField(parameter.name, node, default, parameter.description, required))
    plain = tuple(fields)
    return FunctionSchema(
        schema=_tidy(raw_schema(plain, found.accepts_any)),
        summary=found.summary,
        context_names=found.context_names,
        check=PlainArguments(plain, found.accepts_any, _LaterPydantic(found)),
    )


class _LaterPydantic:
    """pydantic's check of a signature, built when first asked for."""

    __slots__ = ("found", "check")

    def __init__(self, found: _Signature) -> None:
        self.found = found
        self.check: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None

    def __call__(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if self.check is None:
            self.check = _pydantic_schema(self.found).check
        return self.check(params)


def _pydantic_schema(found: _Signature) -> FunctionSchema:
    from pydantic import ConfigDict, Field, create_model

    # Field names of our own: a parameter may be called ``json`` or ``model_config``.
    specs = {f"p{i}": p for i, p in enumerate(found.parameters)}
    accepts_any = found.accepts_any

    def build() -> tuple[type[BaseModel], dict[str, Any]]:
        fields: dict[str, Any] = {}
        for key, p in specs.items():
            # (description=None would overwrite one given in Annotated[..., Field()])
            info = (
                Field(p.default, alias=p.name, description=p.description)
                if p.description
                else Field(p.default, alias=p.name)
            )
            fields[key] = (p.hint, info)
        model = create_model(
            "Arguments",
            __config__=ConfigDict(extra="allow" if accepts_any else "ignore"),
            **fields,
        )
        return model, model.model_json_schema(schema_generator=_generator())

    try:
        model, schema = build()
    except Exception:  # a type pydantic cannot handle: that parameter takes anything
        for key, parameter in list(specs.items()):
            if not _usable(parameter.hint):
                specs[key] = _Parameter(
                    parameter.name, Any, parameter.default, parameter.description
                )
        model, schema = build()
    return FunctionSchema(
        schema=_tidy(schema),
        summary=found.summary,
        context_names=found.context_names,
        check=_PydanticArguments(
            model, tuple((p.name, key) for key, p in specs.items()), accepts_any
        ),
    )


def schema_for_function(func: Callable[..., Any]) -> tuple[dict[str, Any], str, list[str]]:
    """The parameters schema, the description and the names of context parameters."""
    found = function_schema(func)
    return found.schema, found.summary, list(found.context_names)


def schema_for_type(tp: Any) -> dict[str, Any]:
    """The JSON schema of one annotation (``{}`` = anything, for a type pydantic cannot
    handle)."""
    from pydantic import TypeAdapter

    try:
        schema = TypeAdapter(_portable(tp)).json_schema(schema_generator=_generator())
    except Exception:
        return {}
    return _tidy(schema)


@functools.cache
def _generator() -> Any:
    """pydantic's schema generator, made lenient and given docstring descriptions
    (a class: pydantic instantiates it per schema)."""
    from pydantic.json_schema import GenerateJsonSchema

    class ToolJsonSchema(GenerateJsonSchema):
        ignored_warning_kinds = {"skipped-choice", "non-serializable-default"}

        def handle_invalid_for_json_schema(self, schema: Any, error_info: str) -> Any:
            return {}

        def dataclass_schema(self, schema: Any) -> Any:
            return _describe_class(super().dataclass_schema(schema), schema["cls"])

        def model_schema(self, schema: Any) -> Any:
            return _describe_class(super().model_schema(schema), schema["cls"])

        def typed_dict_schema(self, schema: Any) -> Any:
            return _describe_class(super().typed_dict_schema(schema), schema["cls"])

    return ToolJsonSchema


def _describe_class(json_schema: Any, cls: Any) -> Any:
    """Field descriptions from the class docstring's ``Args:`` / ``Attributes:`` (where
    pydantic has none), and its summary instead of the whole docstring."""
    doc = cls.__doc__
    if not isinstance(json_schema, dict) or not doc or doc.startswith(f"{cls.__name__}("):
        return json_schema
    parsed = parse_docstring(doc)
    props = json_schema.get("properties")
    if parsed.params and isinstance(props, dict):
        for name, prop in props.items():
            if isinstance(prop, dict) and parsed.params.get(name):
                prop.setdefault("description", parsed.params[name])
    if parsed.summary and json_schema.get("description") == inspect.cleandoc(doc):
        json_schema["description"] = parsed.summary
    return json_schema


def _tidy(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema as the model should see it: definitions inlined (recursive ones
    kept in ``$defs``), no titles, ``{"type": [X, "null"]}`` for a simple nullable X."""
    defs: dict[str, Any] = dict(schema.get("$defs") or {})
    kept: dict[str, Any] = {}

    def walk(node: Any, stack: frozenset[str]) -> Any:
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            name = ref[8:]
            rest = walk({k: v for k, v in node.items() if k != "$ref"}, stack)
            if name in stack:  # recursive: refer to it, and keep its definition
                if name not in kept:
                    kept[name] = {}
                    kept[name] = walk(defs[name], frozenset({name}))
                return {"$ref": ref, **rest}
            return {**walk(defs[name], stack | {name}), **rest}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("title", "$defs"):
                continue
            if key in _ONE:
                out[key] = walk(value, stack)
            elif key in _MANY and isinstance(value, list):
                out[key] = [walk(v, stack) for v in value]
            elif key in _NAMED and isinstance(value, dict):
                out[key] = {k: walk(v, stack) for k, v in value.items()}
            else:
                out[key] = value
        return _collapse_nullable(out)

    tidy = walk(schema, frozenset())
    if kept:
        tidy["$defs"] = kept
    return typing.cast(dict[str, Any], tidy)


def _collapse_nullable(node: dict[str, Any]) -> dict[str, Any]:
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return node
    other = options[0] if options[1] == {"type": "null"} else options[1]
    if not isinstance(other.get("type"), str) or not set(other) <= _NULLABLE_KEYS:
        return node
    out = {**other, **{k: v for k, v in node.items() if k != "anyOf"}}
    out["type"] = [other["type"], "null"]
    if "enum" in other:
        out["enum"] = [*other["enum"], None]
    return out

"""The pydantic model of a spec's ``output.schema``, as readable Python source.

An object schema becomes a ``BaseModel`` class (nested objects become classes of their
own, named after their property); ``enum`` / ``const`` become ``Literal``; constraints
become ``Field(...)`` arguments; a property that is not required defaults to None.
What a class cannot say (``allOf``, ``$ref``, ``patternProperties`` ...) becomes ``Any``:
the runtime validates the answer against the schema itself, the model is for readers
and type checkers.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

from harnessc.compiler.pyexpr import Lit, from_json, py_string

__all__ = ["OUTPUT_CLASS", "OutputModel", "output_model"]

OUTPUT_CLASS = "Output"
_SIMPLE = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_CONSTRAINTS = {
    "minimum": "ge",
    "maximum": "le",
    "exclusiveMinimum": "gt",
    "exclusiveMaximum": "lt",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minItems": "min_length",
    "maxItems": "max_length",
    "pattern": "pattern",
    "multipleOf": "multiple_of",
}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(slots=True)
class OutputModel:
    """Class definitions (dependencies first) and the names they import."""

    classes: list[str] = field(default_factory=list)
    pydantic: set[str] = field(default_factory=set)
    typing: set[str] = field(default_factory=set)
    taken: set[str] = field(default_factory=set)

    def source(self) -> str:
        return "\n\n\n".join(self.classes)


def output_model(schema: dict[str, Any]) -> OutputModel:
    """The model of ``schema``: class ``Output`` (a RootModel when it is not an object)."""
    out = OutputModel()
    out.taken.add(OUTPUT_CLASS)
    if _is_object(schema):
        _object_class(out, OUTPUT_CLASS, schema)
    else:
        annotation = _annotation(out, "Item", schema)
        out.pydantic.add("RootModel")
        doc = _docstring(schema, "The agent's typed result (the spec's output.schema).")
        out.classes.append(f"class {OUTPUT_CLASS}(RootModel[{annotation}]):\n    {doc}")
    return out


def _is_object(schema: Any) -> bool:
    return isinstance(schema, dict) and (
        schema.get("type") == "object" and isinstance(schema.get("properties"), dict)
    )


def _class_name(out: OutputModel, hint: str) -> str:
    base = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", hint))
    base = base if base and _IDENTIFIER.match(base) else "Item"
    name, n = base, 2
    while name in out.taken:
        name, n = f"{base}{n}", n + 1
    out.taken.add(name)
    return name


def _docstring(schema: dict[str, Any], default: str) -> str:
    text = schema.get("description") if isinstance(schema.get("description"), str) else None
    text = (text or default).strip() or default
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"""{text}"""'
    return py_string(text)


def _object_class(out: OutputModel, name: str, schema: dict[str, Any]) -> str:
    out.pydantic.add("BaseModel")
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    default_doc = (
        "The agent's typed result (the spec's output.schema)."
        if name == OUTPUT_CLASS
        else f"The {name} of the result."
    )
    lines = [f"class {name}(BaseModel):", f"    {_docstring(schema, default_doc)}", ""]
    if schema.get("additionalProperties") is False:
        out.pydantic.add("ConfigDict")
        lines += ['    model_config = ConfigDict(extra="forbid")', ""]
    for key, prop in properties.items():
        prop = prop if isinstance(prop, dict) else {}
        attr = key if _IDENTIFIER.match(key) and not keyword.iskeyword(key) else None
        attr = attr if attr is not None and not attr.startswith("_") else None
        field_name = attr or _safe_attr(key)
        annotation = _annotation(out, key, prop)
        args: list[str] = []
        if attr is None:
            args.append(f"alias={py_string(key)}")
        for json_key, arg in _CONSTRAINTS.items():
            if json_key in prop and isinstance(prop[json_key], int | float | str):
                args.append(f"{arg}={Lit(prop[json_key]).flat()}")
        if isinstance(prop.get("description"), str):
            args.append(f"description={py_string(prop['description'])}")
        if key not in required:
            if "None" not in annotation.split(" | "):
                annotation += " | None"
            default = prop.get("default")  # a list or an object too: pydantic copies it
            args.insert(0, f"default={from_json(default).flat()}")
        if args:
            out.pydantic.add("Field")
            if len(args) == 1 and args[0].startswith("default="):
                value = f" = {args[0][len('default=') :]}"
            else:
                value = f" = Field({', '.join(args)})"
        else:
            value = ""
        lines.append(f"    {field_name}: {annotation}{value}")
    if not properties:
        lines.append("    pass")
    out.classes.append("\n".join(lines).replace("\n\n\n", "\n\n"))
    return name


def _scalar(value: Any) -> bool:
    """A value ``Literal[...]`` can hold (an object or a list in ``const`` / ``enum`` is
    left to the schema's validation)."""
    return value is None or isinstance(value, str | int | float | bool)


def _safe_attr(key: str) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", key).lstrip("_") or "field"
    if keyword.iskeyword(text):
        return text + "_"
    return "f_" + text if text[0].isdigit() else text


def _annotation(out: OutputModel, hint: str, schema: Any) -> str:
    if not isinstance(schema, dict):
        out.typing.add("Any")
        return "Any"
    if "const" in schema and _scalar(schema["const"]):
        out.typing.add("Literal")
        return f"Literal[{Lit(schema['const']).flat()}]"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(_scalar(v) for v in enum):
        out.typing.add("Literal")
        return f"Literal[{', '.join(Lit(v).flat() for v in enum)}]"
    for union in ("anyOf", "oneOf"):
        options = schema.get(union)
        if isinstance(options, list) and options:
            parts = [_annotation(out, hint, option) for option in options]
            return " | ".join(dict.fromkeys(parts))
    kind = schema.get("type")
    if isinstance(kind, list):
        parts = [_annotation(out, hint, {**schema, "type": k}) for k in kind]
        return " | ".join(dict.fromkeys(parts))
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        items = schema.get("items")
        return f"list[{_annotation(out, hint, items) if isinstance(items, dict) else 'Any'}]" + (
            "" if isinstance(items, dict) else _use_any(out)
        )
    if _is_object(schema):
        return _object_class(out, _class_name(out, hint), schema)
    if kind == "object":
        out.typing.add("Any")
        return "dict[str, Any]"
    out.typing.add("Any")
    return "Any"


def _use_any(out: OutputModel) -> str:
    out.typing.add("Any")
    return ""

"""Python tools read their parameters through pydantic: each kind of annotation it
understands gives a schema the model is shown and a validator its arguments go through."""

from __future__ import annotations

import datetime as dt
import enum
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typing_extensions
from pydantic import BaseModel, Field

from harnessc.runtime.tools import python_tool
from harnessc.runtime.tools.schema import function_schema, schema_for_function, schema_for_type
from harnessc.runtime.tools.validation import validate_arguments

REPO = Path(__file__).resolve().parents[2]


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


class Address(BaseModel):
    """Where a parcel goes."""

    street: str = Field(description="street and number")
    city: str


class Parcel(BaseModel):
    to: Address
    weight_kg: Annotated[float, Field(gt=0)]
    size: Size = Size.SMALL


@dataclass
class Window:
    """A time window.

    Args:
        start: first day
        days: how many days
    """

    start: dt.date
    days: int = 1


@dataclass
class Route:
    stops: list[Window]


class Node(BaseModel):
    name: str
    children: list[Node] = []


class Tags(typing_extensions.TypedDict):
    name: str
    weight: typing_extensions.NotRequired[float]


class Opaque:
    """A type pydantic knows nothing about."""


def _props(func: Any) -> dict[str, Any]:
    return schema_for_function(func)[0]["properties"]


def _call(func: Any, params: dict[str, Any], run_tool: Any, txt: Any) -> tuple[bool, str]:
    result = run_tool(python_tool(func), params)
    return result.is_error, txt(result)


def test_annotated_field_gives_description_and_constraints(run_tool, txt):
    def pick(
        n: Annotated[int, Field(description="how many", ge=1, le=5)],
        label: Annotated[str, Field(description="from Field")] = "x",
    ) -> str:
        """Pick.

        Args:
            n: from the docstring
            label: also from the docstring
        """
        return f"{n}{label}"

    p = _props(pick)
    assert p["n"] == {"type": "integer", "description": "how many", "minimum": 1, "maximum": 5}
    assert p["label"] == {"type": "string", "description": "from Field", "default": "x"}
    assert _call(pick, {"n": 3}, run_tool, txt) == (False, "3x")
    failed, text = _call(pick, {"n": 9}, run_tool, txt)
    assert failed and text == "pick: bad arguments: n: Input should be less than or equal to 5"


def test_nested_pydantic_models_are_inlined_and_built(run_tool, txt):
    def ship(parcel: Parcel) -> str:
        assert isinstance(parcel.to, Address) and isinstance(parcel.size, Size)
        return f"{parcel.to.city} {parcel.weight_kg} {parcel.size.name}"

    schema = schema_for_function(ship)[0]
    assert "$defs" not in schema
    parcel = schema["properties"]["parcel"]
    assert parcel["properties"]["to"] == {
        "type": "object",
        "description": "Where a parcel goes.",
        "properties": {
            "street": {"type": "string", "description": "street and number"},
            "city": {"type": "string"},
        },
        "required": ["street", "city"],
    }
    assert parcel["properties"]["weight_kg"] == {"type": "number", "exclusiveMinimum": 0}
    assert parcel["properties"]["size"] == {"type": "integer", "enum": [1, 2], "default": 1}
    args = {"parcel": {"to": {"street": "1 Main", "city": "Oslo"}, "weight_kg": 2, "size": 2}}
    assert _call(ship, args, run_tool, txt) == (False, "Oslo 2.0 LARGE")
    failed, text = _call(ship, {"parcel": {"to": {"city": "Oslo"}, "weight_kg": 0}}, run_tool, txt)
    assert failed
    assert "parcel.to.street: Field required" in text
    assert "parcel.weight_kg: Input should be greater than 0" in text


def test_dataclass_docstring_describes_its_fields_and_values_are_converted(run_tool, txt):
    def plan(route: Route) -> str:
        assert isinstance(route.stops[0], Window)
        return ",".join(f"{w.start.isoformat()}+{w.days}" for w in route.stops)

    window = schema_for_type(Window)
    assert window == {
        "type": "object",
        "description": "A time window.",
        "properties": {
            "start": {"type": "string", "format": "date", "description": "first day"},
            "days": {"type": "integer", "default": 1, "description": "how many days"},
        },
        "required": ["start"],
    }
    args = {"route": {"stops": [{"start": "2026-01-02"}, {"start": "2026-02-01", "days": "3"}]}}
    assert _call(plan, args, run_tool, txt) == (False, "2026-01-02+1,2026-02-01+3")


def test_literal_enum_and_path_are_checked_and_converted(run_tool, txt):
    def open_it(mode: Literal["r", "w"], size: Size, where: Path, when: dt.datetime) -> str:
        assert isinstance(where, Path) and isinstance(when, dt.datetime)
        return f"{mode} {size.name} {where.name} {when.year}"

    args = {"mode": "r", "size": 1, "where": "/tmp/a.txt", "when": "2026-05-01T10:00:00"}
    assert _call(open_it, args, run_tool, txt) == (False, "r SMALL a.txt 2026")
    failed, text = _call(open_it, {**args, "mode": "x", "size": 7}, run_tool, txt)
    assert failed
    assert "mode: Input should be 'r' or 'w'" in text and "size: Input should be 1 or 2" in text
    p = _props(open_it)
    assert p["when"] == {"type": "string", "format": "date-time"}
    assert p["where"] == {"type": "string", "format": "path"}


def test_defaults_and_optional(run_tool, txt):
    marker = object()

    def f(a: int = None, b: str | None = "b", c: Any = marker) -> str:  # type: ignore[assignment]
        return f"{a} {b} {c is marker}"

    p = _props(f)
    assert p["a"] == {"type": ["integer", "null"], "default": None}
    assert p["b"] == {"type": ["string", "null"], "default": "b"}
    assert p["c"] == {}  # a default that is not JSON stays out of the schema
    assert "required" not in schema_for_function(f)[0]
    # what the model left out is left out: the function's own defaults apply, unchanged
    assert _call(f, {}, run_tool, txt) == (False, "None b True")
    assert _call(f, {"a": "4", "b": None}, run_tool, txt) == (False, "4 None True")


def test_typed_dicts_in_lists_and_from_typing(run_tool, txt):
    def tag(items: list[Tags]) -> str:
        return ";".join(f"{t['name']}={t.get('weight', '-')}" for t in items)

    assert _props(tag)["items"] == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "weight": {"type": "number"}},
            "required": ["name"],
        },
    }
    args = {"items": [{"name": "a"}, {"name": "b", "weight": 2}]}
    assert _call(tag, args, run_tool, txt) == (False, "a=-;b=2.0")


def test_a_recursive_model_keeps_its_definition_and_validates(run_tool, txt):
    def count(tree: Node) -> int:
        return 1 + sum(count(c) for c in tree.children)

    schema = schema_for_function(count)[0]
    tree = schema["properties"]["tree"]  # inlined once, then referred to
    assert tree["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    node = schema["$defs"]["Node"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    args = {"tree": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}
    assert validate_arguments(args, schema) == (args, [])  # the harness's check reads $defs
    assert validate_arguments({"tree": {"children": [{}]}}, schema)[1]
    assert _call(count, args, run_tool, txt) == (False, "3")


def test_awkward_names_kwargs_and_unknown_types(run_tool, txt):
    def odd(json: str, model_config: int, thing: Opaque, **more: Any) -> str:
        return f"{json} {model_config} {thing!r} {sorted(more.items())}"

    p = _props(odd)
    assert p == {"json": {"type": "string"}, "model_config": {"type": "integer"}, "thing": {}}
    args = {"json": "j", "model_config": 2, "thing": [1], "extra": True}
    assert _call(odd, args, run_tool, txt) == (False, "j 2 [1] [('extra', True)]")


def test_unresolvable_annotation_is_anything(run_tool, txt):
    def later(x: NotDefinedAnywhere, y: int) -> str:  # type: ignore[name-defined]  # noqa: F821
        return f"{x} {y + 1}"

    assert _props(later) == {"x": {}, "y": {"type": "integer"}}
    assert _call(later, {"x": "raw", "y": "1"}, run_tool, txt) == (False, "raw 2")


def test_a_pydantic_model_returned_is_json(run_tool, txt):
    def where() -> Address:
        return Address(street="1 Main", city="Oslo")

    result = run_tool(python_tool(where), {})
    assert txt(result) == '{\n  "street": "1 Main",\n  "city": "Oslo"\n}'


def test_docstring_styles_read_by_the_library():
    def epy(a: int) -> None:
        """Do a.

        @param a: the a
        """

    found = function_schema(epy)
    assert found.summary == "Do a."
    assert found.schema["properties"]["a"]["description"] == "the a"


def test_importing_the_python_tool_module_loads_no_pydantic():
    """Hooks and sub-agents import this module for ``import_object``; only a python
    tool's schema loads the docstring parser, and pydantic only for a type that is not
    plain (tests/tools/test_plain_args.py)."""
    probe = (
        "import sys\n"
        "from harnessc.runtime.tools.pyfunc import import_object, python_tool\n"
        "print('pydantic' in sys.modules, 'docstring_parser' in sys.modules)\n"
        "python_tool(import_object('os.path:join'))\n"
        "print('pydantic' in sys.modules, 'docstring_parser' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.split() == ["False", "False", "False", "True"], done.stderr

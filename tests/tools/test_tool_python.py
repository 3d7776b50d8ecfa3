from __future__ import annotations

import asyncio
import enum
import sys
import textwrap
import threading
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict, Union

import pytest

from harnessc.runtime.tools import ToolContext, ToolResult, import_object, python_tool, text_result
from harnessc.runtime.tools.docstrings import parse_docstring
from harnessc.runtime.tools.schema import schema_for_function


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Point:
    """A point on the plane."""

    x: float
    y: float = 0.0
    tags: list[str] = field(default_factory=list)


class Movie(TypedDict):
    title: str
    year: NotRequired[int]


def google(path: str, count: int = 3, *, verbose: bool = False) -> str:
    """Count things in a file.

    Second paragraph is not part of the description.

    Args:
        path: The file to read.
        count (int): How many things
            to count at most.
        verbose: Print more.

    Returns:
        A summary.
    """
    return f"{path}:{count}:{verbose}"


def numpy_style(a: int, b: Optional[str] = None) -> dict:  # noqa: UP045
    """Add things.

    Parameters
    ----------
    a : int
        First value.
    b : str, optional
        Second value.
    """
    return {"a": a, "b": b}


def sphinx_style(q: str) -> list:
    """Search.

    :param q: the query text
    :returns: hits
    """
    return [q, q]


def test_google_docstring_schema():
    schema, description, ctx = schema_for_function(google)
    assert description == "Count things in a file."
    assert ctx == []
    assert schema == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file to read."},
            "count": {
                "type": "integer",
                "default": 3,
                "description": "How many things to count at most.",
            },
            "verbose": {"type": "boolean", "default": False, "description": "Print more."},
        },
        "required": ["path"],
    }


def test_numpy_and_sphinx_docstrings():
    schema, description, _ = schema_for_function(numpy_style)
    assert description == "Add things."
    assert schema["properties"]["a"] == {"type": "integer", "description": "First value."}
    assert schema["properties"]["b"] == {
        "type": ["string", "null"],
        "default": None,
        "description": "Second value.",
    }
    schema, description, _ = schema_for_function(sphinx_style)
    assert description == "Search."
    assert schema["properties"]["q"]["description"] == "the query text"


def _props(func):
    return schema_for_function(func)[0]["properties"]


def test_type_table():
    def f(
        a: Literal["x", "y"],
        b: str | None,
        c: list[int],
        d: dict[str, float],
        e: Color,
        f: Point,
        g: Movie,
        h: tuple[int, str],
        i: set[str],
        j: Union[int, str],  # noqa: UP007
        k: Annotated[int, "how many"],
        m: Any,
        n,
        o: list[Point] | None = None,
        p: Literal[1, 2] = 1,
        q: float = 1.5,
        r: tuple[int, ...] = (),
    ) -> None:
        pass

    p = _props(f)
    assert p["a"] == {"type": "string", "enum": ["x", "y"]}
    assert p["b"] == {"type": ["string", "null"]}
    assert p["c"] == {"type": "array", "items": {"type": "integer"}}
    assert p["d"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["e"] == {"type": "string", "enum": ["red", "blue"]}
    assert p["f"] == {
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "y": {"type": "number", "default": 0.0},  # pydantic shows a field's default
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["x"],
        "description": "A point on the plane.",
    }
    assert p["g"] == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["title"],
    }
    assert p["h"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert p["i"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    assert p["j"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert p["k"] == {"type": "integer", "description": "how many"}
    assert p["m"] == {} and p["n"] == {}
    assert p["o"]["type"] == ["array", "null"] and p["o"]["default"] is None
    assert p["o"]["items"]["required"] == ["x"]
    assert p["p"] == {"type": "integer", "enum": [1, 2], "default": 1}
    assert p["q"] == {"type": "number", "default": 1.5}
    assert p["r"] == {"type": "array", "items": {"type": "integer"}, "default": []}
    required = schema_for_function(f)[0]["required"]
    assert required == ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "m", "n"]


def test_context_parameters_are_hidden():
    def by_name(x: int, context: dict) -> str:
        return str(context["workspace"]) + str(x)

    def by_marker(ctx: ToolContext, x: int = 1) -> str:
        return str(ctx["workspace"]) + str(x)

    for func in (by_name, by_marker):
        schema, _, names = schema_for_function(func)
        assert list(schema["properties"]) == ["x"]
        assert len(names) == 1


def test_calls_sync_in_thread_and_passes_context(run_tool, txt):
    seen = {}

    def where(x: int, ctx: ToolContext) -> str:
        seen["thread"] = threading.current_thread() is threading.main_thread()
        return f"{ctx['workspace']}:{x}"

    tool = python_tool(where)
    assert tool.name == "where"
    assert txt(run_tool(tool, {"x": 2}, {"workspace": "/w"})) == "/w:2"
    assert seen["thread"] is False


def test_async_function_and_return_values(run_tool, txt):
    async def fetch(n: int) -> dict:
        """Fetch n things."""
        await asyncio.sleep(0)
        return {"n": n, "items": list(range(n))}

    tool = python_tool(fetch)
    assert tool.description == "Fetch n things."
    result = run_tool(tool, {"n": 2})
    assert txt(result) == '{\n  "n": 2,\n  "items": [\n    0,\n    1\n  ]\n}'
    assert result.details == {"n": 2, "items": [0, 1]}
    assert txt(run_tool(python_tool(sphinx_style), {"q": "a"})) == '[\n  "a",\n  "a"\n]'
    assert txt(run_tool(python_tool(lambda: None, name="noop"), {})) == "(no output)"
    passthrough = python_tool(lambda: text_result("raw", {"k": 1}), name="raw")
    assert run_tool(passthrough, {}).details == {"k": 1}


def test_dataclass_and_enum_arguments_are_built(run_tool, txt):
    def area(p: Point, color: Color = Color.RED) -> str:
        assert isinstance(p, Point) and isinstance(color, Color)
        return f"{p.x * p.y} {color.value}"

    tool = python_tool(area)
    assert tool.parameters["properties"]["color"]["default"] == "red"
    assert txt(run_tool(tool, {"p": {"x": 2, "y": 3}, "color": "blue"})) == "6.0 blue"


def test_exceptions_become_error_results(run_tool, txt):
    def boom(x: int) -> str:
        raise ValueError(f"bad x {x}")

    result = run_tool(python_tool(boom), {"x": 1})
    assert result.is_error and txt(result) == "boom failed: ValueError: bad x 1"
    missing = run_tool(python_tool(boom), {})
    assert missing.is_error and "bad arguments" in txt(missing)


def test_explicit_overrides(run_tool):
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tool = python_tool(sphinx_style, name="search", description="Find.", parameters=schema)
    assert (tool.name, tool.description, tool.parameters) == ("search", "Find.", schema)


def test_methods_callables_and_partials(run_tool, txt):
    import functools

    class Greeter:
        def greet(self, name: str) -> str:
            """Say hello."""
            return f"hi {name}"

        def __call__(self, n: int) -> str:
            return str(n * 2)

    assert list(schema_for_function(Greeter().greet)[0]["properties"]) == ["name"]
    assert txt(run_tool(python_tool(Greeter().greet), {"name": "bo"})) == "hi bo"
    assert txt(run_tool(python_tool(Greeter(), name="double"), {"n": 4})) == "8"
    part = functools.partial(google, count=1)
    assert txt(run_tool(python_tool(part, name="g"), {"path": "p"})) == "p:1:False"


def test_tool_result_passthrough_errors(run_tool):
    def fail() -> ToolResult:
        return ToolResult(is_error=True)

    assert run_tool(python_tool(fail), {}).is_error


def test_parse_docstring_edge_cases():
    assert parse_docstring(None).summary == ""
    doc = parse_docstring("One line.\nstill first paragraph\n\nArgs:\n    a: x\n")
    assert doc.summary == "One line. still first paragraph" and doc.params == {"a": "x"}


def test_import_object(tmp_path):
    pkg = tmp_path / "mytools_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(
        textwrap.dedent(
            """
            class Box:
                class Inner:
                    value = 42

            def double(x: int) -> int:
                return x * 2
            """
        )
    )
    (tmp_path / "loose.py").write_text("def hello():\n    return 'hello'\n")
    try:
        assert import_object("mytools_pkg.ops:double", tmp_path)(4) == 8
        assert sys.path[0] == str(tmp_path)
        assert import_object("mytools_pkg.ops:Box.Inner.value", tmp_path) == 42
        assert import_object("loose.py:hello", tmp_path)() == "hello"
        with pytest.raises(ImportError, match="no attribute 'nope'"):
            import_object("mytools_pkg.ops:nope", tmp_path)
        with pytest.raises(ImportError, match="cannot import module 'missing_mod_xyz'"):
            import_object("missing_mod_xyz:f", tmp_path)
        with pytest.raises(ImportError, match="expected 'module:attribute'"):
            import_object("no_colon", tmp_path)
        (tmp_path / "broken_mod.py").write_text("raise RuntimeError('boom at import')\n")
        with pytest.raises(ImportError, match="RuntimeError: boom at import"):
            import_object("broken_mod:x", tmp_path)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith(("mytools_pkg", "broken_mod"))]:
            del sys.modules[name]

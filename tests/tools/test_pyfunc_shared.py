"""Tools made of one function in many harnesses share what its signature gives."""

from __future__ import annotations

import asyncio
import functools

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import python_tool


def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    Args:
        a: the first
        b: the second
    """
    return a + b


class Scaler:
    __slots__ = ("factor",)  # not weak-referenceable

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, x: int) -> int:
        return x * self.factor


def _call(tool, **params):  # type: ignore[no-untyped-def]
    result = asyncio.run(tool.execute("c1", params, AbortSignal(), lambda _: None, None))
    return result.content[0].text


def test_one_function_is_analysed_once_and_every_tool_stays_its_own():
    """Before: every build_options() call analysed the function again (signature,
    hints, docstring, schema), about 2 KB per harness of a process running thousands."""
    first, second = python_tool(add), python_tool(add)
    assert first is not second
    assert first.parameters is second.parameters
    assert first.parameters["required"] == ["a"]
    assert first.description == "Add two numbers."
    renamed = python_tool(add, name="plus", parameters={"type": "object", "properties": {}})
    assert renamed.name == "plus" and renamed.parameters == {"type": "object", "properties": {}}
    assert _call(first, a=2, b=3) == "5"


def test_callables_that_cannot_be_weakly_referenced_still_make_tools():
    tool = python_tool(Scaler(3), name="scale")
    assert _call(tool, x=4) == "12"
    partial = python_tool(functools.partial(add, b=10), name="add10")
    assert _call(partial, a=1) == "11"

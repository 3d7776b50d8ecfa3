"""Python tools of plain parameter types are read without pydantic, and the result is
pydantic's: the same schema, the same accepted and refused arguments, the same
converted values and messages. Each case is run through both paths and compared."""

from __future__ import annotations

import collections.abc
import inspect
import json
import math
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harnessc.runtime.tools.plain_args import PlainArguments, Unsure, plain_type
from harnessc.runtime.tools.schema import (
    FunctionSchema,
    _pydantic_function_schema,
    function_schema,
)

REPO = Path(__file__).resolve().parents[2]


def _canonical(value: Any) -> Any:
    """A value with its types spelled out (1 and True and 1.0 differ, so do lists and
    tuples; nan equals nan)."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_canonical(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, _canonical(v)) for k, v in value.items()])
    return (type(value).__name__, value)


def _outcome(found: FunctionSchema, params: dict[str, Any]) -> Any:
    try:
        return ("ok", _canonical(found.arguments(params)))
    except (TypeError, ValueError) as exc:
        return ("error", str(exc))


def _both(func: Any) -> tuple[FunctionSchema, FunctionSchema]:
    fast, slow = function_schema(func), _pydantic_function_schema(func)
    assert isinstance(fast.check, PlainArguments), "expected the plain path"
    assert json.dumps(fast.schema) == json.dumps(slow.schema)  # the same keys in the same order
    assert (fast.summary, fast.context_names) == (slow.summary, slow.context_names)
    return fast, slow


def _decided(found: FunctionSchema, params: dict[str, Any]) -> bool:
    """Whether the plain path answered without asking pydantic."""
    check = found.check
    assert isinstance(check, PlainArguments)
    try:
        check._check(dict(params))
    except Unsure:
        return False
    except ValueError:
        pass
    return True


# Values a model may send, many of them awkward for one type or another.
TRICKY: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    3,
    2**40,
    2**70,
    -(2**70),
    0.0,
    -0.0,
    1.0,
    3.0,
    3.5,
    -2.5,
    1e20,
    1e300,
    float("inf"),
    float("-inf"),
    float("nan"),
    "",
    " ",
    "x",
    "a",
    "b",
    "3",
    " 3 ",
    "\t3\n",
    "+3",
    "-3",
    "3.0",
    "3.00",
    "3.",
    "3.5",
    ".5",
    "5.",
    "1e3",
    "1E-2",
    "1_000",
    "0x10",
    "007",
    "\u00a03",
    "\x1c3",
    "\u0663",
    "12" * 40,
    "inf",
    "-Infinity",
    "nan",
    "true",
    "True",
    "FALSE",
    " true",
    "yes",
    "off",
    "on",
    "t",
    "n",
    "0",
    "1",
    "2",
    "null",
    "\ud800",
    [],
    [1, "2", 3.0],
    [True, None],
    ["a", "b"],
    [[1, "2"], []],
    [[1.5]],
    {},
    {"a": 1, "b": "2"},
    {"a": [1, 2], "b": None},
    {"k": {"n": 1}},
]


def plain_everything(
    s: str,
    i: int,
    f: float,
    b: bool,
    n: None,
    anything: Any,
    untyped,  # type: ignore[no-untyped-def]  # noqa: ANN001
    maybe_int: int | None,
    maybe_str: Optional[str],  # noqa: UP045
    none_first: Union[None, float],  # noqa: UP007
    word: Literal["r", "w"],
    number: Literal[1, 2, 3],
    flag: Literal[True],
    mixed: Literal["a", 2, False],
    only: Literal["only"],
    ints: list[int],
    texts: typing.List[str],  # noqa: UP006
    floats: tuple[float, ...],
    seq: collections.abc.Sequence[int],
    tseq: typing.Sequence[bool],  # noqa: UP006
    table: dict[str, int],
    loose: dict[str, Any],
    bare_list: list,  # type: ignore[type-arg]
    bare_dict: dict,  # type: ignore[type-arg]
    bare_tuple: tuple,  # type: ignore[type-arg]
    nested: list[list[int]],
    nested_opt: list[int | None] | None,
    deep: dict[str, list[Optional[dict[str, float]]]],  # noqa: UP045
    noted: Annotated[int, "how many"],
    noted_opt: Annotated[Optional[Literal["x", "y"]], "which one"],  # noqa: UP045
    inner_note: list[Annotated[str, "ignored"]],
    maybe_any: Optional[Any],  # noqa: UP045
) -> None:
    """Every plain type at once.

    Args:
        s: a text
        maybe_int: a number or nothing
        noted: from the docstring, not the note
    """


def with_defaults(
    a: int = 3,
    b: float = 1,
    c: str = "x",
    d: bool | None = None,
    e: int = None,  # type: ignore[assignment]
    f: Annotated[list[int], "n"] = None,  # type: ignore[assignment]
    g: tuple[int, ...] = (1, 2),
    h: dict[str, Any] = {"z": {"b": 1, "a": [2, {"y": 1, "x": 2}]}, "y": 1},  # noqa: B006
    i: Literal["p", "q"] = "q",
    j=None,  # type: ignore[no-untyped-def]  # noqa: ANN001
    k: Any = (1, "x"),
    *rest: int,
    **more: Any,
) -> None:
    pass


def awkward_names(
    default: dict[str, list[int]],
    properties: Literal[1, 2] = 1,
    title: str = "t",
    model_config: int = 0,
    json: bool = False,
    p0: str = "",
) -> None:
    """Names that are keys of a schema or a pydantic model.

    :param default: a key of the schema
    :param title: another
    """


def no_parameters() -> None:
    pass


def only_context(context: Any) -> None:
    pass


CORPUS = [plain_everything, with_defaults, awkward_names, no_parameters, only_context]


def test_every_signature_of_the_corpus_gives_pydantics_schema():
    for func in CORPUS:
        _both(func)


def test_each_tricky_value_for_each_parameter_gives_pydantics_outcome():
    decided = total = 0
    for func in CORPUS:
        fast, slow = _both(func)
        names = list(fast.schema["properties"])
        base = {name: TRICKY[k % len(TRICKY)] for k, name in enumerate(names)}
        cases: list[dict[str, Any]] = [{}, base, {**base, "extra": 1, "p0": [2]}]
        cases += [{**base, name: value} for name in names for value in TRICKY]
        cases += [{name: value} for name in names for value in TRICKY]
        for params in cases:
            assert _outcome(fast, params) == _outcome(slow, params), params
        for params in ({name: value} for name in names for value in TRICKY):
            total += 1
            decided += _decided(fast, params)
    assert decided > 0.8 * total  # pydantic is asked about few of them


def test_non_json_values_are_left_to_pydantic():
    fast, slow = _both(plain_everything)
    for value in (b"3", (1, 2), {1, 2}, frozenset(), bytearray(b"x"), 3 + 0j):
        for name in ("s", "i", "f", "b", "n", "word", "ints", "floats", "seq", "table"):
            assert _outcome(fast, {name: value}) == _outcome(slow, {name: value})
    assert _outcome(fast, {"table": {1: 2}}) == _outcome(slow, {"table": {1: 2}})


def test_a_tool_gets_the_converted_values_and_a_clear_message(run_tool, txt):
    from harnessc.runtime.tools import python_tool

    def pick(n: int, names: tuple[str, ...] = (), loud: bool = False) -> str:
        return f"{n!r} {names!r} {loud!r}"

    tool = python_tool(pick)
    assert txt(run_tool(tool, {"n": 4, "names": ["a"], "loud": True})) == "4 ('a',) True"
    result = run_tool(tool, {"names": ["a", 2]})
    assert result.is_error
    assert txt(result) == (
        "pick: bad arguments: n: Field required; names.1: Input should be a valid string"
    )


def test_types_outside_the_plain_set_are_not_plain():
    import dataclasses
    import datetime
    import enum

    class Color(enum.Enum):
        RED = "red"

    @dataclasses.dataclass
    class Box:
        size: int

    class Movie(typing.TypedDict):
        title: str

    outside = [
        datetime.date,
        Path,
        Color,
        Box,
        Movie,
        int | str,
        Union[int, str, None],  # noqa: UP007
        Literal[1, True],
        Literal[None],
        tuple[int, str],
        tuple[int],
        dict[int, str],
        typing.Sequence[Any],  # noqa: UP006
        set[int],
        Annotated[int, 3],
        object,
        bytes,
    ]
    for hint in outside:
        assert plain_type(hint) is None, hint


def test_a_default_that_is_not_json_goes_to_pydantic():
    marker = object()

    def f(a: int = marker) -> None:  # type: ignore[assignment]
        pass

    def g(a: float = math.inf) -> None:
        pass

    for func in (f, g):
        found = function_schema(func)
        assert not isinstance(found.check, PlainArguments)
        assert found.schema == _pydantic_function_schema(func).schema


# A generator of plain types, of values near them, and of signatures made of them.

_LEAVES = st.sampled_from(
    [str, int, float, bool, None, type(None), Any, Literal["a", "b"], Literal[1, 2]]
    + [Literal[True, False], Literal["x"], Literal[0], Literal["1", 1], Literal[2, True, "b"]]
)


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: typing.List[t]),  # type: ignore[valid-type]  # noqa: UP006
        inner.map(lambda t: tuple[t, ...]),  # type: ignore[valid-type]
        inner.map(lambda t: collections.abc.Sequence[t]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        inner.map(lambda t: Optional[t]),  # type: ignore[valid-type]  # noqa: UP045
        inner.map(lambda t: Union[None, t]),  # type: ignore[valid-type]  # noqa: UP007
        inner.map(lambda t: Annotated[t, "a note"]),
        st.sampled_from([list, dict, tuple]),
    )


PLAIN_TYPES = st.recursive(_LEAVES, _extend, max_leaves=4)

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=3),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 2.0, -0.0, 1e19, 2.0**62, 2.0**63]),
    st.sampled_from([v for v in TRICKY if isinstance(v, str)]),
    st.text(alphabet="0123456789+-._eE x\t", max_size=6),
    st.text(max_size=4),
)
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


def _function(hints: list[Any], defaults: list[Any], kwargs: bool) -> Any:
    def func(**_: Any) -> None:
        pass

    params = []
    annotations: dict[str, Any] = {}
    required = True
    for index, (hint, default) in enumerate(zip(hints, defaults, strict=True)):
        name = f"arg{index}"
        required = required and default is inspect.Parameter.empty
        if not required and default is inspect.Parameter.empty:
            default = None
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default))
        annotations[name] = hint
    if kwargs:
        params.append(inspect.Parameter("more", inspect.Parameter.VAR_KEYWORD))
    func.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    func.__annotations__ = annotations
    return func


SIGNATURES = st.integers(min_value=0, max_value=4).flatmap(
    lambda n: st.tuples(
        st.lists(PLAIN_TYPES, min_size=n, max_size=n),
        st.lists(
            st.one_of(st.just(inspect.Parameter.empty), JSON_VALUES, st.just((1, 2))),
            min_size=n,
            max_size=n,
        ),
        st.booleans(),
    )
)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(signature=SIGNATURES, data=st.data())
def test_generated_signatures_and_arguments_agree_with_pydantic(signature, data):
    hints, defaults, kwargs = signature
    func = _function(hints, defaults, kwargs)
    fast, slow = function_schema(func), _pydantic_function_schema(func)
    assert json.dumps(fast.schema) == json.dumps(slow.schema)
    names = [f"arg{i}" for i in range(len(hints))] + ["extra"]
    for _ in range(6):
        params = data.draw(st.dictionaries(st.sampled_from(names), JSON_VALUES, max_size=5))
        assert _outcome(fast, params) == _outcome(slow, params), (hints, params)


_PROBE = """
import asyncio, sys
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools.pyfunc import import_object, python_tool
tool = python_tool(import_object({ref!r}, {base!r}))
result = asyncio.run(tool.execute("c1", {params!r}, AbortSignal(), lambda _: None, None))
print(result.content[0].text)
print("pydantic" in sys.modules)
"""


def _probe(ref: str, base: str, params: dict[str, Any]) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    code = _PROBE.format(ref=ref, base=base, params=params)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_add_tool_is_made_and_called_without_pydantic():
    """Before: the add tool of the peers benchmark loaded pydantic (about 160 ms of CPU
    and 7-9 MiB at start-up)."""
    assert _probe("add_tools:add", str(REPO / "benchmarks" / "peers"), {"a": 2, "b": "3"}) == [
        "5",
        "False",
    ]


def test_a_tool_with_a_type_outside_the_plain_set_still_loads_pydantic(tmp_path):
    (tmp_path / "day_tools.py").write_text(
        "import datetime\ndef weekday(day: datetime.date) -> int:\n    return day.isoweekday()\n"
    )
    assert _probe("day_tools:weekday", str(tmp_path), {"day": "2026-12-02"}) == ["3", "True"]

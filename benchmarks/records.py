"""Records declared four ways, and the trees' own records: declare, build, encode.

    python benchmarks/records.py [--runs 15] [--tree NAME=PATH ...]

The run's events (``harnessc.runtime.core.events``: some thirty classes, every field with
a default) are read from this tree, and the same classes are written to a temporary
directory in four forms:

- ``written``: slotted classes with the ``__init__`` written out in the source, on a base
  that collects the field names in ``__init_subclass__`` (the form the runtime used before
  msgspec: its bytecode is cached, so importing it runs no code generator);
- ``struct``: ``msgspec.Struct`` subclasses (``kw_only=True``), the classes made in C;
- ``dataclass(slots=True)`` and plain ``dataclass``: the standard library's generator.

For each form it prints, as medians over ``--runs``, run alternately in fresh processes
with bytecode caching on: the CPU time of importing the module of classes (its
prerequisites imported before the clock starts), then, in this process, the time to
build one ``ToolExecutionEndEvent`` (four keyword arguments, the rest defaults) and to
turn one into JSON bytes (``json.dumps(to_dict())`` for the written form as the runtime
does; ``msgspec.json.encode`` for a struct; ``json.dumps(asdict())`` for a dataclass).
It also prints what ``import msgspec`` costs alone and on top of each tree's
``import harnessc.runtime``.

Each ``--tree``, then this one, is measured as it is: ``import harnessc.runtime`` CPU,
building its own ``ToolExecutionEndEvent`` and turning it into JSON the way its event log
does (``json.dumps(event.to_dict())``), with ratios to the first tree (the first
``--tree``: name the tree to compare against there). The figures of a
whole agent (start-up, memory per session) are benchmarks/startup_trees.py's and
benchmarks/concurrency.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Reads the events' shapes from a tree, whatever form its records take.
SHAPES = """
import dataclasses, json, sys
from harnessc.runtime.core import events
def fields(cls):
    try:
        import msgspec
        if issubclass(cls, msgspec.Struct):
            written = {}
            for klass in reversed(cls.__mro__):
                written.update(klass.__dict__.get("__annotations__", {}))
            return [(f.name, written[f.name],
                     f.default_factory is not msgspec.NODEFAULT and f.default_factory.__name__,
                     f.default) for f in msgspec.structs.fields(cls)]
    except ImportError:
        pass
    return [(f.name, f.type if isinstance(f.type, str) else repr(f.type),
             f.default_factory is not dataclasses.MISSING and f.default_factory.__name__,
             f.default) for f in dataclasses.fields(cls)]
shapes = []
for cls in events.EVENT_TYPES.values():
    shapes.append([cls.__name__, cls.type, [
        [n, t, fac, None if fac else d] for n, t, fac, d in fields(cls)
        if n not in ("seq", "timestamp")]])
json.dump(shapes, sys.stdout)
"""

FACTORIES = {"list": ("[]", "NEW_LIST"), "dict": ("{}", "NEW_DICT")}

WRITTEN_BASE = """
import time
from operator import attrgetter
from typing import Any

NEW_LIST: Any = object()
NEW_DICT: Any = object()
NOW: Any = object()


class Record:
    __slots__ = ()
    _field_names: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__init__.__code__
        names = code.co_varnames[1 : 1 + code.co_argcount - 1 + code.co_kwonlyargcount]
        cls._field_names = names
        cls._values = attrgetter(*names) if names else None

    def to_dict(self) -> dict[str, Any]:
        out = {"type": self.type}
        for name in self._field_names:
            out[name] = getattr(self, name)
        return out
"""


def _annotation(text: str) -> str:
    # The shapes' own types name harnessc's messages; the copies stand alone.
    for name in ("AssistantMessage", "ToolResultMessage", "Message", "ToolCall", "Event"):
        text = text.replace(name, "Any")
    return text


def _default(factory: str | bool, value: object, form: str) -> str:
    if not factory:
        return repr(value)
    if form == "written":
        return FACTORIES[str(factory)][1]
    return f"{'msgspec.field' if form == 'struct' else 'field'}(default_factory={factory})"


def _module(shapes: list, form: str) -> str:
    lines = [
        "from __future__ import annotations",
        "",
        "import time",
        "from typing import Any, ClassVar",
    ]
    if form == "written":
        lines += ["from records_base import NEW_DICT, NEW_LIST, NOW, Record", ""]
        lines += [
            "class Event(Record):",
            "    type: ClassVar[str] = 'event'",
            "    __slots__ = ('seq', 'timestamp')",
            "    seq: int",
            "    timestamp: float",
            "",
            "    def __init__(self, *, seq: int = 0, timestamp: float = NOW) -> None:",
            "        self.seq = seq",
            "        self.timestamp = time.time() if timestamp is NOW else timestamp",
            "",
        ]
    elif form == "struct":
        lines += ["import msgspec", "", "class Event(msgspec.Struct, kw_only=True):"]
        lines += ["    type: ClassVar[str] = 'event'", "    seq: int = 0"]
        lines += ["    timestamp: float = msgspec.field(default_factory=time.time)", ""]
    else:
        slots = "slots=True, " if form == "dataclass(slots=True)" else ""
        lines += ["from dataclasses import dataclass, field", ""]
        lines += [f"@dataclass({slots}kw_only=True)", "class Event:"]
        lines += ["    type: ClassVar[str] = 'event'", "    seq: int = 0"]
        lines += ["    timestamp: float = field(default_factory=time.time)", ""]
    for name, kind, fields in shapes:
        if form.startswith("dataclass"):
            lines.append(f"@dataclass({'slots=True, ' if 'slots' in form else ''}kw_only=True)")
        suffix = ", kw_only=True" if form == "struct" else ""
        lines += [f"class {name}(Event{suffix}):", f"    type: ClassVar[str] = {kind!r}"]
        if form == "written":
            lines.append(f"    __slots__ = {tuple(f[0] for f in fields)!r}")
            lines += [f"    {n}: {_annotation(t)}" for n, t, _, _ in fields]
            parameters = "".join(
                f", {n}: {_annotation(t)} = {_default(fac, d, form)}" for n, t, fac, d in fields
            )
            lines.append(
                f"    def __init__(self, *, seq: int = 0, timestamp: float = NOW{parameters}) -> None:"
            )
            lines += ["        self.seq = seq"]
            lines += ["        self.timestamp = time.time() if timestamp is NOW else timestamp"]
            for n, _, fac, _ in fields:
                if fac:
                    made, sentinel = FACTORIES[str(fac)]
                    lines.append(f"        self.{n} = {made} if {n} is {sentinel} else {n}")
                else:
                    lines.append(f"        self.{n} = {n}")
        else:
            lines += [
                f"    {n}: {_annotation(t)} = {_default(fac, d, form)}" for n, t, fac, d in fields
            ]
        lines.append("")
    return "\n".join(lines) + "\n"


FORMS = ["written", "struct", "dataclass(slots=True)", "dataclass"]
MODULES = {
    "written": "records_written",
    "struct": "records_struct",
    "dataclass(slots=True)": "records_dc_slots",
    "dataclass": "records_dc",
}
PREREQUISITES = {
    "written": "import records_base, typing, operator",
    "struct": "import msgspec, typing",
    "dataclass(slots=True)": "import dataclasses, typing",
    "dataclass": "import dataclasses, typing",
}
TIMED_IMPORT = (
    "import time\n{before}\nstarted = time.process_time_ns()\nimport {module}\n"
    "print((time.process_time_ns() - started) / 1e6)"
)


def _env(path: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _cpu_ms(code: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd="/", check=True, capture_output=True, text=True
    )
    return float(out.stdout.split()[-1])


def _per_call_us(statement: str, setup: str, env: dict[str, str]) -> float:
    """The best of five timeit repeats of ``statement``, in a fresh process, per call."""
    code = (
        "import timeit\n"
        f"timer = timeit.Timer({statement!r}, setup={setup!r})\n"
        "number, _ = timer.autorange()\n"
        "print(min(timer.repeat(5, number)) / number * 1e6)"
    )
    return _cpu_ms(code, env)


BUILD = "E(tool_call_id='call-1', tool_name='read', is_error=False, duration_ms=1.5)"
ENCODERS = {
    "written": "json.dumps(event.to_dict()).encode()",
    "struct": "encode(event)",
    "dataclass(slots=True)": "json.dumps({'type': event.type, **asdict(event)}).encode()",
    "dataclass": "json.dumps({'type': event.type, **asdict(event)}).encode()",
}


def _forms(shapes: list, runs: int) -> None:
    try:
        import msgspec  # noqa: F401
    except ImportError:
        sys.exit("msgspec is not installed: pip install msgspec")
    with tempfile.TemporaryDirectory(prefix="records-bench-") as folder:
        where = Path(folder)
        (where / "records_base.py").write_text(WRITTEN_BASE)
        for form in FORMS:
            (where / f"{MODULES[form]}.py").write_text(_module(shapes, form))
        env = _env(where)
        code = {f: TIMED_IMPORT.format(before=PREREQUISITES[f], module=MODULES[f]) for f in FORMS}
        for form in FORMS:  # warm the bytecode caches
            _cpu_ms(code[form], env)
        declare: dict[str, list[float]] = {form: [] for form in FORMS}
        for _ in range(runs):
            for form in FORMS:
                declare[form].append(_cpu_ms(code[form], env))
        build, encode = {}, {}
        for form in FORMS:
            setup = f"from {MODULES[form]} import ToolExecutionEndEvent as E"
            build[form] = _per_call_us(BUILD, setup, env)
            setup += (
                "\nimport json\nfrom dataclasses import asdict\nfrom msgspec.json import encode"
                f"\nevent = {BUILD}"
            )
            encode[form] = _per_call_us(ENCODERS[form], setup, env)
    print(f"\n{len(shapes)} event classes, four forms ({runs} runs, medians; ratio to written)")
    print(f"{'form':24} {'declare (CPU ms)':>17} {'build (µs)':>11} {'encode (µs)':>12}")
    base = statistics.median(declare["written"])
    for form in FORMS:
        cost = statistics.median(declare[form])
        print(
            f"{form:24} {cost:9.2f} {cost / base:6.2f}x"
            f" {build[form]:6.2f} {build[form] / build['written']:4.2f}x"
            f" {encode[form]:6.2f} {encode[form] / encode['written']:4.2f}x"
        )


MSGSPEC_ON_TOP = (
    "import time\nimport harnessc.runtime\nstarted = time.process_time_ns()\nimport msgspec\n"
    "print((time.process_time_ns() - started) / 1e6)"
)
MSGSPEC_ALONE = (
    "import time\nstarted = time.process_time_ns()\nimport msgspec\n"
    "print((time.process_time_ns() - started) / 1e6)"
)


def _msgspec_import(trees: list[tuple[str, Path]], runs: int) -> None:
    """``import msgspec`` alone, and in a process that has imported each tree's runtime
    (a tree whose records are Structs has loaded it already: 0)."""
    codes = [("alone", MSGSPEC_ALONE, _env(ROOT))] + [
        (f"after {name}'s runtime", MSGSPEC_ON_TOP, _env(tree)) for name, tree in trees
    ]
    for _, code, env in codes:
        _cpu_ms(code, env)
    times: dict[str, list[float]] = {label: [] for label, _, _ in codes}
    for _ in range(runs):
        for label, code, env in codes:
            times[label].append(_cpu_ms(code, env))
    shown = "; ".join(f"{label} {statistics.median(t):.2f} ms" for label, t in times.items())
    print(f"\nimport msgspec, CPU: {shown}")


RUNTIME_IMPORT = (
    "import time\nstarted = time.process_time_ns()\nimport harnessc.runtime\n"
    "print((time.process_time_ns() - started) / 1e6)"
)
TREE_SETUP = (
    "import json\nfrom harnessc.runtime.core.events import ToolExecutionEndEvent as E\n"
    f"event = {BUILD}"
)


def _trees(trees: list[tuple[str, Path]], runs: int) -> None:
    imports: dict[str, list[float]] = {name: [] for name, _ in trees}
    for _, tree in trees:
        _cpu_ms(RUNTIME_IMPORT, _env(tree))
    for _ in range(runs):
        for name, tree in trees:
            imports[name].append(_cpu_ms(RUNTIME_IMPORT, _env(tree)))
    print(f"\nthe trees' own records ({runs} runs, medians; ratio to {trees[0][0]})")
    print(f"{'tree':24} {'import runtime (CPU ms)':>24} {'build (µs)':>12} {'encode (µs)':>13}")
    first: tuple[float, float, float] | None = None
    for name, tree in trees:
        env = _env(tree)
        cost = statistics.median(imports[name])
        build = _per_call_us(BUILD, TREE_SETUP, env)
        encode = _per_call_us("json.dumps(event.to_dict())", TREE_SETUP, env)
        first = first or (cost, build, encode)
        print(
            f"{name:24} {cost:16.2f} {cost / first[0]:6.2f}x"
            f" {build:6.2f} {build / first[1]:4.2f}x {encode:6.2f} {encode / first[2]:4.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    options = parser.parse_args()
    trees = [
        (name, Path(path).resolve()) for name, _, path in (t.partition("=") for t in options.tree)
    ] + [("this tree", ROOT)]
    started = time.monotonic()
    shapes = json.loads(
        subprocess.run(
            [sys.executable, "-c", SHAPES],
            env=_env(ROOT),
            cwd="/",
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    _forms(shapes, options.runs)
    _msgspec_import(trees, options.runs)
    _trees(trees, options.runs)
    print(
        f"\nload average at the end: {os.getloadavg()[0]:.1f} ({time.monotonic() - started:.0f} s)"
    )


if __name__ == "__main__":
    main()

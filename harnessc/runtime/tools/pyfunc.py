"""Python functions as tools (``python_tool``) and ``import_object("mod:attr", base_dir)``."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import importlib
import importlib.util
import inspect
import json
import pathlib
import sys
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessc.runtime.core.messages import ImageContent, TextContent
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools.base import Tool, ToolResult, ToolUpdate, error_result, text_result
from harnessc.runtime.tools.schema import FunctionSchema, function_schema, hint_target
from harnessc.runtime.tools.truncate import cap_text

__all__ = ["import_object", "python_tool", "result_from_value"]


def _to_jsonable(value: Any) -> Any:
    if callable(getattr(type(value), "model_dump", None)):  # a pydantic model
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, pathlib.PurePath | set | frozenset):
        return str(value) if isinstance(value, pathlib.PurePath) else sorted(value, key=str)
    return str(value)


def result_from_value(value: Any) -> ToolResult:
    """str -> text, ToolResult -> as is, anything else -> JSON text (capped)."""
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, TextContent | ImageContent):
        return ToolResult(content=[value])
    if isinstance(value, str):
        return text_result(cap_text(value))
    if value is None:
        return text_result("(no output)")
    try:
        if type(value) is int:  # the common answer: its JSON without the encoder's set-up
            text = str(value)
        else:
            text = json.dumps(value, indent=2, ensure_ascii=False, default=_to_jsonable)
    except (TypeError, ValueError):
        text = str(value)
    return text_result(cap_text(text), value if isinstance(value, dict | list) else None)


# A sync function runs on the event loop instead of a worker thread (whose hand-off
# costs about 0.3-0.5 ms of CPU a call, more than a quick function's own time) once
# its first calls in the thread each took under INLINE_BELOW_S; an inline call that
# takes INLINE_SLOW_S or more sends the function back to the thread for good.
INLINE_AFTER = 5
INLINE_BELOW_S = 0.0005
INLINE_SLOW_S = 0.002

try:  # the context switches of the calling thread (Linux)
    from resource import RUSAGE_THREAD, getrusage
except ImportError:  # elsewhere a call's wall time is its time
    getrusage = None  # type: ignore[assignment]


class _Stopwatch:
    """How long one call took of the function's own time: its wall time when it waited
    (a voluntary context switch: a sleep, I/O, a lock), else its CPU time. So a call
    the scheduler preempted on a loaded machine (another process's time slice,
    milliseconds) counts the little CPU it used, not the time it was kept off the CPU."""

    __slots__ = ("wall", "cpu", "waits")

    def __init__(self) -> None:
        self.waits = getrusage(RUSAGE_THREAD).ru_nvcsw if getrusage is not None else -1
        self.cpu = time.thread_time()
        self.wall = time.perf_counter()

    def took(self, at_least: float) -> float:
        """The call's time; its wall time when that is under ``at_least`` (the case
        that needs no more system calls)."""
        wall = time.perf_counter() - self.wall
        if wall < at_least or self.waits < 0:
            return wall
        if getrusage(RUSAGE_THREAD).ru_nvcsw != self.waits:
            return wall
        return time.thread_time() - self.cpu


class _Analysis:
    """What a function's signature, hints and docstring give (read-only once made),
    and how long its calls took (``quick``: calls in a row under INLINE_BELOW_S;
    ``inline``: True runs it on the loop, False always in a thread, None: measuring)."""

    __slots__ = ("parameters", "signature", "is_async", "names", "required", "quick", "inline")

    def __init__(self, func: Callable[..., Any]) -> None:
        self.parameters: FunctionSchema = function_schema(func)
        self.signature = inspect.signature(func)
        # Keyword arguments that fit (``names`` holding every ``required`` one) bind
        # without ``Signature.bind``; None: the signature has other kinds of parameter.
        kinds = {p.kind for p in self.signature.parameters.values()}
        keyword = {inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY}
        self.names: frozenset[str] | None = None
        self.required: frozenset[str] = frozenset()
        if kinds <= keyword:
            params = self.signature.parameters.values()
            self.names = frozenset(p.name for p in params)
            self.required = frozenset(p.name for p in params if p.default is p.empty)
        target = hint_target(func)
        self.is_async = inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(target)
        self.quick = 0
        self.inline: bool | None = None

    def timed(self, took: float) -> None:
        """A call in the thread took ``took`` seconds of the function's own time."""
        if self.inline is not None:
            return
        if took >= INLINE_BELOW_S:
            self.quick = 0
        else:
            self.quick += 1
            if self.quick >= INLINE_AFTER:
                self.inline = True


# What asyncio raises when code meant for a thread starts an event loop on the loop's
# own thread (``asyncio.run``, ``run_until_complete``).
_LOOP_RUNNING = ("running event loop", "loop is already running", "another loop is running")


async def _inline(func: Callable[..., Any], known: _Analysis, kwargs: dict[str, Any]) -> Any:
    """``func(**kwargs)`` on the loop; a call of INLINE_SLOW_S or more sends the function
    back to the thread for good, and so does one that tried to run an event loop of its
    own (that call is made again in the thread)."""
    watch = _Stopwatch()
    try:
        value = func(**kwargs)
    except RuntimeError as exc:
        if not any(text in str(exc) for text in _LOOP_RUNNING):
            raise
        known.inline = False
        value = await asyncio.to_thread(functools.partial(func, **kwargs))
    finally:
        if watch.took(INLINE_SLOW_S) >= INLINE_SLOW_S:
            known.inline = False
    if inspect.isawaitable(value):
        value = await value
    return value


def _run_timed(func: Callable[..., Any], known: _Analysis, kwargs: dict[str, Any]) -> Any:
    """``func(**kwargs)`` in the worker thread, its time told to ``known``."""
    watch = _Stopwatch()
    try:
        return func(**kwargs)
    finally:
        known.timed(watch.took(INLINE_BELOW_S))


# Kept while the function lives: the harnesses of one process that make a tool of one
# function share its analysis (it holds no reference to the function itself).
_analyses: weakref.WeakKeyDictionary[Callable[..., Any], _Analysis] = weakref.WeakKeyDictionary()


def _analysis(func: Callable[..., Any]) -> _Analysis:
    try:
        known = _analyses.get(func)
    except TypeError:  # not weak-referenceable or not hashable: analysed every time
        known = None
    if known is not None:
        return known
    found = _Analysis(func)
    try:
        _analyses[func] = found
    except TypeError:
        pass
    return found


class _Call:
    """A python tool's execute function: the model's arguments, validated by pydantic, to ``func``.

    An object, not a closure: many harnesses make a tool of one function, and each
    closure would hold cells of its own; this holds the function, the tool's name and
    the function's shared analysis.
    """

    __slots__ = ("func", "name", "analysis")

    def __init__(self, func: Callable[..., Any], name: str, analysis: _Analysis) -> None:
        self.func = func
        self.name = name
        self.analysis = analysis

    async def __call__(
        self,
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        func, tool_name, known = self.func, self.name, self.analysis
        try:
            kwargs = known.parameters.arguments(params or {})
            for key in known.parameters.context_names:
                kwargs[key] = context
            names = known.names
            if names is None or not (known.required <= kwargs.keys() <= names):
                known.signature.bind(**kwargs)  # raises TypeError saying what does not fit
        except (TypeError, ValueError) as exc:
            return error_result(f"{tool_name}: bad arguments: {exc}")
        try:
            if known.is_async:
                value = await func(**kwargs)
            elif known.inline:
                value = await _inline(func, known, kwargs)
            else:
                run = functools.partial(_run_timed, func, known, kwargs)
                value = await asyncio.to_thread(run)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:  # the model sees the failure, the run goes on
            return error_result(f"{tool_name} failed: {type(exc).__name__}: {exc}")
        return result_from_value(value)


def python_tool(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
    timeout_s: float | None = None,
    read_only: bool = False,
) -> Tool:
    """A tool that calls ``func`` with the model's arguments.

    The schema comes from the signature and docstring unless ``parameters`` is given.
    A parameter named ``context`` (or annotated ``ToolContext``) receives the tool
    context and is left out of the schema. A sync function runs in a worker thread
    until its calls have shown it quick (INLINE_AFTER calls in a row under
    INLINE_BELOW_S), then on the event loop; an inline call that takes INLINE_SLOW_S or
    more sends it back to the thread for good.
    ``timeout_s``: the loop ends a call running longer (default: the harness's
    ``tool_timeout_s``). ``read_only``: ``func`` changes no file and has no outside
    effect (its batches take no workspace checkpoint; a recovered durable run calls it
    again); a tool not declared so may change files.
    """
    if not callable(func):
        raise TypeError(f"python_tool needs a callable, got {type(func).__name__}")
    known = _analysis(func)
    schema = parameters if parameters is not None else known.parameters.schema
    tool_name = name or getattr(func, "__name__", None) or type(func).__name__

    return Tool(
        name=tool_name,
        label=tool_name,
        description=description
        or known.parameters.summary
        or f"Call the Python function {tool_name}.",
        parameters=schema,
        run=_Call(func, tool_name, known),
        timeout_s=timeout_s,
        read_only=read_only,
    )


def _load_file_module(file: Path, base: Path | None) -> Any:
    path = file if file.is_absolute() or base is None else base / file
    if not path.is_file():
        raise ImportError(f"cannot import {file}: no such file ({path})")
    return module_from_file(path, f"_harnessc_user_{path.stem}_{abs(hash(str(path.resolve())))}")


def module_from_file(path: Path, name: str) -> Any:
    """The module in ``path``, imported once under ``name`` (``sys.modules`` keeps it; a
    module that fails to run is not kept)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def import_object(ref: str, base_dir: str | Path | None = None) -> Any:
    """Import ``"pkg.mod:attr"`` (``attr`` may be dotted; the module may be a ``.py`` path).

    ``base_dir`` goes first on ``sys.path``. Failures raise ImportError naming the
    reference and the folder searched.
    """
    if not isinstance(ref, str) or ref.count(":") != 1:
        raise ImportError(f"bad reference {ref!r}: expected 'module:attribute'")
    module_name, attr_path = (part.strip() for part in ref.split(":"))
    if not module_name or not attr_path:
        raise ImportError(f"bad reference {ref!r}: expected 'module:attribute'")
    base = Path(base_dir).resolve() if base_dir is not None else None
    where = f" (searched {base} first)" if base is not None else ""
    if base is not None:
        entry = str(base)
        if entry in sys.path:
            sys.path.remove(entry)
        sys.path.insert(0, entry)
        importlib.invalidate_caches()
    try:
        if module_name.endswith(".py") or "/" in module_name:
            module = _load_file_module(Path(module_name), base)
        else:
            module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"cannot import module {module_name!r} for {ref!r}{where}: {exc}"
        ) from exc
    except Exception as exc:
        raise ImportError(
            f"importing module {module_name!r} for {ref!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    obj: Any = module
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ImportError(
                f"module {module_name!r} has no attribute {attr_path!r} (wanted by {ref!r})"
            ) from None
    return obj

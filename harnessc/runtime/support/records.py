"""Slotted record classes that behave as dataclasses without ``dataclass()``'s import cost.

``dataclass()`` writes and compiles an ``__init__``, ``__repr__`` and ``__eq__`` for
every class when its module is imported (about 0.5-1 ms a class, and the run's events and
hook types are some fifty classes). A ``Record`` subclass writes its ``__slots__``,
annotations and ``__init__`` out instead, so they come from the bytecode cache; its
fields are the ``__init__`` parameters, in order. ``Record`` gives it what the
dataclass had: ``__repr__`` and ``__eq__`` over the fields, ``__match_args__`` (the
positional parameters), no ``__hash__`` (``class C(Record, frozen=True)``: a hash over
the fields, and assignment raises ``FrozenInstanceError``; its ``__init__`` sets the
fields with ``object.__setattr__``), and ``__dataclass_fields__`` /
``__dataclass_params__`` built on first use, so ``dataclasses.fields``, ``asdict``,
``replace`` and ``is_dataclass`` treat it as the dataclass it stands for.

A default made per instance (``field(default_factory=list)``) is written as one of the
``Factory`` sentinels below, which the ``__init__`` replaces:
``self.items = [] if items is NEW_LIST else items``.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import Callable
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, ClassVar

__all__ = ["NEW_DICT", "NEW_LIST", "NOW", "Factory", "Record"]


class Factory:
    """An ``__init__`` default meaning "a new ``factory()`` for this instance"."""

    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory

    def __repr__(self) -> str:
        return f"<new {getattr(self.factory, '__qualname__', self.factory)}>"


# Typed Any so that ``items: list[str] = NEW_LIST`` type-checks.
NEW_LIST: Any = Factory(list)
NEW_DICT: Any = Factory(dict)
NOW: Any = Factory(time.time)


def _no_fields(_: object) -> tuple[()]:
    return ()


def _refuse_assignment(self: Record, name: str, value: Any) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_deletion(self: Record, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


def _set_state(self: Record, state: tuple[None, dict[str, Any]]) -> None:
    """Unpickling and copying a frozen record (``object.__getstate__``'s slot values)."""
    for name, value in state[1].items():
        object.__setattr__(self, name, value)


def _hash_fields(self: Record) -> int:
    return hash(self.__class__._values(self))


class _DataclassView:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of the class it is read on."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: object, owner: type[Record]) -> Any:
        return getattr(_twin(owner), self.attribute)


_TWINS: dict[type[Record], type[Any]] = {}


def _twin(cls: type[Record]) -> type[Any]:
    """The dataclass ``cls`` stands for, made once: same fields, types and defaults."""
    twin = _TWINS.get(cls)
    if twin is not None:
        return twin
    annotations: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        annotations.update(klass.__dict__.get("__annotations__", {}))
    parameters = inspect.signature(cls.__init__).parameters
    spec: list[tuple[str, Any, Any]] = []
    for name in cls._field_names:
        parameter = parameters[name]
        kw_only = parameter.kind is inspect.Parameter.KEYWORD_ONLY
        default = parameter.default
        if isinstance(default, Factory):
            made = dataclasses.field(default_factory=default.factory, kw_only=kw_only)
        elif default is inspect.Parameter.empty:
            made = dataclasses.field(kw_only=kw_only)
        else:
            made = dataclasses.field(default=default, kw_only=kw_only)
        spec.append((name, annotations.get(name, "Any"), made))
    twin = dataclasses.make_dataclass(cls.__name__, spec, frozen=cls._frozen)
    _TWINS[cls] = twin
    return twin


class Record:
    """Base of slotted classes with a written-out ``__init__`` (see the module text)."""

    __slots__ = ()
    _field_names: ClassVar[tuple[str, ...]] = ()
    __match_args__: ClassVar[tuple[str, ...]] = ()
    _frozen: ClassVar[bool] = False
    _values: ClassVar[Callable[[Any], Any]] = _no_fields
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]] = _DataclassView(  # type: ignore[assignment]
        "__dataclass_fields__"
    )
    __dataclass_params__: ClassVar[Any] = _DataclassView("__dataclass_params__")

    def __init_subclass__(cls, frozen: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if frozen:
            cls._frozen = True
            cls.__setattr__ = _refuse_assignment  # type: ignore[method-assign,assignment]
            cls.__delattr__ = _refuse_deletion  # type: ignore[method-assign,assignment]
            cls.__hash__ = _hash_fields  # type: ignore[method-assign,assignment]
            cls.__setstate__ = _set_state  # type: ignore[attr-defined]
        code = cls.__init__.__code__
        positional = code.co_varnames[1 : code.co_argcount]
        keyword = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
        cls._field_names = positional + keyword
        cls.__match_args__ = positional  # type: ignore[misc]
        cls._values = attrgetter(*cls._field_names) if cls._field_names else _no_fields

    @recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._field_names)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        values = self.__class__._values
        return bool(values(self) == values(other))

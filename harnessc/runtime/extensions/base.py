"""Extension configs: a config dataclass (decode -> defaults -> validate). The interface an
extension installs through (``Extension``, ``HarnessContext``) is ``options/harness_context.py``.

A config is decoded strictly (unknown fields rejected), then its defaults are
filled, then it is validated; building and validating take the same path, so an
editor error equals a build error. ``decode_config`` does the same for our dataclasses:
keys may be snake_case or camelCase, values are type-checked, and every
error names the extension and the field.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = [
    "ExtensionConfig",
    "ExtensionConfigError",
    "decode_config",
    "require_non_negative",
]


class ExtensionConfigError(ValueError):
    """A bad extension config, or an extension that cannot be installed on a harness."""

    def __init__(self, message: str, *, extension: str = "", field: str = "") -> None:
        self.extension = extension
        self.field = field
        prefix = extension or "extension"
        if field:
            prefix = f"{prefix}.{field}"
        super().__init__(f"{prefix}: {message}")


@runtime_checkable
class ExtensionConfig(Protocol):
    """What ``decode_config`` needs of a config dataclass."""

    def set_defaults(self) -> None: ...

    def validate(self) -> None: ...


C = TypeVar("C")

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(key: str) -> str:
    return _CAMEL.sub("_", key).lower().replace("-", "_")


def _check_type(value: Any, annotation: Any) -> bool:
    """True when ``value`` fits ``annotation`` (int, float, bool, str, their unions, Any)."""
    if annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_check_type(value, arg) for arg in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if origin in (list, tuple):
        return isinstance(value, list | tuple)
    if origin is dict or annotation is dict:
        return isinstance(value, dict)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def decode_config(cls: type[C], data: Mapping[str, Any] | C | None, *, extension: str) -> C:
    """Strict decode of ``data`` into ``cls``, then ``set_defaults()`` and ``validate()``.

    ``data`` may already be a ``cls`` instance (then it is only defaulted and validated).
    """
    if isinstance(data, cls):
        config = data
    else:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ExtensionConfigError(
                f"the config must be a mapping, got {type(data).__name__}", extension=extension
            )
        hints = typing.get_type_hints(cls)
        fields = {
            f.name: hints.get(f.name, Any)
            for f in dataclasses.fields(cls)  # type: ignore[arg-type]
            if f.init and not f.name.startswith("_")
        }
        values: dict[str, Any] = {}
        for raw_key, value in data.items():
            if not isinstance(raw_key, str):
                raise ExtensionConfigError(
                    f"config keys must be strings, got {raw_key!r}", extension=extension
                )
            key = _snake(raw_key)
            if key not in fields:
                close = difflib.get_close_matches(key, list(fields), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                valid = ", ".join(fields) or "none"
                raise ExtensionConfigError(
                    f"unknown key {raw_key!r}{hint}; valid keys: {valid}",
                    extension=extension,
                    field=raw_key,
                )
            if key in values:
                raise ExtensionConfigError(
                    f"given twice (as {key!r} and in camelCase)", extension=extension, field=key
                )
            if not _check_type(value, fields[key]):
                raise ExtensionConfigError(
                    f"expected {_type_name(fields[key])}, got {type(value).__name__} ({value!r})",
                    extension=extension,
                    field=key,
                )
            values[key] = value
        config = cls(**values)
    set_defaults = getattr(config, "set_defaults", None)
    if callable(set_defaults):
        set_defaults()
    validate = getattr(config, "validate", None)
    if callable(validate):
        validate()
    return config


def require_non_negative(
    config: Any, names: tuple[str, ...], *, extension: str, hint: str = ""
) -> None:
    """Raise ExtensionConfigError naming the first field of ``names`` that is negative."""
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ExtensionConfigError(
                f"must be a number, got {type(value).__name__} ({value!r})",
                extension=extension,
                field=name,
            )
        if value < 0:
            raise ExtensionConfigError(
                f"must not be negative (got {value}){hint}", extension=extension, field=name
            )

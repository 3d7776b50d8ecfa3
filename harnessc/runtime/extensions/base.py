"""The extension interface: a config dataclass (decode -> defaults -> validate) and ``install``.

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
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from harnessc.runtime.core.budget import BudgetTracker
    from harnessc.runtime.core.commands import CommandRegistry
    from harnessc.runtime.core.events import Event
    from harnessc.runtime.core.messages import Message
    from harnessc.runtime.core.options import (
        AgentHarnessOptions,
        AgentHarnessStreamOptions,
        Model,
        ToolContextSource,
    )
    from harnessc.runtime.core.signal import AbortSignal
    from harnessc.runtime.providers.base import Provider
    from harnessc.runtime.session.session import Session
    from harnessc.runtime.tools.base import AgentTool

__all__ = [
    "Extension",
    "ExtensionConfig",
    "CompactionPipeline",
    "ExtensionConfigError",
    "HarnessContext",
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


class HarnessContext(Protocol):
    """What an extension (and compaction, and a tree move) may use of a harness.

    ``AgentHarness`` satisfies it; nothing else of the harness is part of the seam.
    """

    session: Session
    commands: CommandRegistry
    compaction_settings: Any  # CompactionSettings, set by the compaction extension
    compactor: Any  # replaces the session summary compaction when set
    # The compaction pipeline (the compaction extension): when set it owns the trigger
    # (the loop's own threshold check is off) and overflow recovery runs it.
    compaction_pipeline: CompactionPipeline | None

    @property
    def options(self) -> AgentHarnessOptions:
        """The options the harness was made with (hooks, extensions, tool context)."""

    @property
    def messages(self) -> list[Message]: ...

    @property
    def model(self) -> Model: ...

    @property
    def models(self) -> dict[str, Model]: ...

    @property
    def active_tool_names(self) -> list[str]: ...

    @property
    def tool_context(self) -> ToolContextSource:
        """Where the tools' context comes from (the current source)."""

    def set_tool_context(self, source: ToolContextSource) -> None: ...

    @property
    def stream_options(self) -> AgentHarnessStreamOptions: ...

    @property
    def budget(self) -> BudgetTracker: ...

    @property
    def is_busy(self) -> bool: ...

    @property
    def tools(self) -> dict[str, AgentTool]:
        """Every tool the agent has, by name (a copy)."""

    @property
    def signal(self) -> AbortSignal | None:
        """The abort signal of the running run (None when idle)."""

    def on(self, name: str, handler: Callable[..., Any]) -> Callable[[], None]: ...

    def subscribe(self, listener: Callable[[Event], Any]) -> Callable[[], None]: ...

    async def emit(self, event: Event) -> list[Any]: ...

    async def notice(self, source: str, message: str, level: str = "info") -> None: ...

    def add_tools(self, tools: Iterable[AgentTool], *, activate: bool = True) -> None: ...

    def remove_tools(self, names: Iterable[str]) -> list[str]: ...

    def on_close(self, callback: Callable[[], Awaitable[None]]) -> None:
        """Run ``callback`` when the harness closes (stop a server, flush a file)."""

    async def call_hooks(
        self, moment: str, event: Any, tool_name: str | None = None
    ) -> list[Any]: ...

    def has_handlers(self, moment: str) -> bool: ...

    def provider_for(self, model: Model) -> Provider: ...

    def reload_messages(self) -> None: ...

    def context_tokens(self, use_usage: bool = True) -> int: ...

    async def compact(
        self, custom_instructions: str | None = None, *, reason: str = "manual"
    ) -> Any: ...


class CompactionPipeline(Protocol):
    """What the loop asks of an installed compaction pipeline."""

    async def recover(self, harness: HarnessContext) -> bool:
        """Compact after a context overflow (every service, forced); True when it did."""


@runtime_checkable
class Extension(Protocol):
    """A hook provider: ``install`` registers handlers, tools and /commands on a harness."""

    name: str

    @property
    def command_names(self) -> tuple[str, ...]: ...

    def install(self, harness: HarnessContext) -> None: ...


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

"""Build extensions by name from plain config dicts (one registry for all of them).

Names are the snake_case ones of the spec (``compaction``, ``session_index``,
``turn_continue``, ``turn_nudge``); the ``hook/...`` names (``hook/before-step``,
``hook/session-index``, ``hook/turn-continue``, ``hook/turn-nudge``) are aliases.
``build_extensions`` also rejects two extensions contributing the same /command.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from harnessc.runtime.core import catalog
from harnessc.runtime.extensions.base import ExtensionConfigError
from harnessc.runtime.options.harness_context import Extension

__all__ = [
    "EXTENSION_ALIASES",
    "build_extension",
    "build_extensions",
    "check_commands",
    "extension_names",
    "register_extension",
]

ExtensionFactory = Callable[[Any], Extension]

EXTENSION_ALIASES: dict[str, str] = {
    alias: entry.name for entry in catalog.EXTENSIONS for alias in entry.aliases
}

_factories: dict[str, ExtensionFactory] = {}


def _builtin(name: str) -> ExtensionFactory | None:
    entry = catalog.extension_for(name)
    if entry is None or entry.name != name:
        return None
    cls: Any = entry.load()  # the Extension class; from_config builds it from a dict
    factory: ExtensionFactory = cls.from_config
    return factory


_BUILTIN_NAMES = tuple(entry.name for entry in catalog.EXTENSIONS)


def extension_names() -> list[str]:
    return sorted(set(_BUILTIN_NAMES) | set(_factories))


def _canonical(name: str) -> str:
    key = name.strip()
    key = EXTENSION_ALIASES.get(key, key)
    return EXTENSION_ALIASES.get(key.replace("-", "_"), key.replace("-", "_"))


def register_extension(
    name: str, factory: ExtensionFactory, *, replace: bool = False
) -> Callable[[], None]:
    """Make ``factory(config_dict)`` buildable as ``name``; returns an unregister callable."""
    if not replace and (name in _factories or name in _BUILTIN_NAMES):
        raise ExtensionConfigError(f"an extension named {name!r} is already registered")
    _factories[name] = factory

    def unregister() -> None:
        if _factories.get(name) is factory:
            del _factories[name]

    return unregister


def build_extension(name: str, config: Mapping[str, Any] | None = None) -> Extension:
    """Build the extension ``name`` from ``config`` (strict: unknown keys are errors)."""
    key = _canonical(name)
    factory = _factories.get(key) or _builtin(key)
    if factory is None:
        close = difflib.get_close_matches(key, extension_names(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ExtensionConfigError(
            f"unknown extension {name!r}{hint}; known: {', '.join(extension_names())}"
        )
    if config is not None and not isinstance(config, Mapping):
        raise ExtensionConfigError(
            f"the config must be a mapping, got {type(config).__name__}", extension=key
        )
    return factory(dict(config) if config is not None else None)


def check_commands(extensions: Iterable[Any]) -> None:
    """Raise ExtensionConfigError when two extensions contribute the same /command."""
    owners: dict[str, str] = {}
    for extension in extensions:
        owner = str(getattr(extension, "name", type(extension).__name__))
        for command in getattr(extension, "command_names", ()) or ():
            if command in owners:
                raise ExtensionConfigError(
                    f"command /{command} is contributed twice ({owners[command]} and {owner})"
                )
            owners[command] = owner


def build_extensions(configs: Mapping[str, Mapping[str, Any] | None]) -> list[Extension]:
    """Build every ``name: config`` of ``configs``; duplicate /commands are an error."""
    built = [build_extension(name, config) for name, config in configs.items()]
    check_commands(built)
    return built

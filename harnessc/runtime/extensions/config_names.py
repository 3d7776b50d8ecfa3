"""The names an extension config accepts: the camelCase ones (``limitMessage``),
their snake_case form (``limit_message``), and the names harnessc
used before, kept as documented aliases (turn_nudge ``notice`` = ``message``).

``canonical_config`` renames every accepted spelling to the config's field name; the
runtime decodes with it and the spec models call it before their own validation, so a
spec and an agent accept the same keys.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from harnessc.runtime.extensions.base import ExtensionConfigError

__all__ = ["CONFIG_ALIASES", "accepted_names", "canonical_config", "snake_name", "written_key"]

# extension -> {harnessc's former name: the field it stands for}
CONFIG_ALIASES: dict[str, dict[str, str]] = {
    "turn_nudge": {"notice": "message"},
}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_name(key: str) -> str:
    """``limitMessage`` -> ``limit_message``; ``contribute-commands`` -> ``contribute_commands``."""
    return _CAMEL.sub("_", key).lower().replace("-", "_")


def canonical_config(
    extension: str, fields: Collection[str], data: Mapping[Any, Any]
) -> dict[Any, Any]:
    """``data`` with every accepted spelling of a field renamed to the field's name.

    Keys that name no field stay as written (the decoder reports them, with a hint). Two
    spellings of one field are an error naming both.
    """
    aliases = CONFIG_ALIASES.get(extension, {})
    out: dict[Any, Any] = {}
    given: dict[str, str] = {}
    for key, value in data.items():
        if not isinstance(key, str):
            out[key] = value
            continue
        name = snake_name(key)
        name = aliases.get(name, name)
        if name not in fields:
            out[key] = value
            continue
        if name in given:
            raise ExtensionConfigError(
                f"given twice (as {given[name]!r} and {key!r})", extension=extension, field=key
            )
        given[name] = key
        out[name] = value
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def accepted_names(extension: str, field: str) -> list[str]:
    """Every key that names config ``field``: the field, its camelCase form, its aliases."""
    names = [field, _camel(field)]
    for alias, target in CONFIG_ALIASES.get(extension, {}).items():
        if target == field:
            names += [alias, _camel(alias)]
    return list(dict.fromkeys(names))


def written_key(extension: str, data: Any, field: str | None) -> str | None:
    """The key of ``data`` that sets config ``field`` (``field`` when none does)."""
    if field is None or not isinstance(data, Mapping):
        return field
    spellings = accepted_names(extension, field)
    return next((k for k in data if k in spellings), field)

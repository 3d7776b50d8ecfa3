"""The `/command` registry: one place that skills, templates and extensions plug into."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Command", "CommandOutcome", "CommandRegistry", "DuplicateCommandError", "split_command"]

CommandHandler = Callable[[str], "str | None | Awaitable[str | None]"]


class DuplicateCommandError(ValueError):
    pass


@dataclass(slots=True)
class Command:
    name: str
    description: str
    handler: Callable[[str], Any]
    source: str = ""


@dataclass(slots=True)
class CommandOutcome:
    """``prompt``: send ``text`` to the model; ``reply``: show ``text``, no model call."""

    kind: str
    text: str
    command: str = ""


def split_command(text: str) -> tuple[str, str] | None:
    """``"/name args"`` -> ("name", "args"); None when text is not a command."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//") or len(stripped) < 2:
        return None
    name, _, rest = stripped[1:].partition(" ")
    if not name or "/" in name:
        return None
    return name, rest.strip()


class CommandRegistry:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}

    def register(
        self, name: str, description: str, handler: Callable[[str], Any], source: str = ""
    ) -> Callable[[], None]:
        """Add ``/name``; duplicates are an error naming both sources."""
        existing = self._commands.get(name)
        if existing is not None:
            raise DuplicateCommandError(
                f"command /{name} is registered twice ({existing.source or 'unknown'} and {source or 'unknown'})"
            )
        self._commands[name] = Command(name, description, handler, source)

        def unregister() -> None:
            if self._commands.get(name) is not None and self._commands[name].handler is handler:
                del self._commands[name]

        return unregister

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def names(self) -> list[str]:
        return sorted(self._commands)

    def commands(self) -> list[Command]:
        return [self._commands[n] for n in self.names()]

    async def run(self, name: str, args: str) -> str:
        command = self._commands[name]
        result = command.handler(args)
        if inspect.isawaitable(result):
            result = await result
        return "" if result is None else str(result)

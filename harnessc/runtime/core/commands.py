"""The `/command` registry: one place that skills, templates and extensions plug into.

A prompt starting with ``/`` is a command. ``dispatch`` resolves it in this order:
``/skill:name`` (a skill), a registered command (``/compact``, ``/status``, ...), a
prompt template (``/name``); anything else gets a reply listing the known commands.
Registering a name twice is an error naming both sources.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from msgspec import Struct

__all__ = [
    "Command",
    "CommandNameError",
    "CommandOutcome",
    "CommandRegistry",
    "DuplicateCommandError",
    "did_you_mean",
    "split_command",
]

CommandHandler = Callable[[str], "str | None | Awaitable[str | None]"]

# A command name: letters, digits, ``_ . -``; ``skill:`` is reserved for skills.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
SKILL_PREFIX = "skill:"


class DuplicateCommandError(ValueError):
    pass


class CommandNameError(ValueError):
    pass


class Command(Struct):
    name: str
    description: str
    handler: Callable[[str], Any]
    source: str = ""


class CommandOutcome(Struct):
    """``prompt``: send ``text`` to the model; ``reply``: show ``text``, no model call;
    ``unknown``: no such command (``text`` lists the known ones)."""

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


# The command map of a registry without commands (never written: the first command
# replaces it), and its loaders: a harness that registers none holds no container.
_NO_COMMANDS: dict[str, Command] = {}


class CommandRegistry:
    __slots__ = ("_commands", "_loaders")

    def __init__(self) -> None:
        self._commands: dict[str, Command] = _NO_COMMANDS
        self._loaders: tuple[Callable[[str], Awaitable[None]], ...] = ()

    def add_loader(self, loader: Callable[[str], Awaitable[None]]) -> Callable[[], None]:
        """``await loader(name)`` runs when ``/name`` is not registered yet: a source
        that knows its commands only once started (an MCP server's prompts) may
        register it then. Returns a callable that removes the loader."""
        self._loaders = (*self._loaders, loader)

        def remove() -> None:
            if loader in self._loaders:
                kept = list(self._loaders)
                kept.remove(loader)
                self._loaders = tuple(kept)

        return remove

    async def load(self, name: str) -> bool:
        """Whether ``/name`` is registered, after asking the loaders when it is not."""
        for loader in self._loaders:
            if name in self._commands:
                break
            await loader(name)
        return name in self._commands

    def register(
        self, name: str, description: str, handler: Callable[[str], Any], source: str = ""
    ) -> Callable[[], None]:
        """Add ``/name``; duplicates are an error naming both sources.

        The handler takes the argument text and returns the reply (str or None; may be
        async), or a ``CommandOutcome("prompt", text)`` to send ``text`` to the model as
        a prompt template does. Returns a callable that removes the command again.
        """
        if name.startswith("/"):
            name = name[1:]
        if not _NAME.fullmatch(name):
            reserved = " (skill: is reserved for skills)" if name.startswith(SKILL_PREFIX) else ""
            raise CommandNameError(
                f"bad command name {name!r}{reserved}: use letters, digits, '_', '.' or '-'"
            )
        existing = self._commands.get(name)
        if existing is not None:
            raise DuplicateCommandError(
                f"command /{name} is registered twice ({existing.source or 'unknown'} and {source or 'unknown'})"
            )
        if self._commands is _NO_COMMANDS:
            self._commands = {}
        self._commands[name] = Command(name, description, handler, source)

        def unregister() -> None:
            if self._commands.get(name) is not None and self._commands[name].handler is handler:
                del self._commands[name]

        return unregister

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def __len__(self) -> int:
        return len(self._commands)

    def names(self) -> list[str]:
        return sorted(self._commands)

    def commands(self) -> list[Command]:
        return [self._commands[n] for n in self.names()]

    async def run(self, name: str, args: str) -> str:
        """The command's reply as text (a prompt it asks for: that prompt's text)."""
        result = await self._invoke(name, args)
        if isinstance(result, CommandOutcome):
            return result.text
        return "" if result is None else str(result)

    async def _invoke(self, name: str, args: str) -> Any:
        result = self._commands[name].handler(args)
        if inspect.isawaitable(result):
            result = await result
        return result

    def known(self, resources: Any = None) -> list[str]:
        """Every invocable ``/name``: registered commands, templates and skills, sorted."""
        names = [f"/{n}" for n in self._commands]
        if resources is not None:
            names += [f"/{t.name}" for t in getattr(resources, "prompt_templates", ()) or ()]
            names += [f"/{SKILL_PREFIX}{s.name}" for s in getattr(resources, "skills", ()) or ()]
        return sorted(set(names))

    def unknown_message(self, name: str, resources: Any = None) -> str:
        known = self.known(resources)
        close = did_you_mean(name, known)
        guess = f" (did you mean {' or '.join(close)}?)" if close else ""
        return f"unknown command /{name}{guess}; known commands: {', '.join(known) or 'none'}"

    def help_text(self, resources: Any = None) -> str:
        """One line per command: ``/name  description``."""
        lines = [f"/{c.name}  {c.description}".rstrip() for c in self.commands()]
        if resources is not None:
            lines += [
                f"/{t.name}  {getattr(t, 'description', '')}".rstrip()
                for t in getattr(resources, "prompt_templates", ()) or ()
            ]
            lines += [
                f"/{SKILL_PREFIX}{s.name}  {getattr(s, 'description', '')}".rstrip()
                for s in getattr(resources, "skills", ()) or ()
            ]
        return "\n".join(lines)

    async def dispatch(self, name: str, args: str, resources: Any = None) -> CommandOutcome:
        """Resolve ``/name args``: a skill, a registered command, a template, or unknown."""
        text = f"/{name} {args}".strip()
        if name.startswith(SKILL_PREFIX):
            expanded = _expand(resources, "expand_skill_command", text)
            if expanded is not None:
                return CommandOutcome("prompt", expanded, name)
            skills = getattr(resources, "skills", ()) or ()
            available = ", ".join(f"/{SKILL_PREFIX}{s.name}" for s in skills) or "none"
            return CommandOutcome(
                "reply",
                f"unknown skill {name[len(SKILL_PREFIX) :]!r}; available skills: {available}",
                name,
            )
        if name in self._commands:
            result = await self._invoke(name, args)
            if isinstance(result, CommandOutcome) and result.kind in ("prompt", "reply"):
                return CommandOutcome(result.kind, result.text, name)
            return CommandOutcome("reply", "" if result is None else str(result), name)
        expanded = _expand(resources, "expand_prompt_template", text)
        if expanded is not None:
            return CommandOutcome("prompt", expanded, name)
        if await self.load(name):
            return await self.dispatch(name, args, resources)
        return CommandOutcome("unknown", self.unknown_message(name, resources), name)


def _expand(resources: Any, method: str, text: str) -> str | None:
    """The resources' own expansion of ``text`` (``AgentHarnessResources`` has both
    methods); None when there are no resources or nothing of theirs matches."""
    expander = getattr(resources, method, None)
    if expander is None:
        return None
    result = expander(text)
    return None if result is None else str(result)


def did_you_mean(name: str, known: Iterable[str]) -> list[str]:
    """The ``/commands`` of ``known`` close to a mistyped ``/name`` (``/reviw``: ``/review``)."""
    import difflib

    return difflib.get_close_matches(f"/{name}", sorted(set(known)), n=3, cutoff=0.7)

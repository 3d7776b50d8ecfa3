"""``CLAUDE_ENV_FILE``: the environment a SessionStart hook sets for the session's bash.

Claude Code gives its SessionStart command hooks a file to append ``export NAME=value``
lines to, and the bash tool sees those variables for the rest of the session. harnessc
does the same without running the file: each SessionStart hook gets an empty file of its
own in a private temporary folder (mode 0700, removed as soon as the hook exits); its
``export`` lines are read here and their variables added to the environment the bash
tool gets in that harness (through the tool context's ``env``).

What is read: ``export NAME=value`` lines (several assignments on one line too), with
single quotes, double quotes and backslashes as the shell reads them, and ``$NAME`` /
``${NAME}`` replaced by the value bash would see (the scrubbed environment plus the
exports before it; a credential expands to nothing). A line that needs more of the
shell (``$(...)``, backticks, ``;``, redirections, other commands) is ignored with a
warning; blank lines and comments are skipped. Credentials stay out: an exported name
that looks like a credential, or a value equal to a scrubbed secret, is not applied
(``harnessc.runtime.support.secrets``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.options import ToolContextSource
from harnessc.runtime.support.secrets import scrubbed_environ

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext

__all__ = [
    "ENV_FILE_VARIABLE",
    "EnvFile",
    "EnvFileExports",
    "apply_session_env",
    "parse_env_file",
    "session_env",
]

ENV_FILE_VARIABLE = "CLAUDE_ENV_FILE"
MAX_ENV_FILE_BYTES = 1024 * 1024

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPORT = re.compile(r"export(?=\s|$)")
_SHELL_ONLY = set(";&|<>()`")


class _Unsupported(ValueError):
    """A line the reader will not take: it needs the shell itself."""


@dataclass(slots=True)
class EnvFileExports:
    """What one env file sets, and the lines that were not applied (one warning each)."""

    values: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _expand(text: str, at: int, env: Mapping[str, str]) -> tuple[str, int]:
    """``$NAME`` or ``${NAME}`` at ``text[at]`` (the ``$``): its value and the index after."""
    rest = text[at + 1 :]
    if rest.startswith("{"):
        end = rest.find("}")
        name = rest[1:end] if end > 0 else ""
        if not _NAME.fullmatch(name):
            raise _Unsupported("only ${NAME} is read inside braces")
        return env.get(name, ""), at + 1 + end + 1
    match = _NAME.match(rest)
    if match is None:
        raise _Unsupported("a '$' that is not $NAME or ${NAME}")
    return env.get(match.group(0), ""), at + 1 + match.end()


def _word(text: str, at: int, env: Mapping[str, str]) -> tuple[str, int]:
    """One shell word from ``text[at]``: quotes, backslashes and ``$NAME`` as bash reads them."""
    out: list[str] = []
    i = at
    while i < len(text):
        char = text[i]
        if char in " \t":
            break
        if char == "#" and i == at:
            break
        if char in _SHELL_ONLY:
            raise _Unsupported(f"{char!r} needs the shell")
        if char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise _Unsupported("an unclosed single quote")
            out.append(text[i + 1 : end])
            i = end + 1
        elif char == '"':
            i += 1
            while True:
                if i >= len(text):
                    raise _Unsupported("an unclosed double quote")
                char = text[i]
                if char == '"':
                    i += 1
                    break
                if char == "`":
                    raise _Unsupported("'`' needs the shell")
                if char == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\':
                    out.append(text[i + 1])
                    i += 2
                elif char == "$":
                    value, i = _expand(text, i, env)
                    out.append(value)
                else:
                    out.append(char)
                    i += 1
        elif char == "\\":
            if i + 1 >= len(text):
                raise _Unsupported("a line continuation")
            out.append(text[i + 1])
            i += 2
        elif char == "$":
            value, i = _expand(text, i, env)
            out.append(value)
        elif char == "~" and i == at and (i + 1 == len(text) or text[i + 1] in "/ \t"):
            out.append(env.get("HOME", "~"))
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out), i


def _assignments(line: str, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The ``NAME=value`` pairs of one ``export`` line (after the word ``export``)."""
    pairs: list[tuple[str, str]] = []
    scope = dict(env)
    i = 0
    while True:
        while i < len(line) and line[i] in " \t":
            i += 1
        if i >= len(line) or line[i] == "#":
            return pairs
        match = _NAME.match(line, i)
        if match is None:
            raise _Unsupported("expected NAME=value")
        name, i = match.group(0), match.end()
        if i >= len(line) or line[i] in " \t":
            continue  # ``export NAME``: marks a variable, sets nothing
        if line[i] != "=":
            raise _Unsupported("expected NAME=value")
        value, i = _word(line, i + 1, scope)
        scope[name] = value
        pairs.append((name, value))


def parse_env_file(text: str, env: Mapping[str, str]) -> EnvFileExports:
    """The ``export`` lines of ``text``; ``env`` is what ``$NAME`` expands from."""
    result = EnvFileExports()
    scope = dict(env)
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _EXPORT.match(line)
        if match is None:
            result.warnings.append(f"line {number} ignored (not an export line): {line[:120]!r}")
            continue
        try:
            pairs = _assignments(line[match.end() :], scope)
        except _Unsupported as exc:
            result.warnings.append(f"line {number} ignored ({exc}): {line[:120]!r}")
            continue
        for name, value in pairs:
            scope[name] = value
            result.values[name] = value
    return result


def _without_secrets(exports: EnvFileExports) -> EnvFileExports:
    """Drop credential names and copies of a secret's value (the bash tool's own rules)."""
    merged = {**os.environ, **exports.values}
    kept = scrubbed_environ(merged)
    out = EnvFileExports(warnings=list(exports.warnings))
    for name, value in exports.values.items():
        if kept.get(name) == value:
            out.values[name] = value
        else:
            out.warnings.append(f"{name} not applied: credentials stay out of the bash tool")
    return out


class EnvFile:
    """A private, empty ``CLAUDE_ENV_FILE`` for one hook run: ``path`` while open, then
    ``read()`` returns its exports and removes the folder."""

    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="harnessc-env-")  # mode 0700
        self.path = os.path.join(self._folder, "env")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)

    def read(self, env: Mapping[str, str]) -> EnvFileExports:
        try:
            text = self._text()
        finally:
            self.remove()
        if text is None:
            return EnvFileExports(warnings=[f"{ENV_FILE_VARIABLE} could not be read"])
        return _without_secrets(parse_env_file(text, env))

    def _text(self) -> str | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return ""  # the hook removed it: nothing set
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_ENV_FILE_BYTES + 1)
        return data[:MAX_ENV_FILE_BYTES].decode("utf-8", errors="replace")

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            shutil.rmtree(self._folder)


_SESSION_ENV: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


def session_env(harness: HarnessContext) -> dict[str, str]:
    """The variables SessionStart hooks exported in ``harness`` (a copy)."""
    try:
        return dict(_SESSION_ENV.get(harness, {}))
    except TypeError:
        return {}


def _with_env(context: Any, values: Mapping[str, str]) -> Any:
    if context is None:
        return {"env": dict(values)}
    if isinstance(context, Mapping):
        spec_env = context.get("env")
        base = dict(spec_env) if isinstance(spec_env, Mapping) else {}
        return {**context, "env": {**base, **values}}
    return context


def apply_session_env(harness: HarnessContext, values: Mapping[str, str]) -> bool:
    """Add ``values`` to the bash tool's environment in ``harness``; False when its tool
    context is neither a mapping nor unset (then nothing is applied)."""
    if not values:
        return True
    try:
        current = _SESSION_ENV.get(harness)
    except TypeError:
        return False
    if current is not None:
        current.update(values)
        return True
    source = getattr(harness, "tool_context", None)  # the current source, where known
    if not isinstance(source, ToolContextSource):
        source = getattr(getattr(harness, "options", None), "tool_context", None)
    set_tool_context = getattr(harness, "set_tool_context", None)
    if set_tool_context is None:
        return False
    static = source.context if isinstance(source, ToolContextSource) else None
    if static is not None and not callable(static) and not isinstance(static, Mapping):
        return False
    stored = dict(values)
    _SESSION_ENV[harness] = stored

    async def context() -> Any:
        value = await source.resolve() if isinstance(source, ToolContextSource) else None
        return _with_env(value, stored)

    set_tool_context(ToolContextSource(context))
    return True

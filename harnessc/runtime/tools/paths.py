"""Where file tools may look: every path is confined to the workspace.

The workspace is the tool context's ``workspace`` (relative to its ``cwd``), else the
agent's working directory; ``allow_outside_workspace: true`` lifts the confinement.
Read-only tools may also open what ``support/readable.py`` registers (bash's
full-output logs, the folders of skills).
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote

from msgspec import Struct

from harnessc.runtime.support.readable import readable
from harnessc.runtime.tools.clean import unescape_bytes

__all__ = [
    "PATH_FILTER",
    "PathError",
    "PathFilter",
    "ToolEnv",
    "call_targets",
    "context_value",
    "display_path",
    "is_inside",
    "path_filter",
    "resolve_path",
    "tool_env",
]


class PathError(ValueError):
    """A path the tool refuses (outside the workspace, unreadable encoding, ...)."""


def context_value(context: Any, key: str, default: Any = None) -> Any:
    """``context[key]`` for mappings, ``context.key`` for objects, else ``default``."""
    if context is None:
        return default
    if isinstance(context, Mapping):
        return context.get(key, default)
    return getattr(context, key, default)


class ToolEnv(Struct):
    """The folders a tool call works in, read from its context."""

    base: Path  # where relative paths start (workspace, else cwd)
    workspace: Path | None  # real path of the confining folder, None when unconfined
    allow_outside: bool

    @property
    def confined(self) -> bool:
        return self.workspace is not None and not self.allow_outside


PATH_FILTER = "path_filter"  # the tool-context key of the permission rules' PathFilter


class PathFilter(Protocol):
    """The permission rules as the folder-walking tools (``grep``, ``find``, ``ls``) see
    them: the gate puts one in the tool context under ``path_filter``."""

    def for_walk(self, tool: str, root: Path) -> Callable[[str, str], bool]:
        """For a walk of ``root`` by ``tool``: a test of one file (its path as found
        and its real path) that is False when a rule keeps the file from the tool."""
        ...


def path_filter(context: Any) -> PathFilter | None:
    """The context's PathFilter, if the agent has permission rules."""
    found = context_value(context, PATH_FILTER)
    return found if callable(getattr(found, "for_walk", None)) else None


def _flag(value: Any) -> bool:
    """A boolean setting; strings (from ``${VAR}`` references) read as true/false."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return value is True or (isinstance(value, int) and value == 1)


def tool_env(context: Any) -> ToolEnv:
    """Resolve ``workspace`` / ``cwd`` / ``allow_outside_workspace`` from the context."""
    cwd_value = context_value(context, "cwd")
    cwd = Path(os.path.expanduser(str(cwd_value))) if cwd_value else Path.cwd()
    if not cwd.is_absolute():
        cwd = Path.cwd() / cwd
    workspace_value = context_value(context, "workspace")
    allow = _flag(context_value(context, "allow_outside_workspace", False))
    if workspace_value is None or workspace_value == "":
        # the default workspace is the agent's working directory
        real_cwd = Path(os.path.realpath(cwd))
        return ToolEnv(real_cwd, real_cwd, allow)
    workspace = Path(os.path.expanduser(str(workspace_value)))
    if not workspace.is_absolute():
        workspace = cwd / workspace
    real = Path(os.path.realpath(workspace))
    return ToolEnv(real, real, allow)


def is_inside(path: str | Path, root: str | Path) -> bool:
    """True when ``path`` (already resolved) is ``root`` or below it."""
    try:
        return os.path.commonpath([str(path), str(root)]) == str(root)
    except ValueError:
        return False


_INVISIBLE = {"Cc", "Cf", "Co", "Cs", "Zl", "Zp"}


def _variants(raw: str) -> list[str]:
    """Other readings of ``raw`` that a shell, URL parser or normaliser might produce."""
    seen = [raw]
    decoded = raw
    for _ in range(4):  # percent-encoding, possibly applied twice or more
        nxt = unquote(decoded)
        if nxt == decoded:
            break
        decoded = nxt
        seen.append(decoded)
    for text in list(seen):
        seen.append(unicodedata.normalize("NFKC", text))
        seen.append(text.replace("\\", "/"))
    return seen


def _realpath(path: str | Path) -> Path:
    """``os.path.realpath``, retried when a symlink vanishes while it is being read
    (realpath then raises FileNotFoundError); PathError when it keeps failing."""
    for _ in range(5):
        try:
            return Path(os.path.realpath(path))
        except OSError as exc:  # the path changes under our feet
            problem = exc
    raise PathError(f"path {str(path)!r} keeps changing while it is resolved ({problem.strerror})")


def _resolve_one(text: str, base: Path) -> Path:
    expanded = os.path.expanduser(text)
    candidate = Path(expanded)
    if not candidate.is_absolute():
        candidate = base / candidate
    return _realpath(candidate)


def _unescaped_if_exists(raw: str, base: Path) -> str:
    """``raw`` with ``\\xNN`` read as raw bytes, when only that spelling names a file."""
    unescaped = unescape_bytes(raw)
    if unescaped == raw:
        return raw
    try:
        plain = os.path.lexists(base / os.path.expanduser(raw))
        escaped = os.path.lexists(base / os.path.expanduser(unescaped))
    except (OSError, ValueError):
        return raw
    return unescaped if escaped and not plain else raw


def _spelling(path: str | None, env: ToolEnv, default: str) -> str:
    """The path a tool argument names, before resolving: ``file://`` dropped, a ``\\xNN``
    spelling read as raw bytes when only that spelling names a file."""
    raw = default if path is None or path == "" else str(path)
    if raw.startswith("file://"):
        raw = unquote(raw[len("file://") :])
    if "\x00" in raw:
        raise PathError(f"path {raw!r} contains a NUL byte")
    if "\\x" in raw:  # a name that is not UTF-8, as the tools show it (caf\xe9.txt)
        raw = _unescaped_if_exists(raw, env.base)
    return raw


def call_targets(path: str | None, context: Any, *, default: str = ".") -> tuple[Path, Path]:
    """What a tool call's ``path`` names, resolved exactly as :func:`resolve_path` does
    (workspace or cwd, ``~``, ``file://``): the path as written with ``..`` folded and no
    symlink followed, and its real path. No confinement check (the tool makes it);
    PathError for a path no tool would open (a NUL byte)."""
    env = tool_env(context)
    raw = _spelling(path, env, default)
    literal = Path(os.path.normpath(env.base / os.path.expanduser(raw)))
    return literal, _resolve_one(raw, env.base)


def resolve_path(
    path: str | None, context: Any, *, default: str = ".", read_only: bool = False
) -> Path:
    """The real absolute path a tool should use, or PathError with a clear reason.

    Relative paths start at the workspace (else ``context["cwd"]``, else the process
    cwd). With a workspace and no ``allow_outside_workspace``, anything that lands
    outside it is refused: ``..``, absolute paths, symlinks pointing out, and
    spellings that decode to an escape (percent-encoding, full-width dots, ...).
    """
    env = tool_env(context)
    raw = _spelling(path, env, default)
    target = _resolve_one(raw, env.base)
    if not env.confined or (read_only and readable(target)):
        return target
    assert env.workspace is not None
    # (a byte that is not UTF-8, U+DC80..U+DCFF, is a name's raw byte, never a separator)
    if any(unicodedata.category(ch) in _INVISIBLE and not "\udc80" <= ch <= "\udcff" for ch in raw):
        raise PathError(
            f"path {raw!r} contains invisible or control characters; "
            "refusing it inside the workspace"
        )
    for variant in _variants(raw):
        if "\x00" in variant:  # percent-encoded NUL
            raise PathError(f"path {raw!r} (read as {variant!r}) contains a NUL byte")
        # the raw spelling is checked as resolved above, never resolved a second time
        # (a symlink swapped in between would make the two answers differ)
        resolved = target if variant == raw else _resolve_one(variant, env.base)
        if not is_inside(resolved, env.workspace):
            shown = "" if variant == raw else f" (read as {variant!r})"
            raise PathError(
                f"path {raw!r}{shown} is outside the workspace {env.workspace}; "
                "only files inside the workspace are allowed"
            )
    return target


def display_path(path: Path, context: Any) -> str:
    """``path`` relative to the workspace/cwd when below it, else absolute."""
    base = tool_env(context).base
    if is_inside(path, base):
        rel = os.path.relpath(path, base)
        return rel
    return str(path)

"""Which paths a path pattern names: the specifier of a path rule (``Read(PATH)``,
``Edit(PATH)``, ...) and an unreadable path of the sandbox.

A specifier is a gitignore pattern (pathspec's gitignore semantics, as Claude Code
documents for its path rules) rooted at a folder chosen by its first characters:

- ``//x`` and ``/x``: from the filesystem root (``/etc/passwd``);
- ``~/x``: from the home folder;
- ``./x`` and ``x/y``: from the working folder, anchored there;
- a pattern without ``/`` (``.env``, ``*.key``): at any depth below the working folder.

``**`` is any folders, ``*`` and ``?`` stay within a name, ``[...]`` is a character
class, and a pattern that names a folder also names everything inside it. A path
outside the pattern's root folder never matches (except for ``/`` roots).

pathspec is imported on the first match, so an agent without path rules never loads it.
"""

from __future__ import annotations

import os
import posixpath
from functools import lru_cache
from typing import Any

__all__ = ["path_matches"]


def path_matches(spec: str, path: str, cwd: str) -> bool:
    """Whether the rule specifier ``spec`` names ``path`` (relative paths start at ``cwd``).

    ``path`` is taken as written (``..`` folded, symlinks not followed); callers that
    need the real target pass it as a second path.
    """
    if path.startswith("~"):
        path = os.path.expanduser(path)
    target = os.path.normpath(os.path.join(cwd, path))
    home = os.path.expanduser("~") if spec.startswith("~") else ""
    root, pattern = _rooted(spec, cwd, home)
    rel = _below(target, root)
    if rel is None:  # the root as written may be a symlink: its real path counts too
        rel = _below(target, os.path.realpath(root))
    if rel is None:
        return False
    if rel == ".":
        # the root folder itself: only a pattern naming everything names it
        return pattern == "**"
    regex = _compiled(pattern)
    if regex is None:
        return False
    if regex.match(rel) is not None:
        return True
    # a folder-only pattern (``build/``) names a folder given without its final slash
    return pattern.endswith("/") and os.path.isdir(target) and regex.match(rel + "/") is not None


def _below(target: str, root: str) -> str | None:
    """``target`` relative to ``root`` (``.`` for the root itself), None when outside."""
    if root == "/":
        return target.lstrip("/") or "."
    if target == root:
        return "."
    if not target.startswith(root + "/"):
        return None
    return target[len(root) + 1 :]


@lru_cache(maxsize=512)
def _rooted(spec: str, cwd: str, home: str) -> tuple[str, str]:
    """The folder ``spec`` is rooted at and its gitignore pattern below that folder."""
    if spec.startswith("//"):
        root, rest = "/", spec[2:]
    elif spec == "~" or spec.startswith("~/"):
        root, rest = home, spec[2:]
    elif spec.startswith("/"):
        root, rest = "/", spec[1:]
    elif spec.startswith("./") or spec in (".", ".."):
        root, rest = cwd, spec[2:] if spec.startswith("./") else spec
    elif "/" not in spec.rstrip("/"):
        return os.path.normpath(cwd), spec  # a bare name: at any depth
    else:
        root, rest = cwd, spec
    # ``..`` and ``.`` are folded into the root, which gitignore patterns cannot express
    trailing = rest.endswith("/")
    rest = posixpath.normpath(rest) if rest else "."
    root = os.path.normpath(root)
    while rest == ".." or rest.startswith("../"):
        root = os.path.dirname(root)
        rest = rest[3:] if rest.startswith("../") else "."
    if rest in ("", "."):
        return root, "**"
    return root, "/" + rest + ("/" if trailing else "")


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    """pathspec's regex for one gitignore pattern (None for one that names nothing);
    ValueError for a pattern pathspec cannot read."""
    import pathspec

    try:
        patterns = pathspec.GitIgnoreSpec.from_lines([pattern]).patterns
    except Exception as exc:  # fail closed: the call that needed the rule is blocked
        raise ValueError(f"the path rule pattern {pattern!r} cannot be read: {exc}") from None
    if not patterns or patterns[0].regex is None or not patterns[0].include:
        return None
    return patterns[0].regex

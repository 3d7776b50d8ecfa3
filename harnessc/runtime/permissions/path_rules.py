"""Path rules (``Read(PATH)``, ``Edit(PATH)``, ...): the path a file tool's call names,
and the other names of a file (its hard links). Which paths a specifier names is
``support.path_patterns`` (the sandbox resolves the same patterns).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from harnessc.runtime.support.path_patterns import path_matches

__all__ = ["call_path", "other_names", "path_matches"]

# Entries a search for a file's other names (hard links) looks at, at most.
_LINK_SEARCH_MAX = 100_000


def call_path(args: Mapping[str, Any]) -> str:
    """The path a file tool's call names (``path``, or Claude Code's ``file_path``);
    ``.`` (the workspace) when it names none, as ``ls``, ``grep`` and ``find`` read it."""
    value = args.get("path") or args.get("file_path")
    return str(value) if isinstance(value, str) and value else "."


def other_names(path: str, root: str) -> list[str]:
    """The other names of the file at ``path`` below ``root`` (its hard links): a rule
    naming one of its names names the file, however it is opened. Empty for a file with
    one name (the usual case: nothing is searched)."""
    import stat

    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return []
    if not stat.S_ISREG(info.st_mode) or info.st_nlink < 2:
        return []
    identity = (info.st_dev, info.st_ino)
    real = os.path.realpath(path)
    found: list[str] = []
    seen = 0
    stack = [root]
    while stack and len(found) < info.st_nlink:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > _LINK_SEARCH_MAX:
                return found
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    mine = entry.stat(follow_symlinks=False)
                    if (mine.st_dev, mine.st_ino) == identity and entry.path != real:
                        found.append(entry.path)
            except OSError:
                continue
    return found

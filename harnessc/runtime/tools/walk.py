"""Walking a folder for the search tools: sorted, skipping .git/node_modules, glob filters."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harnessc.runtime.tools.paths import is_inside

__all__ = ["SKIP_DIRS", "Entry", "compile_glob", "glob_matches", "walk"]

SKIP_DIRS = frozenset({".git", "node_modules", ".hg", ".svn"})


@dataclass(slots=True)
class Entry:
    rel: str  # posix path relative to the walk root
    path: str  # absolute path
    is_dir: bool


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            if pattern.startswith("**", i):
                if pattern.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
                continue
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape(ch))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "{":
            end = pattern.find("}", i)
            if end < 0:
                out.append(re.escape(ch))
            else:
                options = pattern[i + 1 : end].split(",")
                out.append("(?:" + "|".join(_translate(o) for o in options) + ")")
                i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> tuple[re.Pattern[str], bool]:
    """A regex for ``pattern`` and whether it matches the whole relative path.

    Patterns without ``/`` match the file name (``*.py`` finds files at any depth);
    patterns with ``/`` match the path from the search root (``src/**/*.py``).
    """
    cleaned = pattern.strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    cleaned = cleaned.lstrip("/")
    whole = "/" in cleaned
    return re.compile(_translate(cleaned) + r"\Z", re.DOTALL), whole


def glob_matches(pattern: str, rel: str) -> bool:
    regex, whole = compile_glob(pattern)
    subject = rel if whole else rel.rsplit("/", 1)[-1]
    return regex.match(subject) is not None


def walk(
    root: Path,
    *,
    confine: Path | None = None,
    dirs: bool = False,
    stop: Callable[[], bool] | None = None,
) -> Iterator[Entry]:
    """Regular files (and folders when ``dirs``) under ``root``, depth first, sorted.

    Directory symlinks are not followed; FIFOs, sockets and devices are skipped (opening
    one could block). With ``confine``, file symlinks whose target lies outside it are
    skipped. Ends early once ``stop()`` is true.
    """
    stack: list[tuple[str, str]] = [(str(root), "")]
    while stack:
        if stop is not None and stop():
            return
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[tuple[str, str]] = []
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_link = entry.is_symlink()
            except OSError:
                continue
            if is_dir:
                if entry.name in SKIP_DIRS:
                    continue
                if dirs:
                    yield Entry(rel, entry.path, True)
                subdirs.append((entry.path, rel + "/"))
                continue
            if is_link:
                try:
                    target = os.path.realpath(entry.path)
                except OSError:  # the link changed while it was read
                    continue
                if confine is not None and not is_inside(target, confine):
                    continue
                if os.path.isdir(target):
                    if dirs:
                        yield Entry(rel, entry.path, True)
                    continue
                if not os.path.isfile(target):
                    continue
            else:
                try:
                    regular = entry.is_file(follow_symlinks=False)
                except OSError:
                    continue
                if not regular:  # FIFO, socket, device
                    continue
            yield Entry(rel, entry.path, False)
        stack.extend(reversed(subdirs))

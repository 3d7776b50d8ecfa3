"""Names that cannot work on disk or at import time, found before a build trips on them.

- :func:`path_problem`: a path with a component over 255 bytes (or over 4096 in all)
  can never name a file; the OS would answer ENAMETOOLONG.
- :func:`runtime_modules`: the top-level modules of the installed harnessc runtime's
  dependency closure (httpx, pydantic, yaml, click, anyio, h11, idna, certifi, jinja2,
  ...), read from importlib.metadata. An agent compiled to ``httpx.py`` would shadow
  httpx for every agent in its output folder.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path as FsPath
from typing import Any

__all__ = [
    "NAME_MAX_BYTES",
    "PATH_MAX_BYTES",
    "exists_quietly",
    "path_problem",
    "runtime_modules",
]

# The limits of Linux and macOS file systems: one path component, and a whole path.
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4096
_REQUIREMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def path_problem(path: str) -> str | None:
    """Why ``path`` can never name a file (a component over NAME_MAX_BYTES bytes, or
    the whole over PATH_MAX_BYTES), as the rest of a message; None when it could."""
    size = len(path.encode("utf-8", "surrogateescape"))
    if size > PATH_MAX_BYTES:
        return f"{_shorten(path)!r} is {size} bytes long; paths may be at most {PATH_MAX_BYTES}"
    for part in path.replace("\\", "/").split("/"):
        length = len(part.encode("utf-8", "surrogateescape"))
        if length > NAME_MAX_BYTES:
            return (
                f"{_shorten(path)!r} has a component of {length} bytes ({_shorten(part)!r}); "
                f"file systems allow at most {NAME_MAX_BYTES} bytes per file or folder name"
            )
    if "\x00" in path:
        return f"{_shorten(path)!r} contains a NUL character"
    return None


def _shorten(text: str, most: int = 60) -> str:
    return text if len(text) <= most else f"{text[: most - 20]}...{text[-17:]}"


def exists_quietly(path: FsPath, *, file: bool = False) -> bool:
    """``path.exists()`` (or ``is_file()``) that answers False instead of raising."""
    try:
        return path.is_file() if file else path.exists()
    except (OSError, ValueError):
        return False


@functools.lru_cache(maxsize=1)
def runtime_modules() -> dict[str, str]:
    """Top-level modules of the installed harnessc's dependency closure -> distribution.

    Read from importlib.metadata: harnessc's requirements (extras left out), theirs,
    and so on; each distribution's modules from ``top_level.txt`` or its file list.
    """
    from importlib import metadata

    modules: dict[str, str] = {}
    seen: set[str] = set()
    todo = ["harnessc"]
    while todo:
        name = todo.pop()
        key = _normalise(name)
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        label = dist.metadata["Name"] or name
        if key != "harnessc":
            for module in _dist_modules(dist):
                modules.setdefault(module, label)
        for requirement in dist.requires or []:
            requirement_name, _, marker = requirement.partition(";")
            if "extra" in marker:
                continue
            match = _REQUIREMENT.match(requirement_name.strip())
            if match:
                todo.append(match.group(0))
    return modules


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _dist_modules(dist: Any) -> set[str]:
    text = dist.read_text("top_level.txt")
    if text:
        return {line.strip() for line in text.splitlines() if line.strip().isidentifier()}
    found: set[str] = set()
    for file in dist.files or []:
        parts = FsPath(str(file)).parts
        if (
            not parts
            or parts[0] in ("..", "__pycache__")
            or parts[0].endswith((".dist-info", ".egg-info", ".data"))
        ):
            continue
        head = parts[0]
        if len(parts) == 1:
            head = head.split(".")[0] if head.endswith((".py", ".so", ".pyd")) else ""
        if head.isidentifier():
            found.add(head)
    return found

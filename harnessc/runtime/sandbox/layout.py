"""A policy made concrete for one process: the real paths to mount, mask and bind.

Resolved at every spawn (the files change between two calls): the workspace and the
writable paths that exist, every file and folder an unreadable pattern names now
(``./.env``, ``~/.ssh``; a pattern with a wildcard or a bare name is looked for in the
workspace, or below its literal folder), the other names of an unreadable file that has
hard links in the workspace, and harnessc's data folder. A path is masked at its real
path (a symlink's target), so the name a program opens it by does not matter.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator

from msgspec import Struct

from harnessc.runtime.sandbox.policy import DEFAULT_UNREADABLE, SandboxPolicy
from harnessc.runtime.support.data_folder import data_home

__all__ = ["MAX_WALK_ENTRIES", "Layout", "SandboxLayoutError", "resolve_layout"]

# Entries one search for an unreadable pattern may look at; past that the spawn fails
# (fail closed) and says to anchor the pattern.
MAX_WALK_ENTRIES = 200_000
_GLOB = frozenset("*?[")


class SandboxLayoutError(RuntimeError):
    """The policy cannot be made concrete (a search too large to finish)."""


class Layout(Struct, frozen=True):
    """What the sandbox of one process mounts."""

    workspace: str
    cwd: str
    writable: tuple[str, ...]  # real paths, the workspace first
    masked_files: tuple[str, ...]
    masked_dirs: tuple[str, ...]
    hosts: tuple[str, ...]
    # real paths under a folder the sandbox empties (/tmp, /run) that it shows read-only
    readable: tuple[str, ...] = ()


# Folders the sandbox replaces with empty private ones: what a process needs from them
# (its program, its working directory) is shown read-only, and only that.
HIDDEN = ("/tmp", "/run", "/var/run")


def resolve_layout(
    policy: SandboxPolicy,
    workspace: str,
    cwd: str | None = None,
    readable: tuple[str, ...] = (),
) -> Layout:
    """The mounts for a process started in ``cwd`` (default: the workspace) of
    ``workspace`` under ``policy``; ``readable``: paths the process needs that may lie in
    a folder the sandbox empties (its program, its working directory). SandboxLayoutError
    when a search is too large."""
    ws = os.path.realpath(workspace)
    home = os.path.expanduser("~")
    writable = [ws]
    for raw in policy.writable:
        path = os.path.realpath(_rooted(raw, ws, home))
        if os.path.exists(path) and path not in writable:
            writable.append(path)
    found: dict[str, bool] = {}  # real path -> is a folder
    for raw in (*DEFAULT_UNREADABLE, *policy.unreadable):
        for path in _matches(raw, ws, home):
            _add(found, path)
    _add(found, str(data_home()))
    _add_hard_links(found, ws)
    _add_moved(found, writable)
    # a mask inside a masked folder is hidden already (and could not be mounted there)
    dirs = sorted(p for p, is_dir in found.items() if is_dir)
    kept_dirs: list[str] = []
    for path in dirs:
        if not any(_inside(path, d) for d in kept_dirs):
            kept_dirs.append(path)
    files = sorted(
        p for p, is_dir in found.items() if not is_dir and not any(_inside(p, d) for d in kept_dirs)
    )
    real_cwd = os.path.realpath(cwd) if cwd else ws
    shown: list[str] = []
    for raw in (*readable, real_cwd):
        path = os.path.realpath(raw)
        if (
            any(_inside(path, hidden) for hidden in HIDDEN)
            and not any(_inside(path, w) for w in writable)
            and os.path.exists(path)
            and path not in shown
        ):
            shown.append(path)
    return Layout(
        ws,
        real_cwd,
        tuple(writable),
        tuple(files),
        tuple(kept_dirs),
        tuple(policy.network),
        tuple(shown),
    )


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _rooted(raw: str, workspace: str, home: str) -> str:
    """A policy path as an absolute one: ``~/x`` in the home folder, ``/x`` and ``//x``
    from the root, anything else in the workspace."""
    if raw == "~" or raw.startswith("~/"):
        return os.path.join(home, raw[2:])
    if raw.startswith("//"):
        return raw[1:]
    if raw.startswith("/"):
        return raw
    return os.path.normpath(os.path.join(workspace, raw[2:] if raw.startswith("./") else raw))


def _add(found: dict[str, bool], path: str) -> None:
    try:
        real = os.path.realpath(path)
        info = os.stat(real)
    except (OSError, ValueError):
        return
    if real == "/":
        return  # the whole machine unreadable is no sandbox anyone can run in
    found[real] = stat.S_ISDIR(info.st_mode)


def _matches(raw: str, workspace: str, home: str) -> Iterator[str]:
    """The paths an unreadable pattern names now."""
    bare = "/" not in raw.rstrip("/") and not raw.startswith("~") and raw not in (".", "..")
    if not any(ch in _GLOB for ch in raw):
        if bare:  # a bare name (``.env``): at any depth of the workspace
            yield from _search(raw, workspace, workspace)
        else:
            yield _rooted(raw, workspace, home)
        return
    # a wildcard: search below the pattern's literal folder
    prefix: list[str] = []
    for part in raw.split("/"):
        if any(ch in _GLOB for ch in part):
            break
        prefix.append(part)
    literal = "/".join(prefix)
    if bare or not literal:
        root = "/" if raw.startswith("/") else workspace
    else:
        root = _rooted(literal, workspace, home)
    if root == "/" or not os.path.isdir(root):
        return  # a wildcard over the whole machine is not searched (name the folder)
    yield from _search(raw, root, workspace)


def _search(pattern: str, root: str, workspace: str) -> Iterator[str]:
    from harnessc.runtime.support.path_patterns import path_matches

    for path in _walk(root, pattern):
        if path_matches(pattern, path, workspace):
            yield path


def _walk(root: str, pattern: str) -> Iterator[str]:
    """Every path below ``root`` (symlinks not followed), folders before their contents."""
    seen = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_WALK_ENTRIES:
                raise SandboxLayoutError(
                    f"the unreadable pattern {pattern!r} needs a search of more than "
                    f"{MAX_WALK_ENTRIES} files below {root}; name the files by a path "
                    "without wildcards (./secrets/key.pem) or a smaller folder"
                )
            yield entry.path
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
            except OSError:
                continue


def _add_hard_links(found: dict[str, bool], workspace: str) -> None:
    """Other names, in the workspace, of an unreadable file that has hard links."""
    wanted: set[tuple[int, int]] = set()
    for path, is_dir in found.items():
        if is_dir:
            continue
        try:
            info = os.stat(path)
        except OSError:
            continue
        if info.st_nlink > 1:
            wanted.add((info.st_dev, info.st_ino))
    if not wanted:
        return
    for path in _walk(workspace, "hard links"):
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino) in wanted:
            found[path] = False


# Unreadable files and folders seen inside writable folders, by identity (device,
# inode) -> the path they had: a program may rename a folder holding one (its mount
# point moves along) and read it from the new name in its next process, so a moved
# one is looked for again.
_SEEN: dict[tuple[int, int], tuple[str, bool]] = {}
_SEEN_LOCK = threading.Lock()
_SEEN_MAX = 4096


def _add_moved(found: dict[str, bool], writable: list[str]) -> None:
    inside = {p: d for p, d in found.items() if any(_inside(p, w) for w in writable)}
    with _SEEN_LOCK:
        for path, is_dir in inside.items():
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if len(_SEEN) < _SEEN_MAX:
                _SEEN[(info.st_dev, info.st_ino)] = (path, is_dir)
        seen = dict(_SEEN)
    moved: dict[tuple[int, int], bool] = {}
    for identity, (path, is_dir) in seen.items():
        try:
            info = os.lstat(path)
        except OSError:
            moved[identity] = is_dir
            continue
        if (info.st_dev, info.st_ino) != identity:
            moved[identity] = is_dir
    if not moved:
        return
    located: set[tuple[int, int]] = set()
    for root in writable:
        for path in _walk(root, "moved unreadable files"):
            try:
                info = os.lstat(path)
            except OSError:
                continue
            identity = (info.st_dev, info.st_ino)
            if identity in moved:
                found[path] = moved[identity]
                located.add(identity)
                with _SEEN_LOCK:
                    _SEEN[identity] = (path, moved[identity])
    with _SEEN_LOCK:  # gone (removed): nothing to look for any more
        for identity in set(moved) - located:
            _SEEN.pop(identity, None)

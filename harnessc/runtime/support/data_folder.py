"""Where harnessc writes: the per-user data folder of each project, and folders it creates.

An agent's sessions (with their search index and prompt history), its MCP servers' logs
and the SQLite database of durable runs go to the project's folder in the per-user data
folder, ``$XDG_DATA_HOME/harnessc/projects/<project>/`` (``XDG_DATA_HOME`` defaults to
``~/.local/share``), so nothing appears in the project's ``git status``. The project is
the nearest folder at or above the agent's working directory that holds ``.git``, else
the working directory itself; ``<project>`` is its path made readable (separators turned
into ``-``) plus a hash of the whole path, so two projects never share a folder.

A ``.harnessc/<name>`` that an older harnessc made in the working directory is used while
it exists (nothing there is lost); ``legacy_note`` says once how to move it.

Every folder harnessc creates (``make_folder``) gets a ``.gitignore`` holding ``*`` in the
topmost folder it had to create (at most up to ``harnessc`` in the data folder), so a folder made inside a project (``session.dir``, a
relative SQLite path) stays out of ``git status``; a ``.gitignore`` already there is never
replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
from pathlib import Path

from msgspec import Struct

__all__ = [
    "LEGACY_FOLDER",
    "DataFolder",
    "FolderSetting",
    "data_home",
    "legacy_note",
    "make_folder",
    "project_data_dir",
    "project_key",
    "project_path",
    "project_root",
    "resolve_folder",
]

LEGACY_FOLDER = ".harnessc"  # where older versions wrote, in the working directory
_NOTED = ".legacy-noted"  # in the data folder: legacy_note was shown for this project
_KEY_CHARS = 80  # the readable part of a project key (its end is kept)


class DataFolder(Struct, frozen=True):
    """``name`` in the data folder of the project the agent runs in (``resolve_folder``).

    The default of ``session.dir``: ``DataFolder("sessions")``.
    """

    name: str


# A folder setting: a path (relative: to the working directory) or a DataFolder.
FolderSetting = str | os.PathLike[str] | DataFolder


def data_home() -> Path:
    """``$XDG_DATA_HOME/harnessc`` (a relative ``XDG_DATA_HOME`` is ignored, as the XDG
    base directory specification says), else ``~/.local/share/harnessc``."""
    base = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base, "harnessc")


def project_root(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The nearest folder at or above ``cwd`` (default: the current one) that holds
    ``.git`` (a folder, or the file of a worktree or submodule); else ``cwd`` itself."""
    start = Path(os.path.realpath(cwd if cwd is not None else os.getcwd()))
    for folder in (start, *start.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return start


def project_key(root: str | os.PathLike[str]) -> str:
    """The name of a project's data folder: ``/home/ann/src/shop`` ->
    ``home-ann-src-shop-<12 hex digits of the path's SHA-256>``."""
    text = os.fspath(root)
    readable = re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.") or "root"
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"{readable[-_KEY_CHARS:].lstrip('-.')}-{digest}"


def project_data_dir(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The data folder of the project ``cwd`` is in (not created here)."""
    return data_home() / "projects" / project_key(project_root(cwd))


def _legacy(name: str, cwd: str | os.PathLike[str]) -> Path | None:
    path = Path(cwd, LEGACY_FOLDER, name)
    return path if os.path.lexists(path) else None


def project_path(name: str, cwd: str | os.PathLike[str] | None = None) -> Path:
    """``name`` (a folder or file) in the project's data folder, or the
    ``.harnessc/<name>`` of an older harnessc in ``cwd`` while it exists."""
    cwd = os.path.abspath(cwd if cwd is not None else os.getcwd())
    return _legacy(name, cwd) or project_data_dir(cwd) / name


def resolve_folder(setting: FolderSetting, cwd: str | os.PathLike[str] | None = None) -> Path:
    """The absolute folder a setting names: a DataFolder's place (``project_path``), or
    a path (``~`` expanded; relative: to ``cwd``, default the current directory)."""
    if isinstance(setting, DataFolder):
        return project_path(setting.name, cwd)
    base = os.path.abspath(cwd if cwd is not None else os.getcwd())
    return Path(base, os.path.expanduser(os.fspath(setting)))


def make_folder(path: str | os.PathLike[str], mode: int = 0o700) -> Path:
    """Create ``path`` and its missing parents (``mode``); the topmost folder created gets
    a ``.gitignore`` of ``*`` unless it has one. An existing folder is left as it is."""
    target = Path(os.path.abspath(path))
    if target.is_dir():
        return target
    top = target
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    home = data_home()
    if home in target.parents and top in home.parents:
        top = home  # ~/.local and ~/.local/share are not harnessc's to mark
    target.mkdir(mode=mode, parents=True, exist_ok=True)
    # a folder another process made at the same moment gets the file too; never replaced
    with contextlib.suppress(FileExistsError, OSError):
        fd = os.open(
            top / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644
        )
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write("# Written by harnessc: nothing in this folder belongs in git.\n*\n")
    return target


def legacy_note(cwd: str | os.PathLike[str] | None = None) -> str | None:
    """Once per project: the note that ``cwd`` still has an older harnessc's
    ``.harnessc`` folder in use, with how to move it; None when there is none or it was
    shown before."""
    cwd = os.path.abspath(cwd if cwd is not None else os.getcwd())
    legacy = [name for name in ("sessions", "logs", "durable.sqlite") if _legacy(name, cwd)]
    if not legacy:
        return None
    target = project_data_dir(cwd)
    try:
        make_folder(target)
        fd = os.open(target / _NOTED, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:  # shown before (the marker exists), or the data folder is not writable
        return None
    os.close(fd)
    folder = Path(cwd, LEGACY_FOLDER)
    moves = " ".join(shlex.quote(f"{LEGACY_FOLDER}/{name}") for name in legacy)
    return (
        f"note: harnessc keeps using {folder} ({', '.join(legacy)}), made by an older "
        f"version; new projects keep these in {target}, out of git. To move them there "
        f"(with no agent running): mv {moves} {shlex.quote(str(target))}/"
    )

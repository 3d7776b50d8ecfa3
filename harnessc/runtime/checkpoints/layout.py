"""Where a checkpoint store keeps a workspace's own files (its stat cache, lock, journal
and busy note): ``<store>/workspaces/<key of the workspace's real path>/``."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from harnessc.runtime.core.checkpoint_settings import CheckpointSettings
from harnessc.runtime.support.data_folder import DataFolder, project_key, resolve_folder

__all__ = ["WORKSPACES", "cut_short", "store_root", "workspace_dir"]

WORKSPACES = "workspaces"
JOURNAL = "journal"  # a rewind under way
BUSY = "busy"  # a checkpoint or a rewind under way


def store_root(settings: CheckpointSettings, cwd: str) -> Path:
    """The store the settings name, for an agent working in ``cwd``."""
    return Path(os.path.abspath(resolve_folder(settings.folder, cwd)))


def workspace_dir(store: str | os.PathLike[str], workspace: str) -> Path:
    """The folder of ``workspace`` (a real path) in the store at ``store``."""
    return Path(store) / WORKSPACES / project_key(workspace)


def cut_short(settings: CheckpointSettings, cwd: str) -> bool:
    """Whether a checkpoint or a rewind of ``cwd`` was under way when its process ended
    (or is under way now): two stat calls, nothing created."""
    setting = settings.folder
    key = setting if isinstance(setting, DataFolder) else os.fspath(setting)
    environ = os.environ
    journal, busy = _markers(key, cwd, environ.get("XDG_DATA_HOME", ""), environ.get("HOME", ""))
    return os.path.exists(journal) or os.path.exists(busy)


@functools.lru_cache(maxsize=64)
def _markers(setting: str | DataFolder, cwd: str, data_home: str, home: str) -> tuple[str, str]:
    """The journal and busy note ``cut_short`` looks for, found once per store setting,
    folder and data folder (its environment is in the key): every agent a process starts
    in a folder asks at its start, a service's thousand at once."""
    store = Path(os.path.abspath(resolve_folder(setting, cwd)))
    folder = workspace_dir(store, os.path.realpath(cwd))
    return str(folder / JOURNAL), str(folder / BUSY)

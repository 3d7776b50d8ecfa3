"""Where a checkpoint store keeps a workspace's own files (its stat cache, lock, journal
and busy note): ``<store>/workspaces/<key of the workspace's real path>/``."""

from __future__ import annotations

import os
from pathlib import Path

from harnessc.runtime.core.checkpoint_settings import CheckpointSettings
from harnessc.runtime.support.data_folder import project_key, resolve_folder

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
    folder = workspace_dir(store_root(settings, cwd), os.path.realpath(cwd))
    return os.path.exists(folder / JOURNAL) or os.path.exists(folder / BUSY)

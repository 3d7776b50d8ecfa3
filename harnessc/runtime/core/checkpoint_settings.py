"""``checkpoints:`` of a spec, as the harness options carry it (``CheckpointSettings``)."""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

from harnessc.runtime.support.data_folder import DataFolder, FolderSetting

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "STORE_FOLDER",
    "CheckpointSettings",
]

DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_FILES = 100_000
STORE_FOLDER = DataFolder("checkpoints")  # the store's default place


class CheckpointSettings(Struct):
    """Whether the workspace is checkpointed around tool batches that may change it,
    what is left out besides what ``.gitignore`` names (gitignore patterns rooted at the
    workspace), the size over which a file is left out, the number of files over which
    the workspace is not checkpointed at all (a working directory that is a whole home
    folder), and the store's folder (default: the project's data folder)."""

    enabled: bool = True
    exclude: Sequence[str] = ()
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_files: int = DEFAULT_MAX_FILES
    folder: FolderSetting = STORE_FOLDER

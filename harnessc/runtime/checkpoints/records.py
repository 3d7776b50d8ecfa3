"""The records of checkpoints: one checkpoint taken (and the settings, from ``core``)."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from harnessc.runtime.core.checkpoint_settings import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    STORE_FOLDER,
    CheckpointSettings,
)

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "PHASES",
    "STORE_FOLDER",
    "Checkpoint",
    "CheckpointSettings",
]

# When a checkpoint is taken: before a tool batch that may change files, after it, when
# a rewind is about to change files (the state it leaves), after a rewind (the state
# it made).
PHASES = ("before", "after", "leave", "rewind")


class Checkpoint(Struct):
    """One checkpoint: the workspace's tree at a moment, and what it left out.

    ``skipped_list`` is the id of an object listing the paths left out with the reason
    (one ``path<TAB>reason`` line each); ``kept`` (a rewind's) the paths a rewind left
    as they were (changed outside the agent)."""

    id: str
    tree: str
    workspace: str
    phase: str
    time: str
    files: int = 0
    bytes: int = 0
    skipped: int = 0
    skipped_list: str | None = None
    kept: list[str] = []

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "tree": self.tree,
            "workspace": self.workspace,
            "phase": self.phase,
            "time": self.time,
            "files": self.files,
            "bytes": self.bytes,
            "skipped": self.skipped,
        }
        if self.skipped_list is not None:
            out["skippedList"] = self.skipped_list
        if self.kept:
            out["kept"] = list(self.kept)
        return out

    @staticmethod
    def from_dict(data: Any) -> Checkpoint | None:
        """The checkpoint a dict describes; None when it is not one."""
        if not isinstance(data, dict):
            return None
        ident, tree, workspace = data.get("id"), data.get("tree"), data.get("workspace")
        if not (isinstance(ident, str) and isinstance(tree, str) and isinstance(workspace, str)):
            return None
        if len(tree) != 64 or any(c not in "0123456789abcdef" for c in tree):
            return None
        phase = data.get("phase")
        listed = data.get("skippedList")
        kept = data.get("kept")
        return Checkpoint(
            id=ident,
            tree=tree,
            workspace=workspace,
            phase=phase if phase in PHASES else "before",
            time=str(data.get("time", "")),
            files=_int(data.get("files")),
            bytes=_int(data.get("bytes")),
            skipped=_int(data.get("skipped")),
            skipped_list=listed if isinstance(listed, str) and len(listed) == 64 else None,
            kept=[k for k in kept if isinstance(k, str)] if isinstance(kept, list) else [],
        )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

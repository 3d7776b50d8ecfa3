"""Checkpoints of the workspace: the files as they were before each tool batch that may
change them, content-addressed in harnessc's data folder (outside the user's git), so a
move of the session tree can bring the files back with the conversation.

The parts: ``objects`` (the content-addressed store), ``trees`` (folder listings and
their differences), ``ignore`` (what is left out), ``statcache`` and ``scan`` (a
checkpoint of an unchanged workspace costs a stat walk), ``store`` (a project's store:
sessions' checkpoints, collection), ``workspace`` (taking, planning and making a
restore, finishing what a killed process left), ``restore`` (the changes themselves).
"""

from __future__ import annotations

from harnessc.runtime.checkpoints.records import (
    DEFAULT_MAX_FILE_BYTES,
    Checkpoint,
    CheckpointSettings,
)
from harnessc.runtime.checkpoints.store import CheckpointStore, CollectReport
from harnessc.runtime.checkpoints.workspace import (
    Recovery,
    RestoreOutcome,
    RestorePlan,
    Workspace,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "Checkpoint",
    "CheckpointSettings",
    "CheckpointStore",
    "CollectReport",
    "Recovery",
    "RestoreOutcome",
    "RestorePlan",
    "Workspace",
]

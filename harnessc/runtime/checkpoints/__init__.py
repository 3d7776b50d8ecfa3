"""Checkpoints of the workspace: the files as they were before each tool batch that may
change them, content-addressed in harnessc's data folder (outside the user's git), so a
move of the session tree can bring the files back with the conversation.

The parts: ``objects`` (the content-addressed store), ``trees`` (folder listings and
their differences), ``ignore`` (what is left out), ``statcache`` and ``scan`` (a
checkpoint of an unchanged workspace costs a stat walk), ``store`` (a project's store:
sessions' checkpoints, collection), ``workspace`` (taking, planning and making a
restore, finishing what a killed process left), ``restore`` (the changes themselves),
``history`` (checkpoints in a session), ``rewind`` (what every door calls), ``batch``
(an agent's checkpoints around its tool batches), ``layout`` (where things are).

The names below are imported when first used: an agent's start imports none of this
unless a checkpoint or a rewind was cut short in its workspace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harnessc.runtime.support.lazy import lazy_exports

if TYPE_CHECKING:
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

_EXPORTS: dict[str, str] = {
    "DEFAULT_MAX_FILE_BYTES": "harnessc.runtime.checkpoints.records",
    "Checkpoint": "harnessc.runtime.checkpoints.records",
    "CheckpointSettings": "harnessc.runtime.checkpoints.records",
    "CheckpointStore": "harnessc.runtime.checkpoints.store",
    "CollectReport": "harnessc.runtime.checkpoints.store",
    "Recovery": "harnessc.runtime.checkpoints.workspace",
    "RestoreOutcome": "harnessc.runtime.checkpoints.workspace",
    "RestorePlan": "harnessc.runtime.checkpoints.workspace",
    "Workspace": "harnessc.runtime.checkpoints.workspace",
}

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

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS, __all__)

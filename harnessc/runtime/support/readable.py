"""Files and folders outside any workspace that read-only tools may still open: the
full-output files bash saves in the temp folder (its notice sends the model there) and
the folders of skills. One registry per process."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

__all__ = ["allow_read", "allow_read_tree", "readable"]

# Files outside any workspace that tools may still read: the full-output files bash
# saves in the temp folder (the notice tells the model to read them).
_READABLE: OrderedDict[str, None] = OrderedDict()
_READABLE_MAX = 512
_READABLE_LOCK = threading.Lock()
_READABLE_TREES: set[str] = set()


def allow_read(path: str | Path) -> None:
    """Let read-only tools open ``path`` even when it lies outside the workspace."""
    with _READABLE_LOCK:
        _READABLE[os.path.realpath(path)] = None
        while len(_READABLE) > _READABLE_MAX:
            _READABLE.popitem(last=False)


def allow_read_tree(folder: str | Path) -> None:
    """Let read-only tools open anything below ``folder`` (a skill's folder, say)."""
    with _READABLE_LOCK:
        _READABLE_TREES.add(os.path.realpath(folder))


def readable(path: Path) -> bool:
    """True when ``path`` (already resolved) was allowed or lies below an allowed tree."""
    with _READABLE_LOCK:
        if str(path) in _READABLE:
            return True
        trees = list(_READABLE_TREES)
    return any(_inside(path, tree) for tree in trees)


def _inside(path: Path, root: str) -> bool:
    try:
        return os.path.commonpath([str(path), root]) == root
    except ValueError:
        return False

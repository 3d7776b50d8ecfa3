"""The interactive mode's line history: readline's, kept in the session directory."""

from __future__ import annotations

import contextlib
import os

__all__ = ["History", "add"]


class History:
    """``load()`` the ``.history`` file of ``directory`` into readline; ``save()`` it."""

    __slots__ = ("path",)

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        self.path = None if directory is None else os.path.join(os.fspath(directory), ".history")

    def load(self) -> None:
        try:
            import readline  # line editing and history for input()
        except ImportError:
            return
        if self.path is None:
            return
        with contextlib.suppress(OSError):
            readline.read_history_file(self.path)
        readline.set_history_length(1000)

    def save(self) -> None:
        if self.path is None:
            return
        try:
            import readline

            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            readline.write_history_file(self.path)
        except (ImportError, OSError):
            pass


def add(line: str) -> None:
    """Put ``line`` in readline's history (a line read without ``input()``)."""
    with contextlib.suppress(ImportError, AttributeError):
        import readline

        readline.add_history(line)

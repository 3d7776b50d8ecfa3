"""Project tools for the coder agent (``python: tools.project:count_lines``)."""

from __future__ import annotations

from pathlib import Path


def count_lines(path: str = ".", pattern: str = "*.py") -> dict[str, int]:
    """Count the lines of the files matching a glob pattern below a folder.

    Args:
        path: Folder to search, relative to the working directory.
        pattern: Glob pattern of the files to count, e.g. "*.py" or "*.md".
    """
    root = Path(path)
    counts: dict[str, int] = {}
    for file in sorted(root.rglob(pattern)):
        if file.is_file() and not any(part.startswith(".") for part in file.parts):
            with file.open("rb") as handle:
                counts[file.as_posix()] = sum(1 for _ in handle)
    counts["total"] = sum(counts.values())
    return counts

"""The project's context files (AGENTS.md, CLAUDE.md) put into the system prompt.

In each folder from the working directory up to the file system's root, the first of
``names`` that exists is read, plus the user-level file. The prompt shows the user-level
file first, then the folders from the root down to the working directory, each marked
with its path. A file longer than ``max_bytes`` is cut there (with a note); one that
cannot be read becomes a warning diagnostic and the run goes on without it.
"""

from __future__ import annotations

import functools
import os

from harnessc.runtime.resources.types import (
    DEFAULT_CONTEXT_NAMES,
    DEFAULT_USER_CONTEXT_FILE,
    ContextFile,
    ContextFileSettings,
    ResourceDiagnostic,
)

__all__ = [
    "DEFAULT_CONTEXT_NAMES",
    "DEFAULT_USER_CONTEXT_FILE",
    "ContextFileSettings",
    "context_candidates",
    "context_prompt_block",
    "context_signature",
    "load_context_files",
]


def _folders(cwd: str) -> list[str]:
    """``cwd`` and its ancestors, from the root down to ``cwd``."""
    folders: list[str] = []
    current = os.path.abspath(cwd)
    while True:
        folders.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return folders[::-1]


def _user_path(settings: ContextFileSettings) -> str | None:
    if not settings.user:
        return None
    return os.path.abspath(os.path.expanduser(settings.user))


def context_candidates(settings: ContextFileSettings, cwd: str) -> list[str]:
    """Every path whose appearance, change or removal changes the loaded files."""
    return list(_candidates(settings, cwd, os.environ.get("HOME")))


@functools.lru_cache(maxsize=64)  # every session of a service asks for the same ones
def _candidates(settings: ContextFileSettings, cwd: str, home: str | None) -> tuple[str, ...]:
    paths = [p for p in [_user_path(settings)] if p is not None]  # ~ reads HOME
    for folder in _folders(cwd):
        paths.extend(os.path.join(folder, name) for name in settings.names)
    return tuple(paths)


def _chosen(settings: ContextFileSettings, cwd: str) -> list[str]:
    """The files to read, in prompt order (user-level first, then root -> cwd)."""
    chosen: list[str] = []
    user = _user_path(settings)
    if user is not None and os.path.exists(user):
        chosen.append(user)
    for folder in _folders(cwd):
        for name in settings.names:
            path = os.path.join(folder, name)
            if os.path.exists(path):
                if path not in chosen:
                    chosen.append(path)
                break
    return chosen


def _read(path: str, max_bytes: int) -> ContextFile:
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
        size = os.fstat(fh.fileno()).st_size
    truncated = len(data) > max_bytes
    text = data[:max_bytes].decode("utf-8", errors="replace")
    if truncated:
        text = text.rstrip("\ufffd")  # a character cut in two at the limit
    return ContextFile(path=path, content=text, truncated=truncated, size=max(size, len(data)))


def load_context_files(
    settings: ContextFileSettings, cwd: str
) -> tuple[list[ContextFile], list[ResourceDiagnostic]]:
    """The context files for ``cwd``, and diagnostics for the ones cut or unreadable."""
    files: list[ContextFile] = []
    diagnostics: list[ResourceDiagnostic] = []
    for path in _chosen(settings, cwd):
        try:
            loaded = _read(path, max(0, settings.max_bytes))
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            diagnostics.append(
                ResourceDiagnostic("warning", f"context file not read: {reason}", path)
            )
            continue
        if loaded.truncated:
            diagnostics.append(
                ResourceDiagnostic(
                    "warning",
                    f"context file is {loaded.size} bytes; only the first "
                    f"{settings.max_bytes} are used",
                    path,
                )
            )
        files.append(loaded)
    return files, diagnostics


def context_signature(settings: ContextFileSettings, cwd: str) -> tuple[object, ...]:
    """Stat facts of every candidate path: a change means the files must be read again."""
    out: list[object] = []
    for path in _candidates(settings, cwd, os.environ.get("HOME")):
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode))
    return tuple(out)


def context_prompt_block(files: list[ContextFile]) -> str:
    """The system prompt's section of context files ('' without any)."""
    if not files:
        return ""
    parts = [
        "# Project context",
        "Instructions from the user's and the project's context files, the most "
        "specific (closest to the working directory) last:",
    ]
    for item in files:
        body = item.content.rstrip("\n")
        if item.truncated:
            body += (
                f"\n\n[truncated: the file is {item.size} bytes; only the first "
                f"{len(item.content.encode('utf-8'))} are shown]"
            )
        parts.append(f"## {item.path}\n\n{body}")
    return "\n\n".join(parts)

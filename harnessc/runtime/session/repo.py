"""Session repositories: the JSONL store (pi layout); the ``SessionRepo`` protocol is in
``repo_protocol`` (re-exported here).

Files live at ``<root>/<cwd-slug>/<timestamp>_<id>.jsonl``; the slug is pi's
``--path-with-dashes--`` (leading slash dropped, ``/``, ``\\`` and ``:`` turned into
``-``), the timestamp the header's with ``:`` and ``.`` turned into ``-``, so a repo
rooted at pi's session directory lists pi's sessions and pi lists ours.

Opening by id only ever finds files under the root (symlinks leading out are refused);
an explicit path may point anywhere. A header's ``parentSession`` is data only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path
from stat import S_ISREG
from typing import Any

from harnessc.runtime.session.jsonl import (
    EmptySessionFileError,
    LoadedSession,
    SessionFileError,
    read_session_file,
)
from harnessc.runtime.session.lock import lock_exclusive, unlock
from harnessc.runtime.session.repo_protocol import (
    ForkPosition,
    SessionMeta,
    SessionNotFoundError,
    SessionRef,
    SessionRepo,
)
from harnessc.runtime.session.session import (
    Session,
    SessionError,
    SessionHeader,
)
from harnessc.runtime.session.storage import (
    DIR_MODE,
    JsonlStorage,
    ReadOnlyStorage,
    empty_file_header,
)
from harnessc.runtime.session.stores import SessionStore
from harnessc.runtime.support.data_folder import make_folder

__all__ = [
    "ForkPosition",
    "JsonlSessionRepo",
    "SessionMeta",
    "SessionNotFoundError",
    "SessionRef",
    "SessionRepo",
    "cwd_slug",
    "session_file_name",
]


def cwd_slug(cwd: str) -> str:
    """pi's directory name for a working directory: ``/a/b`` -> ``--a-b--``."""
    trimmed = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + re.sub(r"[/\\:]", "-", trimmed) + "--"


def session_file_name(header: SessionHeader) -> str:
    return f"{re.sub(r'[:.]', '-', header.timestamp)}_{header.id}.jsonl"


_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_HEAD_LINES = 64  # list(): lines read per file looking for the first prompt
_HEAD_BYTES = 1 << 20
_NAME_BYTES = 1 << 16  # list(): a session_info within this much of the start gives the name


class JsonlSessionRepo(SessionStore):
    """Sessions as pi v3 JSONL files under ``root`` (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.abspath(os.fspath(root)))
        self._root = str(self.root)
        # (path, reason) of the files the last list() skipped
        self.skipped: list[tuple[str, str]] = []

    def __repr__(self) -> str:
        return f"JsonlSessionRepo({str(self.root)!r})"

    # -- create / open ---------------------------------------------------------

    def start(self, header: SessionHeader) -> Session:
        """The file of a new session (``create``), locked."""
        directory = os.path.join(self._root, cwd_slug(header.cwd))
        path = os.path.join(directory, session_file_name(header))
        try:
            storage = JsonlStorage.create(path, header)
        except FileNotFoundError:  # no folder yet (found by the create: no stat each time)
            make_folder(self.root, DIR_MODE)  # new folders are the owner's alone, out of git
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, DIR_MODE)
            storage = JsonlStorage.create(path, header)
        return Session(header=header, storage=storage, path=path)

    def open(
        self, target: SessionMeta | str | os.PathLike[str], *, read_only: bool = False
    ) -> Session:
        """Open a session by meta, id (or unique id prefix) or file path.

        Unless ``read_only``, the file is locked for appending (SessionLockedError
        when another process holds it). A version 1 or 2 file is migrated as pi
        migrates it (and, unless ``read_only``, rewritten in version 3 as pi does); an
        empty file (or one holding only a torn header) opens as a new session.
        Problems in the file are in ``diagnostics``.
        """
        path = self.resolve(target)
        if read_only:
            try:
                loaded = read_session_file(path)
            except EmptySessionFileError as exc:  # pi opens an empty file as a new session
                header = empty_file_header(path)
                loaded = LoadedSession(header, [], [f"{exc}: a new session"])
            storage: Any = ReadOnlyStorage(path)
        else:
            storage, loaded = JsonlStorage.open_locked(path)
        return Session(
            header=loaded.header,
            entries=loaded.entries,
            storage=storage,
            path=path,
            diagnostics=loaded.diagnostics,
        )

    def resolve(self, target: SessionMeta | str | os.PathLike[str]) -> str:
        """The file of a meta, id, id prefix or path (ids only match files under the root)."""
        if isinstance(target, SessionMeta):
            path = Path(target.path)
            self._check_inside(path)
            return str(path)
        if isinstance(target, os.PathLike) or _looks_like_path(target):
            path = Path(os.fspath(target))
            if not path.is_file():
                raise SessionNotFoundError(f"no session file {path}")
            return str(path)
        return self._find_by_id(target)

    def _find_by_id(self, session_id: str) -> str:
        if not _ID_RE.match(session_id):
            raise SessionNotFoundError(f"{session_id!r} is not a session id")
        if not self.root.is_dir():
            raise SessionNotFoundError(f"no session {session_id!r} (no directory {self.root})")
        exact = sorted(self.root.glob(f"*/*_{session_id}.jsonl"))
        matches = exact or sorted(self.root.glob(f"*/*_{session_id}*.jsonl"))
        matches = [m for m in matches if m.is_file()]
        if not matches:
            raise SessionNotFoundError(f"no session {session_id!r} under {self.root}")
        if len(matches) > 1:
            ids = ", ".join(m.stem.split("_", 1)[-1] for m in matches[:5])
            raise SessionNotFoundError(f"session id {session_id!r} is ambiguous: {ids}")
        self._check_inside(matches[0])
        return str(matches[0])

    def _check_inside(self, path: Path) -> None:
        real = Path(os.path.realpath(path))
        root = Path(os.path.realpath(self.root))
        if not real.is_relative_to(root):
            raise SessionError(f"refusing {path}: it is outside the session root {self.root}")

    # -- list ----------------------------------------------------------------

    def list(self, cwd: str | None = None, *, full: bool = False) -> list[SessionMeta]:
        """Sessions (of ``cwd``, else of every directory), most recently modified first.

        Reads the header and the first lines of each file (for the first prompt and a
        name set early). With ``full=True`` the whole file is scanned for the latest
        ``session_info`` name (only those lines are parsed). Unreadable files are
        skipped and recorded in ``self.skipped``.
        """
        self.skipped = []
        root = Path(os.path.realpath(self.root))
        if cwd is not None:
            directories = [self.root / cwd_slug(os.path.abspath(cwd))]
        elif self.root.is_dir():
            directories = sorted(
                p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")
            )
        else:
            directories = []
        metas: list[tuple[int, SessionMeta]] = []
        for directory in directories:
            if not Path(os.path.realpath(directory)).is_relative_to(root):
                continue  # a symlink leading out of the root: never read
            try:
                files = [p for p in directory.iterdir() if p.name.endswith(".jsonl")]
            except OSError:
                continue
            for file in files:
                try:
                    real = Path(os.path.realpath(file))
                    stat = real.stat()
                    if not real.is_relative_to(root) or not S_ISREG(stat.st_mode):
                        # a link out of the root, a FIFO or device: opening it could read
                        # outside the sessions folder or block forever
                        self.skipped.append((str(file), "not a regular file inside the root"))
                        continue
                    meta = _read_meta(str(file), full)
                except (OSError, ValueError, SessionError) as exc:
                    self.skipped.append((str(file), str(exc)))
                    continue
                meta.modified = stat.st_mtime
                meta.size = stat.st_size
                metas.append((stat.st_mtime_ns, meta))
        metas.sort(key=lambda item: (item[0], item[1].timestamp), reverse=True)
        return [meta for _, meta in metas]

    # -- delete -------------------------------------------------------

    def delete(self, meta: SessionMeta | str | os.PathLike[str]) -> None:
        """Delete a session file under the root; refused while a writer holds it."""
        path = self.resolve(meta)
        self._check_inside(Path(path))
        fd = os.open(path, os.O_RDONLY)
        try:
            lock_exclusive(fd, path)
            os.unlink(path)
            unlock(fd)
        finally:
            os.close(fd)

    def parent_of(self, session: Session) -> str | None:
        """A fork's ``parentSession``: the source's file."""
        return os.path.abspath(session.path) if session.path else None


def _looks_like_path(target: str) -> bool:
    return "/" in target or os.sep in target or target.endswith(".jsonl")


def _read_meta(path: str, full: bool) -> SessionMeta:
    """Header, first user prompt and session name from the head of a session file."""
    name: str | None = None
    first_prompt: str | None = None
    with open(path, "rb") as f:
        head = f.readline(_HEAD_BYTES)
        try:
            header = SessionHeader.from_dict(json.loads(head))
        except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep JSON
            raise SessionFileError(f"not a session file ({exc})") from None
        read = len(head)
        for _ in range(_HEAD_LINES):
            # past the first 64 KB only a missing first prompt is worth reading on for
            if read >= _HEAD_BYTES or (first_prompt is not None and read >= _NAME_BYTES):
                break
            line = f.readline(_HEAD_BYTES)
            if not line:
                break
            read += len(line)
            if b'"session_info"' in line:
                name = _session_name(line, name)
            elif first_prompt is None and b'"user"' in line:
                first_prompt = _user_text(line)
        if full:
            for line in f:
                if b'"session_info"' in line:
                    name = _session_name(line, name)
    return SessionMeta(
        id=header.id,
        path=path,
        cwd=header.cwd,
        timestamp=header.timestamp,
        name=name,
        first_prompt=first_prompt,
        parent_session=header.parent_session,
        metadata=header.metadata,
        version=header.version,
    )


def _session_name(line: bytes, current: str | None) -> str | None:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return current
    if not isinstance(obj, dict) or obj.get("type") != "session_info":
        return current
    value = obj.get("name")
    return str(value) if value else None


def _user_text(line: bytes) -> str | None:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    message = obj.get("message") if isinstance(obj, dict) and obj.get("type") == "message" else None
    if not isinstance(message, dict) or message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(c.get("text", ""))
            for c in content
            if isinstance(c, dict) and c.get("type") == "text"
        )
    return None


def _conforms(repo: JsonlSessionRepo) -> SessionRepo:
    return repo  # mypy checks that JsonlSessionRepo implements the protocol

"""Session flags: which session a run uses, and the ``--sessions`` / ``--search`` listings.

Everything here works on any ``SessionRepo`` (JSONL files, PostgreSQL, ...): a store that
keeps its sessions as files under a folder (``FileSessionRepo``: a ``root``) is searched
through the SQLite index beside them, a store with a ``search`` method
(``SearchableSessionRepo``) searches itself.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from msgspec import Struct

from harnessc.runtime.cli.args import UsageError
from harnessc.runtime.cli.output import one_line
from harnessc.runtime.runs.sessions import (
    FileSessionRepo,
    SearchableSessionRepo,
    describe_repo,
    discard_if_empty,
    discard_if_unused,
    has_exchange,
    latest_session,
    list_sessions,
    search_repo,
    search_sessions,
)
from harnessc.runtime.session.repo_protocol import SessionRepo
from harnessc.runtime.session.session import Session, SessionError, SessionHeader

if TYPE_CHECKING:
    from harnessc.runtime.session.repo import JsonlSessionRepo, SessionMeta

__all__ = [
    "FileSessionRepo",
    "SearchableSessionRepo",
    "SessionChoice",
    "choose_session",
    "describe_repo",
    "discard_if_empty",
    "discard_if_unused",
    "has_exchange",
    "fork_session",
    "latest_session",
    "list_sessions",
    "open_repo",
    "print_listing",
    "print_sessions",
    "search_repo",
    "search_sessions",
]


class SessionChoice(Struct):
    """The session to hand to ``build_options`` (None: let it create one)."""

    session: Session | None
    new: bool  # a fresh session (removed again when the run never starts)
    note: str | None = None  # something to tell the user on stderr


def open_repo(root: str | os.PathLike[str] | None) -> JsonlSessionRepo:
    from harnessc.runtime.session.repo import JsonlSessionRepo

    if root is None:
        raise UsageError(
            "this agent has no session directory: pass --session-dir DIR (or --no-session)"
        )
    return JsonlSessionRepo(root)


def choose_session(
    *,
    session_arg: str | None,
    continue_: bool,
    fork: str | None,
    no_session: bool,
    session_dir: str | os.PathLike[str] | None,
    dir_given: bool,
    cwd: str,
    agent_name: str,
    required: bool = False,
    repo: SessionRepo | None = None,
) -> SessionChoice:
    """Resolve --session / --continue / --fork / --no-session / --session-dir.

    ``repo``: the agent's session store (default: the JSONL files under ``session_dir``);
    a file path given to --session is opened from its own folder either way.
    ``required``: the run needs an existing session (``--resume-with``), so
    ``--continue`` finding none is an error instead of starting afresh.
    """
    metadata = {"agent": agent_name}
    if no_session:
        return SessionChoice(Session(SessionHeader.new(cwd=cwd, metadata=metadata)), True)
    try:
        if session_arg is not None:
            store = _repo_for(session_arg, session_dir, repo)
            if fork is not None:
                return SessionChoice(fork_session(store, session_arg, fork), True)
            return SessionChoice(store.open(session_arg), False)
        if continue_ or fork is not None:
            store = repo if repo is not None else open_repo(session_dir)
            meta = latest_session(store, cwd, agent_name)
            if meta is None:
                if required or fork is not None:
                    raise UsageError(f"no session to continue for {cwd} in {describe_repo(store)}")
                note = "no earlier session in this directory: starting a new one"
                return SessionChoice(_create(store, cwd, metadata), True, note)
            if fork is not None:
                return SessionChoice(fork_session(store, meta, fork), True)
            return SessionChoice(store.open(meta), False)
        if required:
            raise UsageError("--resume-with needs --continue or --session")
        if dir_given:
            return SessionChoice(_create(open_repo(session_dir), cwd, metadata), True)
        return SessionChoice(None, True)
    except SessionError as exc:
        raise UsageError(_session_problem(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot open the session: {exc}") from None


def _session_problem(exc: SessionError) -> str:
    """The message for a session that cannot be opened, with what to do on the command line."""
    from harnessc.runtime.session.lock import SessionLockedError

    if isinstance(exc, SessionLockedError):
        who = f"process {exc.pid}" if exc.pid is not None else "another process"
        return (
            f"session {exc.path} is in use by {who} (another run of an agent); wait for it "
            "to finish, or continue in a copy: --session ID --fork ENTRY_ID "
            "(/tree in -i lists entry ids)"
        )
    return str(exc)


def _is_file_path(target: str) -> bool:
    return "/" in target or target.endswith(".jsonl")


def _repo_for(
    target: str, session_dir: str | os.PathLike[str] | None, repo: SessionRepo | None = None
) -> SessionRepo:
    """The repo to open ``target`` from; a file path needs no session directory."""
    if _is_file_path(target) and (repo is not None or session_dir is None):
        if repo is None or os.path.isfile(target):
            from harnessc.runtime.session.repo import JsonlSessionRepo

            return JsonlSessionRepo(Path(target).resolve().parent)
    return repo if repo is not None else open_repo(session_dir)


def _create(repo: SessionRepo, cwd: str, metadata: dict[str, Any]) -> Session:
    return repo.create(cwd=cwd, metadata=metadata)


def fork_session(repo: SessionRepo, source: Any, entry_id: str | None) -> Session:
    """A new session holding the branch of ``source`` up to and including ``entry_id``."""
    try:
        return repo.fork(source, entry_id, position="at")
    except KeyError as exc:
        raise UsageError(str(exc.args[0]) if exc.args else str(exc)) from None


# -- listings ------------------------------------------------------------------


def _local_time(meta: SessionMeta) -> str:
    stamp = meta.modified or 0.0
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp else meta.timestamp


def print_sessions(
    metas: list[SessionMeta], out: TextIO, *, as_json: bool, cwd: str | None = None
) -> None:
    """One line per session: id prefix, time, name (or -), first prompt [, other cwd]."""
    if as_json:
        import json

        for meta in metas:
            row = {
                "id": meta.id,
                "path": meta.path,
                "cwd": meta.cwd,
                "created": meta.timestamp,
                "modified": meta.modified,
                "name": meta.name,
                "first_prompt": meta.first_prompt,
                "parent_session": meta.parent_session,
                "subagents": [
                    {"agent_path": path, "id": header.id, "path": file}
                    for _, path, header, file in subagent_sessions(meta.path)
                ],
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    if not metas:
        out.write("no sessions\n")
        return
    width = max(len(meta.name or "-") for meta in metas)
    for meta in metas:
        prompt = one_line(meta.first_prompt or "(no prompt yet)", 70)
        where = f"  (in {meta.cwd})" if cwd is not None and meta.cwd != cwd else ""
        fork = f"  (fork of {_short_id(meta.parent_session)})" if meta.parent_session else ""
        name = (meta.name or "-").ljust(width)
        out.write(f"{meta.id[:8]}  {_local_time(meta)}  {name}  {prompt}{fork}{where}\n")
        for depth, path, header, _ in subagent_sessions(meta.path):
            out.write(f"{'  ' * depth}> {header.id[:8]}  {' > '.join(path)}\n")


def subagent_sessions(parent: str, depth: int = 1) -> list[tuple[int, list[str], Any, str]]:
    """The sessions of a session's sub-agents, depth first: (depth, agent path, header,
    file); they live in the folder named after the parent's file."""
    from harnessc.runtime.agent.subagents import child_session_dir
    from harnessc.runtime.session.entries import SessionError
    from harnessc.runtime.session.jsonl import read_header

    if not parent or not parent.endswith(".jsonl"):
        return []
    folder = child_session_dir(parent)
    if not folder.is_dir():
        return []
    out: list[tuple[int, list[str], Any, str]] = []
    for file in sorted(folder.glob("*.jsonl")):
        try:
            header = read_header(str(file))
        except (OSError, ValueError, SessionError):
            continue
        path = header.metadata.get("agent_path") if isinstance(header.metadata, dict) else None
        out.append((depth, [str(p) for p in path or [file.stem]], header, str(file)))
        out.extend(subagent_sessions(str(file), depth + 1))
    return out


def _short_id(parent: str) -> str:
    """A parent session (a path or an id) as the id prefix the listing shows."""
    stem = Path(parent).stem
    return stem.rsplit("_", 1)[-1][:8] if "_" in stem else stem[:8]


def print_hits(hits: list[Any], out: TextIO, *, as_json: bool) -> None:
    if as_json:
        import json

        for hit in hits:
            row = {
                "session_id": hit.session_id,
                "path": hit.path,
                "entry_id": hit.entry_id,
                "role": hit.role,
                "snippet": hit.snippet,
                "score": hit.score,
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    if not hits:
        out.write("no matches\n")
        return
    for hit in hits:
        out.write(
            f"{hit.session_id[:8]}  {hit.entry_id}  {hit.role:<9}  {one_line(hit.snippet, 100)}\n"
        )


def print_listing(
    session_dir: Any,
    agent_name: str,
    *,
    search: str | None,
    as_json: bool,
    cwd: str,
    out: TextIO,
    err: TextIO,
    repo: SessionRepo | None = None,
) -> int:
    """``--sessions`` (``search`` None) or ``--search QUERY``: print, return the exit code.

    ``repo``: the agent's session store (default: the JSONL files under ``session_dir``).
    """
    from harnessc.runtime.cli.args import EXIT_DONE, EXIT_ERROR

    store = repo if repo is not None else open_repo(session_dir)
    if isinstance(store, FileSessionRepo) and not _has_files(store.root):
        # Nothing stored yet: answer without creating the folder or the index there.
        if not as_json:
            out.write("no matches\n" if search is not None else "no sessions\n")
        out.flush()
        return EXIT_DONE
    from harnessc.runtime.session.index_support import SessionIndexError

    try:
        if search is None:
            print_sessions(list_sessions(store, agent_name), out, as_json=as_json, cwd=cwd)
        else:
            print_hits(search_repo(store, search), out, as_json=as_json)
    except (SessionIndexError, SessionError) as exc:  # busy, unwritable, unreachable
        err.write(f"error: {exc}\n")
        return EXIT_ERROR
    out.flush()
    return EXIT_DONE


def _has_files(root: Path) -> bool:
    return any(root.glob("*/*.jsonl")) or any(root.glob("*.jsonl"))

"""``harnessc sessions``: move sessions between PostgreSQL and pi v3 JSONL files (export,
import); rewind a session with its files, list its checkpoints, delete sessions with
their checkpoints, collect the checkpoint store (rewind, checkpoints, delete, gc)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

__all__ = ["sessions"]

_URL_HELP = "PostgreSQL URL (default: $DATABASE_URL)."
_SCHEMA_HELP = "Schema holding the session tables."


def _repo(url: str | None, schema: str):  # type: ignore[no-untyped-def]
    from harnessc.runtime.session.postgres import PostgresSessionRepo

    url = url or os.environ.get("DATABASE_URL", "")
    if not url:
        raise click.UsageError("give --url or set DATABASE_URL")
    return PostgresSessionRepo(url, schema=schema)


@click.group()
def sessions() -> None:
    """Copy sessions between PostgreSQL and JSONL files; rewind a session and its files."""


@sessions.command("export")
@click.argument("session_ids", nargs=-1)
@click.option(
    "--to",
    "to_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder to write into (JSONL repo layout).",
)
@click.option("--url", default=None, help=_URL_HELP)
@click.option("--schema", default="harnessc", show_default=True, help=_SCHEMA_HELP)
def export_cmd(session_ids: tuple[str, ...], to_dir: str, url: str | None, schema: str) -> None:
    """Write SESSION_IDS (default: every session) as JSONL files under --to."""
    from harnessc.runtime.session.session import SessionError

    repo = _repo(url, schema)
    try:
        targets = list(session_ids) or [meta.id for meta in repo.list()]
        for target in targets:
            click.echo(repo.export_jsonl(target, to_dir))
    except (SessionError, FileExistsError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        repo.close()


@sessions.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--url", default=None, help=_URL_HELP)
@click.option("--schema", default="harnessc", show_default=True, help=_SCHEMA_HELP)
def import_cmd(paths: tuple[str, ...], url: str | None, schema: str) -> None:
    """Copy session files (or every *.jsonl under a folder) into PostgreSQL."""
    from harnessc.runtime.session.session import SessionError

    files: list[Path] = []
    for path in map(Path, paths):
        files.extend(sorted(path.rglob("*.jsonl")) if path.is_dir() else [path])
    repo = _repo(url, schema)
    failed = 0
    try:
        for file in files:
            try:
                meta = repo.import_jsonl(file)
            except (SessionError, OSError, UnicodeDecodeError) as exc:
                click.echo(f"{file}: not imported: {exc}", err=True)
                failed += 1
                continue
            for where, note in repo.skipped:
                click.echo(f"{where}: {note}", err=True)
            click.echo(f"{meta.id}  {file}")
    finally:
        repo.close()
    if failed:
        raise SystemExit(1)


# -- checkpoints: rewind, list, delete with checkpoints, collect --------------------------

_DIR_HELP = (
    "Session folder (JSONL files); default: the project's folder in the per-user data "
    "folder, as agents keep them."
)
_STORE_HELP = "Checkpoint store; default: the project's folder in the per-user data folder."


def _jsonl_repo(directory: str | None):  # type: ignore[no-untyped-def]
    from harnessc.runtime.session.repo import JsonlSessionRepo
    from harnessc.runtime.support.data_folder import DataFolder, resolve_folder

    return JsonlSessionRepo(resolve_folder(directory or DataFolder("sessions")))


def _store(path: str | None, cwd: str | None = None):  # type: ignore[no-untyped-def]
    from harnessc.runtime.checkpoints import CheckpointStore
    from harnessc.runtime.core.checkpoint_settings import STORE_FOLDER
    from harnessc.runtime.support.data_folder import resolve_folder

    return CheckpointStore(resolve_folder(path or STORE_FOLDER, cwd))


def _open_session(repo, target: str):  # type: ignore[no-untyped-def]
    from harnessc.runtime.session.session import SessionError

    try:
        return repo.open(target)
    except (SessionError, OSError) as exc:
        raise click.ClickException(str(exc)) from None


def _workspace(session, store_path: str | None):  # type: ignore[no-untyped-def]
    from harnessc.runtime.checkpoints import Workspace

    cwd = session.cwd or os.getcwd()
    return Workspace(_store(store_path, cwd), cwd)


@sessions.command("checkpoints")
@click.argument("session_id")
@click.option("--dir", "directory", default=None, help=_DIR_HELP)
@click.option("--store", "store_path", default=None, help=_STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object.")
def checkpoints_cmd(
    session_id: str, directory: str | None, store_path: str | None, as_json: bool
) -> None:
    """List SESSION_ID's recent checkpoints and what restoring each would change."""
    import json

    from harnessc.runtime.checkpoints.rewind import recent_points

    session = _open_session(_jsonl_repo(directory), session_id)
    try:
        points = recent_points(session, _workspace(session, store_path), 20)
    finally:
        session.close()
    if as_json:
        click.echo(json.dumps({"checkpoints": [p.to_dict() for p in points]}))
        return
    if not points:
        click.echo("no checkpoints on the session's current branch")
    for point in points:
        what = f"{len(point.changes)} path(s) would change" if point.changes else "no change"
        click.echo(f"{point.entry_id}  {point.point.checkpoint.time}  before {point.label}: {what}")
        for path in point.changes[:10]:
            click.echo(f"    {path}")


@sessions.command("rewind")
@click.argument("session_id")
@click.argument("entry_id")
@click.option(
    "--mode",
    type=click.Choice(["both", "conversation", "files"]),
    default=None,
    help="What moves: the conversation and the files, the conversation only, or the files only.",
)
@click.option("--force", is_flag=True, help="Also overwrite files changed outside the agent.")
@click.option("--dry-run", is_flag=True, help="Show the changes, change nothing.")
@click.option("--dir", "directory", default=None, help=_DIR_HELP)
@click.option("--store", "store_path", default=None, help=_STORE_HELP)
@click.option("--json", "as_json", is_flag=True, help="The report as one JSON object.")
def rewind_cmd(
    session_id: str,
    entry_id: str,
    mode: str | None,
    force: bool,
    dry_run: bool,
    directory: str | None,
    store_path: str | None,
    as_json: bool,
) -> None:
    """Move SESSION_ID to ENTRY_ID with its files (--mode), showing the diff first.

    The session must not be open in an agent. A file changed outside the agent since
    the checkpoint is reported and kept unless --force."""
    import asyncio
    import json

    from harnessc.runtime.checkpoints.rewind import RewindError, rewind

    if mode is None and not dry_run:
        raise click.UsageError("give --mode both, conversation or files (or --dry-run)")
    session = _open_session(_jsonl_repo(directory), session_id)
    try:
        workspace = _workspace(session, store_path)
        for note in workspace.recover():
            click.echo(f"[checkpoints] {note.message}", err=True)
        shown: list[bool] = []

        def show_first(plan: Any) -> bool:
            # the changes and the diff before any file is touched
            if not as_json:
                diff = plan.text_diff(workspace.store.objects) if plan.changes else ""
                _show_plan(plan, diff)
                shown.append(True)
            return True

        try:
            report = asyncio.run(
                rewind(
                    session,
                    workspace,
                    entry_id,
                    mode=mode or "files",
                    force=force,
                    dry_run=dry_run,
                    confirm=show_first,
                )
            )
        except RewindError as exc:
            raise click.ClickException(str(exc)) from None
        workspace.close()
    finally:
        session.close()
    if as_json:
        click.echo(json.dumps(report.to_dict()))
        return
    if report.plan is not None and not shown:
        _show_plan(report.plan, report.diff)
    for kept in report.outcome.kept if report.outcome is not None else []:
        click.echo(f"kept {kept.path}: {kept.reason}", err=True)
    click.echo(report.note)


def _show_plan(plan: Any, diff: str | None) -> None:
    click.echo(f"files: {plan.summary()}")
    for line in plan.lines():
        click.echo(f"  {line}")
    if diff:
        click.echo(diff)


_DB_URL_HELP = "Sessions in PostgreSQL at this URL (instead of JSONL files)."


@sessions.command("delete")
@click.argument("session_ids", nargs=-1, required=True)
@click.option("--dir", "directory", default=None, help=_DIR_HELP)
@click.option("--url", default=None, help=_DB_URL_HELP)
@click.option("--schema", default="harnessc", show_default=True, help=_SCHEMA_HELP)
@click.option("--store", "store_path", default=None, help=_STORE_HELP)
def delete_cmd(
    session_ids: tuple[str, ...],
    directory: str | None,
    url: str | None,
    schema: str,
    store_path: str | None,
) -> None:
    """Delete sessions (JSONL files, or in PostgreSQL with --url) with their
    checkpoints; objects nothing else names are removed."""
    from harnessc.runtime.session.session import SessionError

    repo = _repo(url, schema) if url else _jsonl_repo(directory)
    store = _store(store_path)
    failed = 0
    for target in session_ids:
        try:
            full = repo.resolve(target)
            session = repo.open(full, read_only=True)
            sid = session.id
            session.close()
            repo.delete(full)
        except (SessionError, OSError) as exc:
            click.echo(f"{target}: not deleted: {exc}", err=True)
            failed += 1
            continue
        store.forget_session(sid)
        click.echo(f"deleted {sid}")
    if url:
        repo.close()
    report = store.collect()
    click.echo(f"checkpoints: {report.objects} object(s) removed, {report.bytes} bytes freed")
    if failed:
        raise SystemExit(1)


@sessions.command("gc")
@click.option("--store", "store_path", default=None, help=_STORE_HELP)
@click.option("--url", default=None, help="Also drop those of sessions gone from PostgreSQL here.")
@click.option("--schema", default="harnessc", show_default=True, help=_SCHEMA_HELP)
def gc_cmd(store_path: str | None, url: str | None, schema: str) -> None:
    """Drop the checkpoints of sessions that no longer exist and remove every object
    nothing names. A session kept in PostgreSQL counts as gone only with --url, when
    that database no longer holds it."""
    alive = None
    if url:
        repo = _repo(url, schema)
        try:
            stored = {meta.id for meta in repo.list()}
        finally:
            repo.close()

        def alive(refs: Any) -> bool | None:  # a database's session: there or gone
            if refs.session_path is None and refs.pid is None:
                return refs.session_id in stored
            return None

    report = _store(store_path).collect(alive)
    for sid in report.sessions:
        click.echo(f"dropped the checkpoints of {sid} (its session is gone)")
    click.echo(
        f"{report.objects} object(s) removed, {report.bytes} bytes freed, {report.kept} kept"
    )

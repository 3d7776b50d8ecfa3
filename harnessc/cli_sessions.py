"""``harnessc sessions export|import``: move sessions between PostgreSQL and pi v3 JSONL files."""

from __future__ import annotations

import os
from pathlib import Path

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
    """Copy sessions between the PostgreSQL store and JSONL files (pi's layout)."""


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

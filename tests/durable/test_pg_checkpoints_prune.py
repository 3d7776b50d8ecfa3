"""Sessions kept in PostgreSQL are pruned with their checkpoints: ``harnessc sessions
delete --url`` deletes a session and its checkpoints, ``harnessc sessions gc --url``
drops the checkpoints of sessions the database no longer holds (without --url they
stay: a database's session has no file to look for)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from harnessc.cli_sessions import sessions
from harnessc.runtime.checkpoints import CheckpointStore, Workspace
from harnessc.runtime.session.postgres import PostgresSessionRepo


def test_checkpoints_of_postgres_sessions_go_with_them(
    tmp_path: Path, pg_dsn: str, pg_schema: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = CheckpointStore(tmp_path / "store")
    repo = PostgresSessionRepo(pg_dsn, schema=pg_schema)
    ids = []
    try:
        workspace = Workspace(store, ws)
        for name in ("deleted", "dropped", "kept"):
            session = repo.create(cwd=str(ws))
            ids.append(session.id)
            (ws / f"{name}.txt").write_text(f"only {name}'s checkpoint holds this\n")
            workspace.take(session_id=session.id)  # no file, no process: a database's
            (ws / f"{name}.txt").unlink()
            session.close()
        workspace.close()
        deleted, dropped, kept = ids
        repo.delete(dropped)  # gone from the database behind harnessc's back
    finally:
        repo.close()

    runner = CliRunner()
    db = ["--url", pg_dsn, "--schema", pg_schema, "--store", str(store.root)]
    plain = runner.invoke(sessions, ["gc", "--store", str(store.root)])
    assert plain.exit_code == 0, plain.output
    assert {r.session_id for r in store.sessions()} == set(ids)  # no --url: all stay

    gone = runner.invoke(sessions, ["delete", deleted, *db])
    assert gone.exit_code == 0, gone.output
    assert f"deleted {deleted}" in gone.output
    assert {r.session_id for r in store.sessions()} == {dropped, kept}

    collected = runner.invoke(sessions, ["gc", *db])
    assert collected.exit_code == 0, collected.output
    assert f"dropped the checkpoints of {dropped}" in collected.output
    assert [r.session_id for r in store.sessions()] == [kept]
    # kept's files are still whole in the store; the others' objects were removed
    [refs] = store.sessions()
    plan = Workspace(store, ws).plan(refs.checkpoints[0])
    assert [line for line in plan.lines()] == ["A kept.txt"]

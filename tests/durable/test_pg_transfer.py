"""PostgreSQL <-> JSONL: import and export keep pi files' bytes; full-text search."""

from __future__ import annotations

import lzma
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harnessc.cli import cli
from harnessc.runtime.session import JsonlSessionRepo, SessionError
from harnessc.runtime.session.jsonl import read_session_file
from harnessc.runtime.session.postgres import PostgresSessionRepo
from tests.session._helpers import PI_FILE, reply, user

ROOT = Path(__file__).resolve().parents[2]


def interop_dir() -> Path | None:
    """shared/interop/pi-sessions beside the checkout (or beside a folder above it)."""
    for parent in ROOT.parents:
        candidate = parent / "shared" / "interop" / "pi-sessions"
        if candidate.is_dir():
            return candidate
    return None


def shape(entries: list[Any]) -> list[tuple[Any, ...]]:
    """Entries with ids replaced by their position (generated ids differ per reading)."""
    index = {e.id: i for i, e in enumerate(entries)}
    return [(e.type, index.get(e.parent_id), e.timestamp, e.data) for e in entries]


@pytest.fixture
def pg(pg_dsn: str, pg_schema: str) -> Any:
    repo = PostgresSessionRepo(pg_dsn, schema=pg_schema)
    yield repo
    repo.close()


def test_a_pi_v3_file_round_trips_byte_for_byte(pg: PostgresSessionRepo, tmp_path: Path) -> None:
    meta = pg.import_jsonl(PI_FILE)
    original = read_session_file(str(PI_FILE))
    assert meta.id == original.header.id and pg.skipped == []
    with pg.open(meta.id, read_only=True) as s:
        assert [e.to_dict() for e in s.entries()] == [e.to_dict() for e in original.entries]
    out = pg.export_jsonl(meta.id, tmp_path / "out")
    assert Path(out).name == PI_FILE.name and Path(out).parent.name == PI_FILE.parent.name
    assert Path(out).read_bytes() == PI_FILE.read_bytes()
    with pytest.raises(SessionError, match="already in"):
        pg.import_jsonl(PI_FILE)
    with pytest.raises(FileExistsError):
        pg.export_jsonl(meta.id, tmp_path / "out")  # an existing file is never overwritten


@pytest.mark.parametrize(
    "name", ["large-session.head200.jsonl.xz", "before-compaction.head380.jsonl.xz"]
)
def test_real_pi_sessions_round_trip(pg: PostgresSessionRepo, tmp_path: Path, name: str) -> None:
    folder = interop_dir()
    if folder is None or not (folder / name).is_file():
        pytest.skip(f"shared/interop/pi-sessions/{name} is not beside this checkout")
    source = tmp_path / "in" / name.removesuffix(".xz")
    source.parent.mkdir()
    source.write_bytes(lzma.decompress((folder / name).read_bytes()))
    original = read_session_file(str(source))  # v1: ids generated on reading
    meta = pg.import_jsonl(source)
    out = Path(pg.export_jsonl(meta.id, tmp_path / "out"))
    exported = read_session_file(str(out))
    assert exported.migrated_from is None  # written as v3: pi reads it as it stands
    assert exported.header == original.header
    assert shape(exported.entries) == shape(original.entries)  # ids were made up on reading
    with JsonlSessionRepo(tmp_path / "out").open(out, read_only=True) as back:
        with pg.open(meta.id, read_only=True) as rows:
            assert back.context() == rows.context()
            assert len(back.context().messages) > 10
    # a second trip changes nothing: the exported file's bytes come back as they went
    again = PostgresSessionRepo(pg.url, schema=pg.schema + "_b")
    try:
        again.import_jsonl(out)
        second = Path(again.export_jsonl(meta.id, tmp_path / "second"))
        assert second.read_bytes() == out.read_bytes()
    finally:
        again._db().execute(f"DROP SCHEMA {again.schema} CASCADE")
        again.close()


def test_full_text_search(pg: PostgresSessionRepo) -> None:
    a = pg.create(cwd="/w")
    a.append_message(user("how do I rotate the database credentials?"))
    hit_entry = a.append_message(reply("Rotating credentials: create a new role, then switch."))
    a.close()
    b = pg.create(cwd="/w")
    b.append_message(user("unrelated question about parsing"))
    b.close()
    hits = pg.search("rotate credentials")
    assert {h.session_id for h in hits} == {a.id}
    assert hit_entry.id in {h.entry_id for h in hits}
    assert all("[" in h.snippet and "]" in h.snippet for h in hits)
    assert {h.role for h in hits} == {"user", "assistant"}
    assert pg.search('"parsing" -rotate')[0].session_id == b.id
    assert pg.search("nothing-like-this-anywhere") == []
    assert pg.search('unbalanced "quote') == []  # any text is a valid query


def test_cli_import_and_export(pg: PostgresSessionRepo, pg_dsn: str, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["--url", pg_dsn, "--schema", pg.schema]
    done = runner.invoke(cli, ["sessions", "import", *base, str(PI_FILE.parent.parent)])
    assert done.exit_code == 0, done.output
    assert PI_FILE.stem.split("_", 1)[1] in done.output
    out = tmp_path / "exported"
    done = runner.invoke(cli, ["sessions", "export", *base, "--to", str(out)])
    assert done.exit_code == 0, done.output
    (written,) = out.rglob("*.jsonl")
    assert written.read_bytes() == PI_FILE.read_bytes()
    again = runner.invoke(cli, ["sessions", "import", *base, str(PI_FILE)])
    assert again.exit_code == 1 and "already in" in again.output
    assert "harnessc_test:" not in again.output.replace("harnessc_test:***", "")


def test_bad_url_is_a_clear_message() -> None:
    repo = PostgresSessionRepo("postgresql://u:secret@127.0.0.1:1/none")
    with pytest.raises(SessionError, match="cannot connect to PostgreSQL") as err:
        repo.list()
    assert "secret" not in str(err.value)

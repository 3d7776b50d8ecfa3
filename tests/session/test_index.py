"""The FTS5 session index: freshness, incremental refresh, deletes, search, errors."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from harnessc.runtime.core.messages import AssistantMessage, TextContent, ThinkingContent
from harnessc.runtime.session import (
    JsonlSessionRepo,
    SearchQueryError,
    SessionIndex,
    literal_query,
)
from harnessc.runtime.session.index_support import (
    CHUNK_CHARS,
    MAX_CHUNKS,
    MAX_INDEXED_CHARS,
    index_chunks,
)

from ._helpers import call, reply, result, user


def test_fts5_is_available() -> None:
    sqlite3.connect(":memory:").execute("create virtual table t using fts5(x, tokenize='porter')")


def test_schema_and_wal(repo: JsonlSessionRepo) -> None:
    index = SessionIndex(repo.root)
    index.refresh()
    db = sqlite3.connect(repo.root / ".index.sqlite")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    files = [row[1] for row in db.execute("PRAGMA table_info(files)")]
    assert {"path", "mtime_ns", "size", "max_seq"} <= set(files)
    sql = db.execute("SELECT sql FROM sqlite_master WHERE name='messages'").fetchone()[0]
    assert "fts5" in sql and "porter" in sql
    index.close()


def test_text_tool_calls_and_tool_results_are_indexed(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    u = s.append_message(user("please refactor the parser module"))
    c = s.append_message(call("c1", path="parser.py", pattern="needleinargs"))
    r = s.append_message(result("c1", "def parse(): pass  # toolresultonly"))
    a = s.append_message(
        AssistantMessage(
            content=[
                ThinkingContent("secretthinking words"),
                TextContent("The parser is refactored."),
            ]
        )
    )
    s.append_custom("state", {"text": "customonly"})
    s.append_custom_message("note", "custommessageonly")
    s.close()
    index = SessionIndex(repo.root)
    stats = index.refresh()
    assert stats.files_indexed == 1 and stats.messages_added == 4
    hits = index.search("parser")
    assert {(h.entry_id, h.role) for h in hits} == {
        (u.id, "user"),
        (a.id, "assistant"),
        (c.id, "assistant"),  # the tool call's arguments: path parser.py
    }
    assert all(h.session_id == s.id and h.path == s.path for h in hits)
    assert [(h.entry_id, h.role) for h in index.search("toolresultonly")] == [(r.id, "toolResult")]
    assert [h.entry_id for h in index.search("needleinargs")] == [c.id]
    assert [h.entry_id for h in index.search("read")] == [c.id]  # the tool's name
    for word in ("secretthinking", "customonly", "custommessageonly"):
        assert index.search(word) == []
    # porter stemming: "refactoring" finds "refactor" and "refactored"
    assert len(index.search("refactoring")) == 2
    index.close()


def test_ranking_snippets_and_limits(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("sqlite sqlite sqlite is everywhere"))
    s.append_message(reply("a database like sqlite and also many other words around it here"))
    for i in range(60):
        s.append_message(user(f"note {i} about sqlite"))
    s.close()
    index = SessionIndex(repo.root)
    index.refresh()
    hits = index.search("sqlite")
    assert len(hits) == 10  # default limit
    assert hits[0].snippet.startswith("[sqlite] [sqlite] [sqlite]")
    assert all("[sqlite]" in h.snippet for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(index.search("sqlite", limit=500)) == 50
    assert len(index.search("sqlite", limit=0)) == 1
    assert index.search("   ") == []
    index.close()


def test_refresh_is_incremental_and_fresh(repo: JsonlSessionRepo) -> None:
    index = SessionIndex(repo.root)
    a = repo.create(cwd="/a")
    a.append_message(user("alpha first"))
    b = repo.create(cwd="/b")
    b.append_message(user("bravo first"))
    stats = index.refresh()
    assert (stats.files_indexed, stats.messages_added) == (2, 2)
    assert index.refresh().messages_added == 0  # nothing changed: nothing read
    untouched = index.refresh()
    assert untouched.files_indexed == untouched.files_appended == 0

    entry = a.append_message(reply("alpha second answer"))
    stats = index.refresh()
    assert (stats.files_indexed, stats.files_appended, stats.messages_added) == (0, 1, 1)
    hit = index.search("second")[0]
    assert hit.entry_id == entry.id and hit.session_id == a.id
    assert index.count() == 3

    # a torn tail is not indexed until it is complete
    assert a.path is not None
    with open(a.path, "ab") as f:
        f.write(b'{"type":"message","id":"0000aaaa","parentId":null,"timestamp":"t","message":{"ro')
    assert index.refresh().messages_added == 0
    a.close()
    reopened = repo.open(a.id)  # truncates the torn tail on its next append
    reopened.append_message(user("alpha third, after a crash"))
    reopened.close()
    stats = index.refresh()
    assert stats.files_appended == 1 and stats.messages_added == 1
    assert len(index.search("alpha")) == 3

    # deleted files disappear from the index
    b.close()
    repo.delete(b.id)
    stats = index.refresh()
    assert stats.files_removed == 1
    assert index.search("bravo") == []
    assert index.count() == 3
    index.close()


def test_rewritten_file_is_reindexed(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("original words here"))
    s.append_message(user("more original words"))
    s.close()
    index = SessionIndex(repo.root)
    index.refresh()
    assert s.path is not None
    lines = Path(s.path).read_bytes().splitlines(keepends=True)
    Path(s.path).write_bytes(lines[0] + lines[1].replace(b"original", b"replaced"))  # shrank
    stats = index.refresh()
    assert stats.files_indexed == 1
    assert index.search("original") == [] and len(index.search("replaced")) == 1
    # same size but different bytes before the resume point: also a full re-index
    data = Path(s.path).read_bytes()
    Path(s.path).write_bytes(data.replace(b"replaced", b"switched") + lines[2])
    stats = index.refresh()
    assert stats.files_indexed == 1 and stats.files_appended == 0
    assert index.search("replaced") == [] and len(index.search("switched")) == 1
    assert len(index.search("original")) == 1  # the line appended again
    index.close()


def test_query_syntax_errors_are_clear(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("foo-bar baz.qux"))
    s.close()
    index = SessionIndex(repo.root)
    index.refresh()
    for bad in ('"unterminated', "foo AND", "(foo", "foo-bar", "baz.qux", "nosuchcol:foo", "*"):
        with pytest.raises(SearchQueryError) as err:
            index.search(bad)
        message = str(err.value)
        assert message.startswith(f"invalid search query {bad!r}")
        assert "quotes" in message and "Traceback" not in message
    assert len(index.search('"foo-bar"')) == 1
    assert len(index.search(literal_query("foo-bar baz.qux"))) == 1
    index.close()


def test_concurrent_refresh_and_search(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    index = SessionIndex(repo.root)
    errors: list[BaseException] = []

    def searcher() -> None:
        try:
            for _ in range(50):
                index.search("entry")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=searcher)
    thread.start()
    for i in range(50):
        s.append_message(user(f"entry {i}"))
        index.refresh()
    thread.join()
    s.close()
    assert errors == []
    assert len(index.search("entry", limit=50)) == 50
    # a second index object (another process, in effect) sees the same data
    other = SessionIndex(repo.root)
    assert other.count() == 50
    other.close()
    index.close()


def test_damaged_index_is_rebuilt(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("phoenix"))
    s.close()
    repo.root.mkdir(parents=True, exist_ok=True)
    (repo.root / ".index.sqlite").write_bytes(b"this is not a database" * 100)
    index = SessionIndex(repo.root)
    index.refresh()
    assert len(index.search("phoenix")) == 1
    index.close()


def test_a_long_message_is_stored_in_short_pieces_and_found_once(repo: JsonlSessionRepo) -> None:
    """snippet() costs the square of the matches in the text it runs over (a 0.25 MB
    prompt of one repeated word took 25 s): no indexed row holds more than CHUNK_CHARS."""
    s = repo.create(cwd="/w")
    long = s.append_message(user("word " * 60_000 + "needleatend"))  # 300 KB
    short = s.append_message(user("one word here"))
    s.close()
    index = SessionIndex(repo.root)
    assert index.refresh().messages_added == 2
    db = sqlite3.connect(repo.root / ".index.sqlite")
    longest, rows = db.execute("SELECT max(length(body)), count(*) FROM messages").fetchone()
    db.close()
    assert longest <= CHUNK_CHARS
    assert 300_000 / CHUNK_CHARS < rows < 2 * 300_000 / CHUNK_CHARS
    assert index.count() == 2
    hits = index.search("word", limit=50)
    assert sorted(h.entry_id for h in hits) == sorted([long.id, short.id])  # once each
    assert all(len(h.snippet) < 300 and "[word]" in h.snippet for h in hits)
    assert [h.entry_id for h in index.search("needleatend")] == [long.id]
    index.close()


def test_every_phrase_of_a_long_text_lies_whole_in_a_piece() -> None:
    words = [f"w{i}" for i in range(40_000)]
    pieces, note = index_chunks(" ".join(words))
    assert note == "" and all(len(p) <= CHUNK_CHARS for p in pieces)
    seen = set()
    for piece in pieces:
        inside = piece.split()
        seen.update(zip(inside, inside[1:], inside[2:], strict=False))
    assert set(zip(words, words[1:], words[2:], strict=False)) <= seen
    # no spaces at all: cut anyway, and still every 50-character run lies whole in a piece
    blob = "".join(chr(97 + (i * 7) % 26) for i in range(30_000))
    pieces, _ = index_chunks(blob)
    assert all(len(p) <= CHUNK_CHARS for p in pieces)
    assert all(any(blob[i : i + 50] in p for p in pieces) for i in range(0, 30_000, 97))


def test_only_the_start_of_a_huge_message_is_indexed_with_a_note(repo: JsonlSessionRepo) -> None:
    s = repo.create(cwd="/w")
    s.append_message(user("start " + "filler " * (MAX_INDEXED_CHARS // 7) + "beyondthecut"))
    s.close()
    index = SessionIndex(repo.root)
    index.refresh()
    (hit,) = index.search("start")
    assert hit.snippet.startswith("[start] filler")
    assert hit.snippet.endswith("characters are searchable]")
    assert index.search("beyondthecut") == []
    db = sqlite3.connect(repo.root / ".index.sqlite")
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] <= MAX_CHUNKS
    db.close()
    index.close()

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime.extensions import (
    ExtensionConfigError,
    SessionIndexConfig,
    SessionIndexExtension,
)
from harnessc.runtime.providers.scripted import reply_text
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.session.index import SessionIndex
from tests.timing import scaled

from ._ext_support import errors


def _harness(make_harness: Any, tmp_path: Path, replies: list[Any], **config: Any) -> Any:
    repo = JsonlSessionRepo(tmp_path / "sessions")
    session = repo.create(cwd=str(tmp_path), metadata={"agent": "test"})
    ext = SessionIndexExtension(SessionIndexConfig(**config))
    harness, log = make_harness(replies, [], session=session, extensions=[ext])
    return harness, log, ext


def test_index_refreshed_after_a_run(make_harness: Any, tmp_path: Path) -> None:
    harness, log, ext = _harness(
        make_harness, tmp_path, [reply_text("the capybara answer"), reply_text("second")]
    )

    async def main() -> None:
        result = await harness.prompt("tell me about zeppelins")
        assert result.status == "done"
        await ext.wait_idle()
        assert ext.refreshes == 1
        await harness.prompt("and walruses")
        await ext.wait_idle()

    asyncio.run(main())
    assert ext.refreshes == 2
    assert errors(log) == []
    assert ext.root() == (tmp_path / "sessions").resolve()
    ext.close()
    with SessionIndex(tmp_path / "sessions") as index:
        hits = index.search("zeppelins")
        assert [h.session_id for h in hits] == [harness.session.id]
        assert index.search("capybara")[0].role == "assistant"
        assert index.search("walruses")


def test_refresh_runs_in_the_background(make_harness: Any, tmp_path: Path) -> None:
    harness, _, ext = _harness(make_harness, tmp_path, [reply_text("a"), reply_text("b")])
    gate, entered = threading.Event(), threading.Event()
    calls: list[int] = []

    class SlowIndex:
        def refresh(self) -> None:
            calls.append(1)
            entered.set()
            gate.wait(5)

        def close(self) -> None:
            pass

    ext.index = SlowIndex()

    async def main() -> None:
        await harness.prompt("one")  # returns although the refresh is still blocked
        assert ext.refreshes == 0
        assert await asyncio.to_thread(entered.wait, scaled(5))  # the refresh did start
        assert calls == [1]
        await harness.prompt("two")  # asks for one more refresh: not a second thread
        await asyncio.sleep(0.05)
        assert calls == [1]
        gate.set()
        await ext.wait_idle()

    asyncio.run(main())
    assert calls == [1, 1] and ext.refreshes == 2


def test_failure_is_an_event_not_fatal(make_harness: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("file")
    harness, log, ext = _harness(
        make_harness, tmp_path, [reply_text("a"), reply_text("b")], root=str(blocker)
    )

    async def main() -> None:
        assert (await harness.prompt("one")).status == "done"
        await ext.wait_idle()
        assert (await harness.prompt("two")).status == "done"
        await ext.wait_idle()

    asyncio.run(main())
    failures = [e for e in log if e.type == "error"]
    assert len(failures) == 2
    assert failures[0].source == "extension:session_index"
    assert "index refresh failed" in failures[0].message
    assert ext.refreshes == 0


def test_failed_runs_do_not_refresh(make_harness: Any, tmp_path: Path) -> None:
    harness, _, ext = _harness(make_harness, tmp_path, [])  # no reply left: error

    async def main() -> None:
        result = await harness.prompt("one")
        assert result.status == "error"
        await ext.wait_idle()

    asyncio.run(main())
    assert ext.refreshes == 0


def test_paused_runs_refresh_too(make_harness: Any, tmp_path: Path) -> None:
    """A run that pauses (review, budget, external tool) ends without agent_end."""
    from harnessc.runtime import PauseRequest

    harness, _, ext = _harness(make_harness, tmp_path, [reply_text("about narwhals")])
    harness.on("turn_end", lambda e: PauseRequest("needs_review"))

    async def main() -> None:
        result = await harness.prompt("tell me about narwhals")
        assert result.status == "paused"
        await ext.wait_idle()

    asyncio.run(main())
    assert ext.refreshes >= 1  # turn_end and agent_pause may each refresh, or coalesce
    ext.close()
    with SessionIndex(tmp_path / "sessions") as index:
        assert sorted(h.role for h in index.search("narwhals")) == ["assistant", "user"]


def test_an_in_memory_session_is_not_an_error(make_harness: Any) -> None:
    """--no-session with the index enabled: nothing to index, and nothing to say about it
    until /search is asked for."""
    ext = SessionIndexExtension()
    harness, log = make_harness([reply_text("a"), reply_text("b")], [], extensions=[ext])

    async def main() -> str | None:
        for text in ("one", "two"):
            await harness.prompt(text)
            await ext.wait_idle()
        return (await harness.prompt("/search one")).reply

    reply = asyncio.run(main())
    assert errors(log) == []
    assert reply == "no session index: the session has no file and no root is configured"


def test_search_command(make_harness: Any, tmp_path: Path) -> None:
    harness, _, ext = _harness(make_harness, tmp_path, [reply_text("about quasars")])

    async def main() -> list[str | None]:
        await harness.prompt("explain quasars please")
        return [
            (await harness.prompt("/search quasars")).reply,
            (await harness.prompt("/search nothingmatches")).reply,
            (await harness.prompt('/search "unterminated')).reply,
            (await harness.prompt("/search")).reply,
        ]

    found, nothing, bad, usage = asyncio.run(main())
    ext.close()
    assert found is not None and found.startswith("2 match(es) for 'quasars':")
    assert "[quasars]" in found
    assert nothing == "no matches for 'nothingmatches'"
    assert bad is not None and "invalid search query" in bad
    assert usage is not None and usage.startswith("usage: /search QUERY")


@pytest.mark.parametrize(
    ("config", "field"),
    [({"search_limit": 51}, "search_limit"), ({"root": " "}, "root"), ({"path": "x"}, "path")],
)
def test_config_errors(config: dict[str, Any], field: str) -> None:
    with pytest.raises(ExtensionConfigError) as info:
        SessionIndexExtension(config)
    assert info.value.field == field

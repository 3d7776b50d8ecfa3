"""A harness on a new session does its start's file work at its first use (issue 47):
built and never used it touches no file, and a thousand built at once do not stall the
event loop; what the start finds is reported as before, at the first run or at the
first question about the workspace. A session with entries is restored and checked
when its harness is built, as before."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.checkpoints.crash import ENV
from harnessc.runtime.checkpoints.layout import cut_short
from harnessc.runtime.core.checkpoint_settings import CheckpointSettings
from harnessc.runtime.providers.transport import HttpClientPool
from harnessc.runtime.session import Session, SessionHeader
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import openai_events

CHILD = Path(__file__).with_name("_crash_child.py")
DISCARDED = "was interrupted and discarded"


def _cut_short_checkpoint(tmp_path: Path) -> tuple[Path, CheckpointSettings]:
    """A workspace whose checkpoint was killed midway (a real SIGKILL), and the settings
    naming its store."""
    ws, store = tmp_path / "ws", tmp_path / "store"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    env = dict(os.environ, **{ENV: "take:scanned"})
    done = subprocess.run(
        [sys.executable, str(CHILD), "take", str(store), str(ws)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    settings = CheckpointSettings(folder=str(store))
    assert cut_short(settings, str(ws))
    return ws, settings


def _options(ws: Path, settings: CheckpointSettings, url: str, session: Session) -> Any:
    model = Model(id="m", api="openai-completions", base_url=f"{url}/v1")
    return AgentHarnessOptions(
        session=session,
        models={"m": model},
        model="m",
        checkpoints=settings,
        http_clients=HttpClientPool(max_concurrent=4),
    )


@pytest.fixture
def server() -> Any:
    with ProtocolServer() as running:
        running.set_handler(lambda request: ScriptedResponse.sse(openai_events(["ok"])))
        yield running


def test_a_harness_on_a_new_session_checks_its_workspace_at_its_first_run(
    tmp_path: Path, server: Any
) -> None:
    """Before: building the harness recovered the cut-short checkpoint at once (file
    work in the constructor, for each of a thousand harnesses built in one turn)."""
    ws, settings = _cut_short_checkpoint(tmp_path)
    session = Session(header=SessionHeader.new(cwd=str(ws)))
    harness = AgentHarness(_options(ws, settings, server.url, session))
    assert cut_short(settings, str(ws))  # built: nothing checked, nothing recovered yet

    async def run() -> Any:
        try:
            return await harness.prompt("hi")
        finally:
            await harness.close()

    result = asyncio.run(run())
    assert result.status == "done" and result.text == "ok"
    assert not cut_short(settings, str(ws))  # the first run's start recovered it
    notes = harness.checkpoint_notes()
    assert len(notes) == 1 and DISCARDED in notes[0]
    assert (ws / "a.txt").read_text() == "one\n"


def test_the_notes_asked_for_before_any_run_are_the_starts(tmp_path: Path, server: Any) -> None:
    """The command line asks for the notes right after building the harness: the check
    happens then, with the same notes as a check in the constructor gave."""
    ws, settings = _cut_short_checkpoint(tmp_path)
    harness = AgentHarness(_options(ws, settings, server.url, Session(SessionHeader.new(str(ws)))))
    notes = harness.checkpoint_notes()
    assert len(notes) == 1 and DISCARDED in notes[0] and "which is as it was" in notes[0]
    assert not cut_short(settings, str(ws))
    assert harness.checkpoint_notes() == []  # said once
    asyncio.run(harness.close())


def test_a_harness_on_a_session_with_entries_is_checked_when_built(
    tmp_path: Path, server: Any
) -> None:
    ws, settings = _cut_short_checkpoint(tmp_path)
    session = Session(header=SessionHeader.new(cwd=str(ws)))
    session.append_thinking_level_change("high")
    harness = AgentHarness(_options(ws, settings, server.url, session))
    assert not cut_short(settings, str(ws))  # recovered in the constructor, as before
    assert harness.thinking_level.value == "high"  # and the session restored
    notes = harness.checkpoint_notes()
    assert len(notes) == 1 and DISCARDED in notes[0]
    asyncio.run(harness.close())


def test_a_new_sessions_harness_used_before_its_first_run_is_as_restored(
    tmp_path: Path, server: Any
) -> None:
    """Nothing to restore in a new session: the harness reads as a restored one would."""
    ws = tmp_path / "ws"
    ws.mkdir()
    settings = CheckpointSettings(folder=str(tmp_path / "store"))
    harness = AgentHarness(_options(ws, settings, server.url, Session(SessionHeader.new(str(ws)))))
    assert harness.messages == [] and harness.run_state is None
    assert harness.state.value == "IDLE" and harness.paused_reason is None
    assert harness.model.id == "m"
    assert not (tmp_path / "store").exists()  # no file touched
    assert harness.rewind_points() == []

    async def twice() -> list[str]:
        try:
            return [(await harness.prompt(text)).text for text in ("one", "two")]
        finally:
            await harness.close()

    assert asyncio.run(twice()) == ["ok", "ok"]
    assert [m.role for m in harness.messages] == ["user", "assistant", "user", "assistant"]

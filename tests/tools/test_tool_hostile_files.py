"""Item 6: FIFOs and devices are refused, file tools time out and stop on abort, and a
pattern that backtracks catastrophically is bounded instead of freezing the agent."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import (
    create_edit_tool,
    create_find_tool,
    create_grep_tool,
    create_ls_tool,
    create_read_tool,
)
from tests.timing import scaled

from .conftest import text_of

EVIL = "(a|aa)+$"
LONG_AS = "a" * 5000 + "b\n"


@pytest.fixture
def fifo_ws(ws):
    root, ctx = ws
    os.mkfifo(root / "pipe")
    (root / "notes.txt").write_text("needle here\n")
    return root, ctx


def test_read_refuses_a_fifo(fifo_ws, run_tool, txt):
    _, ctx = fifo_ws
    started = time.monotonic()
    result = run_tool(create_read_tool(), {"path": "pipe"}, ctx)
    assert result.is_error and "FIFO" in txt(result)
    assert time.monotonic() - started < scaled(5)


def test_read_refuses_a_device(run_tool, txt):
    result = run_tool(create_read_tool(), {"path": "/dev/zero"}, {"allow_outside_workspace": True})
    assert result.is_error and "character device" in txt(result)


def test_grep_skips_a_fifo_in_a_folder(fifo_ws, run_tool, txt):
    _, ctx = fifo_ws
    result = run_tool(create_grep_tool(), {"pattern": "needle"}, ctx)
    assert not result.is_error and "notes.txt:1: needle here" in txt(result)
    direct = run_tool(create_grep_tool(), {"pattern": "needle", "path": "pipe"}, ctx)
    assert direct.is_error and "not a regular file" in txt(direct)


def test_find_and_ls_list_a_fifo_without_opening_it(fifo_ws, run_tool, txt):
    _, ctx = fifo_ws
    assert "pipe" in txt(run_tool(create_ls_tool(), {}, ctx))
    assert not run_tool(create_find_tool(), {"pattern": "*"}, ctx).is_error


def test_edit_refuses_a_fifo(fifo_ws, run_tool, txt):
    _, ctx = fifo_ws
    edits = [{"old_text": "a", "new_text": "b"}]
    result = run_tool(create_edit_tool(), {"path": "pipe", "edits": edits}, ctx)
    assert result.is_error and "not a regular file" in txt(result)


def test_catastrophic_pattern_is_stopped_with_a_reason(ws, run_tool, txt):
    root, ctx = ws
    (root / "as.txt").write_text(LONG_AS)
    started = time.monotonic()
    result = run_tool(create_grep_tool(), {"pattern": EVIL}, ctx)
    elapsed = time.monotonic() - started
    assert result.is_error and "backtracks catastrophically" in txt(result), txt(result)
    assert elapsed < scaled(10)


def test_grep_timeout(ws, run_tool, txt):
    root, ctx = ws
    (root / "as.txt").write_text(LONG_AS)
    result = run_tool(create_grep_tool(timeout_s=0.3), {"pattern": EVIL}, ctx)
    assert result.is_error and "timed out after 0.3 s" in txt(result)


def test_abort_stops_a_running_grep_and_the_loop_stays_live(ws):
    root, ctx = ws
    (root / "as.txt").write_text(LONG_AS * 20)
    signal = AbortSignal()

    async def go() -> tuple[str, float]:
        tool = create_grep_tool()
        task = asyncio.create_task(
            tool.execute("c", {"pattern": EVIL}, signal, lambda _: None, ctx)
        )
        await asyncio.sleep(0.2)  # the loop runs while the search does
        aborted_at = time.monotonic()
        signal.abort()
        result = await task
        return text_of(result), time.monotonic() - aborted_at

    text, latency = asyncio.run(go())
    assert text == "grep aborted"
    assert latency < scaled(1.0)


SCRIPT = """
import asyncio, sys
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import create_grep_tool
sig = AbortSignal()
async def main():
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, sig.abort)
    r = await create_grep_tool().execute(
        "c", {"pattern": sys.argv[1]}, sig, lambda _: None, {"workspace": sys.argv[2]})
    print(r.content[0].text, flush=True)
asyncio.run(main())
"""


def test_process_exits_promptly_after_an_abort(ws):
    root, _ = ws
    (root / "as.txt").write_text(LONG_AS * 50)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, EVIL, str(root)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "grep aborted"
    assert time.monotonic() - started < scaled(10)

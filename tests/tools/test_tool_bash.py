from __future__ import annotations

import asyncio
import os
import time
import tracemalloc
from pathlib import Path

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import create_bash_tool, create_read_tool
from harnessc.runtime.tools.truncate import MAX_BYTES
from tests.timing import scaled

IGNORES_TERM = 'trap "" TERM; sleep 100 & echo $!; wait'


def _dead(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _child_pid(output: str) -> int:
    return int(next(line for line in output.splitlines() if line.strip().isdigit()))


def test_runs_in_workspace_with_exit_code(ws, run_tool, txt):
    root, ctx = ws
    (root / "marker.txt").write_text("x")
    result = run_tool(create_bash_tool(), {"command": "ls; echo err >&2; pwd"}, ctx)
    assert not result.is_error
    out = txt(result)
    assert "marker.txt" in out and "err" in out and str(root) in out
    failed = run_tool(create_bash_tool(), {"command": "echo nope; exit 3"}, ctx)
    assert failed.is_error and failed.details["exit_code"] == 3
    assert "nope" in txt(failed) and "exited with code 3" in txt(failed)


def test_stdin_is_dev_null(ws, run_tool, txt):
    _, ctx = ws
    started = time.monotonic()
    result = run_tool(create_bash_tool(), {"command": "cat; echo done", "timeout": 1.5}, ctx)
    assert txt(result) == "done" and time.monotonic() - started < scaled(1.0)


def test_no_output(ws, run_tool, txt):
    _, ctx = ws
    assert txt(run_tool(create_bash_tool(), {"command": "true"}, ctx)) == "(no output)"


def test_timeout_kills_child_that_ignores_sigterm(ws, run_tool, txt):
    _, ctx = ws
    started = time.monotonic()
    result = run_tool(
        create_bash_tool(kill_grace_s=0.5), {"command": IGNORES_TERM, "timeout": 0.5}, ctx
    )
    elapsed = time.monotonic() - started
    assert elapsed < scaled(2.5)
    assert result.is_error and result.details["outcome"] == "timeout"
    assert "timed out after 0.5 s" in txt(result)
    pid = _child_pid(txt(result))
    assert _dead(pid)


def test_default_timeout_from_factory(ws, run_tool, txt):
    _, ctx = ws
    started = time.monotonic()
    result = run_tool(create_bash_tool(timeout_s=0.3), {"command": "sleep 5"}, ctx)
    assert result.details["outcome"] == "timeout" and time.monotonic() - started < scaled(2.5)


def test_abort_signal_kills_group(ws, run_tool, txt):
    _, ctx = ws
    signal = AbortSignal()

    async def go():
        tool = create_bash_tool(kill_grace_s=0.3)
        task = asyncio.create_task(
            tool.execute("c", {"command": IGNORES_TERM}, signal, lambda r: None, ctx)
        )
        await asyncio.sleep(0.3)
        signal.abort()
        return await task

    started = time.monotonic()
    result = asyncio.run(go())
    assert time.monotonic() - started < scaled(2.5)
    assert result.is_error and result.details["outcome"] == "aborted"
    assert _dead(_child_pid(txt(result)))


def test_cancellation_kills_group(ws, tmp_path):
    _, ctx = ws
    pid_file = tmp_path / "pid"
    command = f'trap "" TERM; sleep 100 & echo $! > {pid_file}; wait'

    async def go():
        tool = create_bash_tool(kill_grace_s=0.3)
        task = asyncio.create_task(
            tool.execute("c", {"command": command}, AbortSignal(), lambda r: None, ctx)
        )
        for _ in range(100):
            await asyncio.sleep(0.02)
            if pid_file.exists() and pid_file.read_text().strip():
                break
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    started = time.monotonic()
    assert asyncio.run(go())
    assert time.monotonic() - started < scaled(2.5)
    assert _dead(int(pid_file.read_text()))


def test_already_aborted_does_not_run(ws, run_tool, tmp_path):
    _, ctx = ws
    signal = AbortSignal()
    signal.abort()
    flag = tmp_path / "ran"
    result = run_tool(create_bash_tool(), {"command": f"touch {flag}"}, ctx, signal)
    assert result.is_error and not flag.exists()


def test_huge_output_keeps_tail_and_saves_full_file(ws, run_tool, txt):
    _, ctx = ws
    tracemalloc.start()
    try:
        result = run_tool(create_bash_tool(), {"command": "seq 1 3000000"}, ctx)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    text = txt(result)
    assert not result.is_error
    assert text.split("\n\n[Output truncated")[0].endswith("2999999\n3000000")
    assert "showing the last 2000 of 3000000 lines" in text
    full = Path(result.details["full_output_path"])
    assert str(full) in text
    expected = sum(len(str(i)) + 1 for i in range(1, 3000001))
    assert full.stat().st_size == expected == result.details["total_bytes"]
    with full.open() as fh:
        assert fh.readline() == "1\n"
    assert len(text.encode()) < MAX_BYTES + 1024
    assert peak < 4 * 1024 * 1024  # output is ~21 MB; memory stays bounded
    # the saved file is readable from a confined workspace (the notice sends the model there)
    page = run_tool(create_read_tool(), {"path": str(full), "offset": 1000, "limit": 2}, ctx)
    assert txt(page).startswith("  1000\t1000\n  1001\t1001"), txt(page)
    other = run_tool(create_read_tool(), {"path": str(full.parent / "other.log")}, ctx)
    assert other.is_error and "outside the workspace" in txt(other)
    full.unlink()


def test_long_lines_are_byte_capped(ws, run_tool, txt):
    _, ctx = ws
    result = run_tool(
        create_bash_tool(), {"command": "head -c 300000 /dev/zero | tr '\\0' 'a'"}, ctx
    )
    text = txt(result)
    assert len(text.encode()) < MAX_BYTES + 1024
    assert Path(result.details["full_output_path"]).stat().st_size == 300000
    Path(result.details["full_output_path"]).unlink()


def test_background_child_holding_the_pipe_does_not_block(ws, run_tool, txt):
    _, ctx = ws
    started = time.monotonic()
    result = run_tool(create_bash_tool(), {"command": "sleep 3 & echo started"}, ctx)
    assert txt(result) == "started"
    assert time.monotonic() - started < scaled(1.5)


def test_streams_updates(ws, run_tool):
    _, ctx = ws
    updates: list = []
    run_tool(
        create_bash_tool(),
        {"command": "for i in 1 2 3 4; do echo $i; sleep 0.15; done"},
        ctx,
        None,
        updates,
    )
    assert updates and updates[0].details == {"partial": True}


def test_bad_arguments(ws, run_tool):
    _, ctx = ws
    tool = create_bash_tool()
    assert run_tool(tool, {"command": "  "}, ctx).is_error
    assert run_tool(tool, {"command": "true", "timeout": -1}, ctx).is_error


def test_context_env_and_cwd(tmp_path, run_tool, txt):
    result = run_tool(
        create_bash_tool(),
        {"command": "echo $GREETING; pwd"},
        {"cwd": str(tmp_path), "env": {"GREETING": "hi"}},
    )
    assert txt(result).splitlines() == ["hi", os.path.realpath(tmp_path)]


def test_the_loop_leaves_bash_its_own_timeout() -> None:
    """A spec's bash timeout_s past the loop's default (180 s) is not cut by the loop."""
    from harnessc.runtime.tools import create_bash_tool

    assert create_bash_tool(timeout_s=600).timeout_s == 606.0
    assert create_bash_tool().timeout_s is None  # the harness's tool_timeout_s

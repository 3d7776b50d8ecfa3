"""Item 14: bash's full-output logs live only as long as the agent, under a size cap,
and leftovers of killed agents are cleaned up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from harnessc.runtime.tools import create_bash_tool, create_read_tool
from harnessc.runtime.tools.bash import OutputSink
from harnessc.runtime.tools.outputlog import OutputLogs

ROOT = str(Path(__file__).resolve().parents[2])

AGENT = """
import asyncio, os, sys
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import create_bash_tool
async def main():
    r = await create_bash_tool().execute(
        "c", {"command": "seq 1 200000"}, AbortSignal(), lambda _: None, {"workspace": sys.argv[1]})
    print(r.details["full_output_path"], flush=True)
    assert os.path.getsize(r.details["full_output_path"]) > 1_000_000
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), 9)
asyncio.run(main())
"""


def _run(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, "-c", AGENT, str(tmp_path), mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_logs_are_deleted_when_the_agent_exits(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    proc = _run(tmp_path, "exit")
    assert proc.returncode == 0, proc.stderr
    log = Path(proc.stdout.strip())
    assert log.parent.parent == tmp_path / "tmp"
    assert not log.exists()
    assert list((tmp_path / "tmp").iterdir()) == []  # the folder went too


def test_leftovers_of_a_killed_agent_are_cleaned_on_next_use(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    killed = _run(tmp_path, "kill")
    assert killed.returncode == -signal.SIGKILL
    leftover = Path(killed.stdout.strip())
    assert leftover.exists()  # SIGKILL: nothing could clean up
    folder = leftover.parent
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    again = _run(tmp_path, "exit")
    assert again.returncode == 0, again.stderr
    assert not leftover.exists()
    assert not folder.exists()


def test_loose_logs_of_older_versions_are_swept_once_idle(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    idle, fresh = tmp / "harnessc-bash-1v05qk8f.log", tmp / "harnessc-bash-a_b.log"
    idle.write_text("old output")
    fresh.write_text("maybe still written")
    os.utime(idle, (1, 1))
    proc = _run(tmp_path, "exit")
    assert proc.returncode == 0, proc.stderr
    assert not idle.exists() and fresh.exists()


def test_each_log_and_all_logs_together_are_capped(tmp_path: Path) -> None:
    logs = OutputLogs(tmp_path / "logs", max_log_bytes=100_000, max_total_bytes=250_000)
    paths = []
    for _ in range(4):
        sink = OutputSink(logs=logs)
        for _ in range(30):
            sink.write(b"x" * 9_999 + b"\n")  # 300 KB of output
        sink.close()
        assert sink.total_bytes == 300_000 and sink.log_cut
        assert os.path.getsize(sink.full_path or "") == 100_000
        paths.append(Path(sink.full_path or ""))
    sizes = sum(p.stat().st_size for p in (tmp_path / "logs").iterdir())
    assert sizes <= 250_000
    assert not paths[0].exists() and paths[-1].exists()  # the oldest went first
    logs.cleanup()
    assert not (tmp_path / "logs").exists()


def test_the_notice_says_how_long_the_log_is_kept(ws, run_tool, txt) -> None:
    _, ctx = ws
    result = run_tool(create_bash_tool(), {"command": "seq 1 100000"}, ctx)
    path = result.details["full_output_path"]
    assert f"saved to {path} (kept while this agent runs)" in txt(result)
    page = run_tool(create_read_tool(), {"path": path, "limit": 1}, ctx)
    assert txt(page).startswith("     1\t1")
    os.unlink(path)


def test_a_log_folder_another_agents_exit_removed_is_made_again(tmp_path: Path) -> None:
    """Two agents share the folder; the one exiting removes it when it is empty, and the
    other, which had made it first, still gets its full-output logs."""
    root = tmp_path / "logs"
    staying, leaving = OutputLogs(root), OutputLogs(root)
    assert staying.folder() == root  # made and remembered before the other agent ran
    fd, path = leaving.create()
    os.close(fd)
    leaving.closed(path)
    leaving.cleanup()  # the other agent exits: its log goes, then the empty folder
    assert not root.exists()
    fd, path = staying.create()
    os.close(fd)
    staying.closed(path)
    assert Path(path).parent == root and Path(path).exists()
    staying.cleanup()
    assert not root.exists()

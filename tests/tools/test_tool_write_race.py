"""Item 9: a process flipping a folder to a symlink never makes a write escape.

A racer process renames ``ws/d`` away, puts a symlink to a folder outside the
workspace in its place, then restores it, as fast as it can, while the write tool
writes 3,000 files into ``d/``. Every call returns a result (no exception), and no
file lands outside the workspace.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.tools import create_edit_tool, create_write_tool

WRITES = 3000

RACER = r"""
import os, sys
ws, outside, stop = sys.argv[1:4]
d = os.path.join(ws, "d")
n = 0
print("ready", flush=True)
while not os.path.exists(stop):
    n += 1
    old = os.path.join(ws, f"old{n}")
    try:
        os.rename(d, old)
    except OSError:
        continue
    try:
        os.symlink(outside, d)
    except OSError:
        pass
    try:
        if os.path.islink(d):
            os.unlink(d)
        os.rename(old, d)
    except OSError:
        pass
print(n, flush=True)
"""


async def _write_all(ws: Path) -> tuple[int, int, list[str]]:
    write = create_write_tool()
    edit = create_edit_tool()
    context = {"workspace": str(ws)}
    signal = AbortSignal()
    ok = refused = 0
    texts: list[str] = []
    for i in range(WRITES):
        if i % 10 == 9:  # some edits too: they read and write through the folder
            result = await edit.execute(
                "c",
                {"path": f"d/f{i - 1}.txt", "edits": [{"old_text": "data", "new_text": "DATA"}]},
                signal,
                lambda _: None,
                context,
            )
        else:
            result = await write.execute(
                "c",
                {"path": f"d/f{i}.txt", "content": f"data {i}\n"},
                signal,
                lambda _: None,
                context,
            )
        if result.is_error:
            refused += 1
            texts.append(result.content[0].text)  # type: ignore[union-attr]
        else:
            ok += 1
    return ok, refused, texts


def test_racing_folder_swap_never_escapes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    stop = tmp_path / "stop"
    racer = subprocess.Popen(
        [sys.executable, "-c", RACER, str(ws), str(outside), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert racer.stdout is not None and racer.stdout.readline().strip() == "ready"
        ok, refused, texts = asyncio.run(_write_all(ws))
    finally:
        stop.touch()
        out, _ = racer.communicate(timeout=30)
    swaps = int(out.strip())
    escaped = sorted(p.name for p in outside.iterdir())
    assert escaped == [], f"{len(escaped)} of {WRITES} writes escaped: {escaped[:5]}"
    assert ok + refused == WRITES
    assert swaps > 100, "the racer did not race"
    assert ok > 0
    print(f"race: {ok} written, {refused} refused, {len(escaped)} escaped, {swaps} swaps")
    for text in texts:  # refusals are readable, never a traceback
        assert "Traceback" not in text and text.startswith(
            ("Cannot", "File not found", "No ", "path ")
        ), text

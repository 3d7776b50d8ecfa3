"""File-tool costs: grep with the regex package (time-limited) against the stdlib re, the
write tool's no-follow descriptor walk, and tool-argument validation (fastjsonschema
against the built-in subset checker), plus the import cost of both libraries.

    python benchmarks/tools.py [--mb 20] [--writes 2000] [--validations 20000]

Prints figures (with the load average); asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harnessc.runtime.core.signal import AbortSignal  # noqa: E402
from harnessc.runtime.tools import create_grep_tool, create_write_tool  # noqa: E402
from harnessc.runtime.tools.validation import _check, validate_arguments  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "pattern": "^[^\\0]+$"},
        "offset": {"type": "integer", "minimum": 1},
        "limit": {"type": "integer", "exclusiveMinimum": 0},
        "mode": {"oneOf": [{"const": "fast"}, {"const": "slow"}]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def _import_ms(module: str) -> float:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    last = [line for line in out.splitlines() if line.rstrip().endswith(f"| {module}")][-1]
    return int(last.split("|")[1]) / 1000


def _call(tool, params, ctx):
    return asyncio.run(tool.execute("b", params, AbortSignal(), lambda _: None, ctx))


def bench_grep(root: Path, mb: int) -> None:
    line = "the quick brown fox jumps over the lazy dog 0123456789 " * 2 + "\n"
    count = mb * 1024 * 1024 // len(line)
    for i in range(20):
        (root / f"f{i}.txt").write_text(line * (count // 20))
    (root / "f7.txt").open("a").write("needle_42 here\n")
    ctx = {"workspace": str(root)}
    grep = create_grep_tool()
    for label, params in (
        ("regex  ", {"pattern": r"needle_\d+"}),
        ("literal", {"pattern": "needle_42", "literal": True}),
    ):
        started = time.perf_counter()
        result = _call(grep, params, ctx)
        seconds = time.perf_counter() - started
        assert "needle_42" in result.content[0].text
        print(f"grep {label} over {mb} MB: {seconds:.2f} s ({mb / seconds:.0f} MB/s)")
    stdlib = re.compile(r"needle_\d+")
    started = time.perf_counter()
    for path in sorted(root.glob("f*.txt")):
        with path.open(encoding="utf-8", errors="replace") as fh:
            for text in fh:
                stdlib.search(text)
    seconds = time.perf_counter() - started
    print(f"bare stdlib re loop, same files (no caps, no timeout): {seconds:.2f} s")


def bench_writes(root: Path, writes: int) -> None:
    ctx = {"workspace": str(root)}
    write = create_write_tool()

    async def run() -> float:
        started = time.perf_counter()
        for i in range(writes):
            await write.execute(
                "b", {"path": f"a/b/c/f{i}.txt", "content": "x\n"}, AbortSignal(), print, ctx
            )
        return time.perf_counter() - started

    seconds = asyncio.run(run())
    print(f"write tool, 3 folders deep: {seconds / writes * 1e6:.0f} us per write (fsync included)")


def bench_validation(count: int) -> None:
    args = {"path": "src/x.py", "offset": "10", "limit": 5, "mode": "fast"}
    validate_arguments(args, SCHEMA)  # compile once
    started = time.perf_counter()
    for _ in range(count):
        validate_arguments(args, SCHEMA)
    seconds = time.perf_counter() - started
    print(f"validate_arguments (coercion + fastjsonschema): {seconds / count * 1e6:.1f} us a call")
    started = time.perf_counter()
    for _ in range(count):
        _check(args, SCHEMA, "", [])
    seconds = time.perf_counter() - started
    print(f"built-in subset checker alone:                 {seconds / count * 1e6:.1f} us a call")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--validations", type=int, default=20000)
    opts = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for module in ("regex", "fastjsonschema", "jsonschema"):
        try:
            print(f"import {module}: {_import_ms(module):.1f} ms")
        except (subprocess.CalledProcessError, IndexError):
            print(f"import {module}: not installed")
    folder = Path(tempfile.mkdtemp(prefix="harnessc-bench-tools-"))
    try:
        (folder / "grep").mkdir()
        (folder / "write").mkdir()
        bench_grep(folder / "grep", opts.mb)
        bench_writes(folder / "write", opts.writes)
        bench_validation(opts.validations)
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()

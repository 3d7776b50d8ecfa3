"""Compile throughput: 200 specs through load -> validate -> check -> render, and the wall
time of ``harnessc build --check`` on agents/ (a fresh process, start-up included).

    python benchmarks/compile.py [--specs 200] [--rounds 5]

Target (issue 7): 200 specs in under 2 s. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _specs(count: int) -> list[tuple[bytes, Path]]:
    """``count`` distinct specs: the examples in agents/, renamed, beside the originals."""
    examples = sorted((REPO / "agents").glob("*.yaml"))
    out = []
    for i in range(count):
        source = examples[i % len(examples)]
        text = source.read_text(encoding="utf-8")
        name = f"{source.stem}-bench-{i}"
        text = text.replace(f"\nname: {source.stem}\n", f"\nname: {name}\n", 1)
        out.append((text.encode(), source.parent / f"{name}.yaml"))
    return out


def _round(specs: list[tuple[bytes, Path]], out_dir: Path) -> tuple[float, float]:
    from harnessc.compiler import compile
    from harnessc.spec import parse_spec

    start = time.perf_counter()
    loaded = [parse_spec(raw, path) for raw, path in specs]
    validated = time.perf_counter()
    assert all(item.ok for item in loaded), [d.format() for d in loaded[0].diagnostics]
    outputs = compile(loaded, out_dir)
    done = time.perf_counter()
    assert len(outputs) == len(specs)
    return validated - start, done - validated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    import harnessc.compiler  # noqa: F401  (pydantic models, Jinja environment)
    import harnessc.spec  # noqa: F401

    imported = time.perf_counter() - start
    specs = _specs(args.specs)
    out_dir = REPO / "generated"
    times = [_round(specs, out_dir) for _ in range(args.rounds)]
    cold_load, cold_render = times[0]
    totals = [a + b for a, b in times[1:]] or [cold_load + cold_render]
    best = min(totals)
    print(f"import harnessc.spec + compiler: {imported * 1000:.0f} ms")
    print(
        f"first round ({args.specs} specs): {(cold_load + cold_render) * 1000:.0f} ms "
        f"(load+validate+check {cold_load * 1000:.0f} ms, render {cold_render * 1000:.0f} ms)"
    )
    print(
        f"warm rounds: best {best * 1000:.0f} ms, median {statistics.median(totals) * 1000:.0f} ms"
        f" -> {args.specs / best:.0f} specs/s (target: {args.specs} specs < 2 s)"
    )
    load_share = statistics.median(a for a, _ in times[1:] or times)
    render_share = statistics.median(b for _, b in times[1:] or times)
    print(
        f"  per spec: load+validate+check {load_share / args.specs * 1e6:.0f} us, "
        f"render {render_share / args.specs * 1e6:.0f} us"
    )

    exe = shutil.which("harnessc")
    command = [exe] if exe else [sys.executable, "-m", "harnessc.cli"]
    walls = []
    for _ in range(3):
        begin = time.perf_counter()
        proc = subprocess.run(
            [*command, "build", "--check"],
            cwd=REPO,
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        walls.append(time.perf_counter() - begin)
    status = "current" if proc.returncode == 0 else f"exit {proc.returncode}"
    print(
        f"harnessc build --check on agents/ ({status}): best {min(walls) * 1000:.0f} ms, "
        f"median {statistics.median(walls) * 1000:.0f} ms (fresh process)"
    )


if __name__ == "__main__":
    main()

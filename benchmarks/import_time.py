"""`import harnessc.runtime` against the standard-library floor of the modules it loads.

    python benchmarks/import_time.py [--runs 20] [--tree NAME=PATH ...]

The floor is a fresh interpreter importing, in one statement, every standard-library
module that ``import harnessc.runtime`` leaves in ``sys.modules`` (so it pays for exactly
what the runtime needs from the standard library and nothing of harnessc's own). Both run
alternately, with bytecode caching on, from ``/`` with ``PYTHONPATH`` set to the tree
under test (this work tree, and each ``--tree``); each figure is the median over
``--runs`` of the whole process's wall time and CPU time (user + system, which other
load on the machine disturbs far less) minus those of a bare ``python -c pass``. With a
``--tree``, this tree's import is also given as a ratio to that tree's (issue 42: no
worse than 5c361bc, the tree before the records became msgspec Structs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = (
    "import sys; before = set(sys.modules); import harnessc.runtime; "
    "std = sys.stdlib_module_names; "
    "print(' '.join(sorted(m for m in set(sys.modules) - before "
    "if m.split('.')[0] in std and not m.split('.')[-1].startswith('_'))))"
)


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _time(command: list[str], env: dict[str, str], cwd: str) -> tuple[float, float]:
    """(wall ms, CPU ms) of one process."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH")
    options = parser.parse_args()
    trees = [("this tree", ROOT)] + [
        (name, Path(path).resolve()) for name, _, path in (t.partition("=") for t in options.tree)
    ]
    cwd = "/"  # never the work tree: python -c puts the current directory on sys.path
    py = sys.executable
    rows: dict[str, list[float]] = {"bare interpreter": []}
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "bare interpreter": ([py, "-c", "pass"], _env(ROOT))
    }
    for name, tree in trees:
        env = _env(tree)
        probe = subprocess.run(
            [py, "-c", PROBE], env=env, cwd=cwd, check=True, capture_output=True, text=True
        )
        modules = probe.stdout.split()
        floor = f"floor of {name}"
        commands[floor] = ([py, "-c", "import " + ", ".join(modules)], env)
        commands[f"harnessc.runtime ({name})"] = ([py, "-c", "import harnessc.runtime"], env)
    rows: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    for command, env in commands.values():  # warm the bytecode caches
        _time(command, env, cwd)
    for _ in range(options.runs):
        for label, (command, env) in commands.items():
            rows[label].append(_time(command, env, cwd))
    wall = {label: statistics.median(w for w, _ in values) for label, values in rows.items()}
    cpu = {label: statistics.median(c for _, c in values) for label, values in rows.items()}
    bare_wall, bare_cpu = wall.pop("bare interpreter"), cpu.pop("bare interpreter")
    print(
        f"import time over a bare interpreter (wall {bare_wall:.1f} ms, CPU {bare_cpu:.1f} ms), "
        f"medians of {options.runs} runs"
    )
    print(f"  {'':<40} {'wall ms':>8} {'CPU ms':>8}")
    for label in wall:
        print(f"  {label:<40} {wall[label] - bare_wall:8.1f} {cpu[label] - bare_cpu:8.1f}")
    for name, _ in trees:
        mine, floor = f"harnessc.runtime ({name})", f"floor of {name}"
        by_wall = (wall[mine] - bare_wall) / (wall[floor] - bare_wall)
        by_cpu = (cpu[mine] - bare_cpu) / (cpu[floor] - bare_cpu)
        verdict = "meets" if by_cpu <= 2 else "misses"
        print(
            f"  {name}: runtime / floor {by_wall:.2f}x by wall time, {by_cpu:.2f}x by CPU time "
            f"(target 2x: {verdict} it by CPU)"
        )
    mine_wall, mine_cpu = wall["harnessc.runtime (this tree)"], cpu["harnessc.runtime (this tree)"]
    for name, _ in trees[1:]:  # issue 42: no worse than the tree before the change
        other = f"harnessc.runtime ({name})"
        print(
            f"  this tree / {name}: {(mine_wall - bare_wall) / (wall[other] - bare_wall):.2f}x "
            f"by wall time, {(mine_cpu - bare_cpu) / (cpu[other] - bare_cpu):.2f}x by CPU time"
        )
    print(f"  load average now: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

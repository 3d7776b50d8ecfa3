"""Workspace checkpoints: the cost per tool batch and the data folder's growth.

Run: python benchmarks/checkpoints.py [--quick]

A tool batch that may change files costs two checkpoints (one before it, one after
it). Measured in one process, side by side:

- the floor: a bare stat walk in Python (``os.scandir`` + ``lstat`` of every entry);
- git plumbing doing the same job (``git add -A`` into a separate index and object
  folder, then ``write-tree``), when git is installed: what a shadow-git design costs;
- a checkpoint of an unchanged workspace (in a running agent, and in a fresh process
  whose stat cache comes from disk), one after a few changes (3 files edited, 1
  created, 1 deleted), and the first one (every file read and stored);

for a small workspace (60 files) and a 10,000-file one (200 folders, ~40 MB, plus a
``node_modules`` of 3,000 files that ``.gitignore`` leaves out). Then a 200-turn session
in the 10,000-file workspace (each turn edits 2 files, every fifth creates one, every
seventh deletes one): the store's size on disk after turns 1, 50, 100 and 200, and the
cost of planning and making a rewind 100 turns back.

The files are written and then left for 2.1 s before the first measurement, so the
stat cache trusts them (a file read within 2 s of its last change is read again by the
next checkpoint, as git re-reads racily clean entries); in the 200-turn session the
files a turn edits are read again by the next turn's first checkpoint for that reason
(an agent's model call between two batches usually takes longer than that).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from harnessc.runtime.checkpoints import CheckpointStore, Workspace

GITIGNORE = "*.pyc\n__pycache__/\nbuild/\n*.log\n.venv/\nnode_modules/\ndist/\n*.egg-info/\n"


def make_workspace(root: Path, folders: int, per_folder: int, ignored: int) -> int:
    rng = random.Random(7)
    count = 0
    for d in range(folders):
        folder = root / f"pkg{d:03d}" / f"sub{d % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(per_folder):
            body = "".join(
                f"value_{d}_{f}_{i} = {rng.random()!r}\n" for i in range(rng.randint(5, 120))
            )
            (folder / f"mod{f:03d}.py").write_text(body)
            count += 1
    if ignored:
        for i in range(ignored):
            folder = root / "node_modules" / f"dep{i // 100:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"index{i % 100}.js").write_text(f"module.exports = {i};\n" * 20)
    (root / ".gitignore").write_text(GITIGNORE)
    return count


def stat_walk(root: str) -> int:
    """The floor: list every folder and lstat every entry (no ignore rules, no hashing)."""
    stack, seen = [root], 0
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name in (".git", "node_modules"):
                    continue
                entry.stat(follow_symlinks=False)
                seen += 1
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return seen


def git_snapshot(root: str, git_dir: str) -> None:
    env = {
        **os.environ,
        "GIT_DIR": git_dir,
        "GIT_WORK_TREE": root,
        "GIT_INDEX_FILE": git_dir + ".index",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True, capture_output=True)
    subprocess.run(["git", "write-tree"], cwd=root, env=env, check=True, capture_output=True)


def median_ms(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall-clock and CPU milliseconds of ``run`` (CPU: this process and the
    children it waited for, so git's own time counts)."""
    walls, cpus = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), _cpu()
        run()
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((_cpu() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def few_changes(root: Path, turn: int) -> None:
    rng = random.Random(turn)
    files = sorted(root.glob("pkg*/sub*/mod*.py"))
    for path in rng.sample(files, 3):
        with open(path, "a") as fh:
            fh.write(f"# turn {turn}\n")
    (root / f"pkg000/sub0/new_{turn}.py").write_text(f"made = {turn}\n")
    gone = root / f"pkg000/sub0/new_{turn - 1}.py"
    if gone.exists():
        gone.unlink()


def bench_workspace(
    name: str, base: Path, folders: int, per_folder: int, ignored: int, repeat: int
) -> None:
    root = base / name
    root.mkdir()
    files = make_workspace(root, folders, per_folder, ignored)
    store = CheckpointStore(base / f"{name}-store")
    time.sleep(2.1)  # older than the racily-clean window: the stat cache trusts them
    print(f"\n## {name}: {files} files recorded" + (f", {ignored} ignored" if ignored else ""))

    workspace = Workspace(store, root)
    first = median_ms(workspace.take, 1)
    workspace.take()  # the stat cache now vouches for every file
    workspace.close()

    floor = median_ms(lambda: stat_walk(str(root)), repeat)
    unchanged = median_ms(workspace.take, repeat)

    def fresh_process() -> None:
        Workspace(store, root).take()

    fresh = median_ms(fresh_process, max(3, repeat // 3))
    turn = [1000]

    def changed() -> None:
        turn[0] += 1
        few_changes(root, turn[0])
        workspace.take()

    # each run changes 5 paths first (their writes are part of the time; small)
    with_changes = median_ms(changed, repeat)
    rows = [
        ("stat walk (the floor)", floor),
        ("checkpoint, unchanged", unchanged),
        ("checkpoint, unchanged, fresh process", fresh),
        ("checkpoint after 5 changes", with_changes),
        ("first checkpoint (all read)", first),
    ]
    if shutil.which("git"):
        git_dir = str(base / f"{name}-shadow.git")
        subprocess.run(["git", "init", "-q", "--bare", git_dir], check=True)
        git_snapshot(str(root), git_dir)
        rows.append(
            (
                "git add -A + write-tree, unchanged",
                median_ms(lambda: git_snapshot(str(root), git_dir), repeat),
            )
        )
    print(f"{'':40} {'wall ms':>9} {'CPU ms':>9} {'CPU x floor':>12}")
    for label, (wall, cpu) in rows:
        print(f"{label:40} {wall:9.2f} {cpu:9.2f} {cpu / max(floor[1], 1e-3):12.2f}")
    print(
        f"per tool batch (before + after), unchanged: {2 * unchanged[0]:.1f} ms wall, "
        f"{2 * unchanged[1]:.1f} ms CPU; with a few changes: "
        f"{unchanged[0] + with_changes[0]:.1f} ms wall, {unchanged[1] + with_changes[1]:.1f} ms CPU"
    )


def bench_session(base: Path, turns: int) -> None:
    root = base / "session"
    root.mkdir()
    files = make_workspace(root, 100, 100, 0)
    store = CheckpointStore(base / "session-store")
    time.sleep(2.1)
    workspace = Workspace(store, root)
    print(f"\n## a {turns}-turn session in a {files}-file workspace")
    print(f"{'after turn':>10} {'store MB':>9} {'objects':>8} {'batch ms':>9} {'CPU ms':>7}")
    checkpoints = []
    costs: list[float] = []
    cpu_costs: list[float] = []
    workspace_mb = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
    rng = random.Random(3)
    all_files = sorted(root.glob("pkg*/sub*/mod*.py"))
    for turn in range(1, turns + 1):
        started, cpu = time.perf_counter(), _cpu()
        before = workspace.take("before", session_id="bench")
        for path in rng.sample(all_files, 2):
            with open(path, "a") as fh:
                fh.write(f"edited_in_turn_{turn} = True\n")
        if turn % 5 == 0:
            (root / f"pkg001/sub1/made_{turn}.py").write_text(f"turn = {turn}\n" * 10)
        if turn % 7 == 0 and (gone := root / f"pkg001/sub1/made_{turn - 2}.py").exists():
            gone.unlink()
        workspace.take("after", session_id="bench")
        costs.append((time.perf_counter() - started) * 1000)
        cpu_costs.append((_cpu() - cpu) * 1000)
        checkpoints.append(before)
        if turn in (1, 50, 100, 200) or turn == turns:
            workspace.close()
            size = store.disk_usage() / 1e6
            objects = sum(1 for _ in store.objects.ids())
            wall = statistics.median(costs[-50:])
            cpu_ms = statistics.median(cpu_costs[-50:])
            print(f"{turn:>10} {size:9.2f} {objects:8d} {wall:9.1f} {cpu_ms:7.1f}")
    print(
        f"(the workspace itself: {workspace_mb:.1f} MB; batch: median of the last 50 turns, "
        "both checkpoints and the turn's own writes)"
    )
    target = checkpoints[len(checkpoints) // 2]
    started = time.perf_counter()
    plan = workspace.plan(target)
    planned = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    with workspace.restore(plan) as outcome:
        pass
    restored = (time.perf_counter() - started) * 1000
    print(
        f"rewind {turns - turns // 2} turns back: plan {planned:.1f} ms "
        f"({len(plan.changes)} changes), restore {restored:.1f} ms "
        f"({len(outcome.applied)} made, then a checkpoint of the result)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, 50 turns")
    args = parser.parse_args()
    repeat = 5 if args.quick else 15
    with tempfile.TemporaryDirectory(prefix="harnessc-bench-checkpoints-") as tmp:
        base = Path(tmp)
        bench_workspace("small", base, 6, 10, 0, repeat)
        bench_workspace("large", base, 100, 100, 3000, repeat)
        bench_session(base, 50 if args.quick else 200)


if __name__ == "__main__":
    main()

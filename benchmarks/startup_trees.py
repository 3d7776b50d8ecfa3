"""Start-up of generated agents from several copies of harnessc, side by side.

    python benchmarks/startup_trees.py [--runs 10] NAME=PATH [NAME=PATH ...]

Each PATH holds a ``harnessc/`` package (a work tree, or ``git archive main`` unpacked).
For each tree, whole processes run in alternation (the order reversed every other
round, so every tree sees the same machine):

- ``hello --help``: ``generated/hello.py --help`` (import and argument parsing only);
- ``hello one-shot``: ``generated/hello.py "hi"`` against a local OpenAI-compatible
  server (``harnessc.testing.ProtocolServer``), with its time to the first request;
- ``add N=1``: the peers benchmark's agent (``benchmarks/peers/add_agent.yaml``, built
  with ``harnessc build`` from the first tree) for one tool step and a final answer,
  against ``benchmarks/peers.py``'s scripted server: what that benchmark's "N=1 wall"
  and "peak RSS" measure.

Per case: medians of wall time, CPU time (user + system, much less disturbed by other
load than wall time) and peak RSS (``wait4``). Bytecode caching is on (a warm-up run
writes the caches). The agents run from ``/`` with ``PYTHONPATH`` set to the tree.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse, openai_events

ROOT = Path(__file__).resolve().parent.parent


def _peers_module() -> object:
    spec = importlib.util.spec_from_file_location("peers_bench", ROOT / "benchmarks" / "peers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["peers_bench"] = module
    spec.loader.exec_module(module)
    return module


def _run(command: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """(wall ms, CPU ms, peak RSS MiB, stdout) of one process; exits on failure."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(
            command, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = (time.perf_counter() - started) * 1000
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{' '.join(command)} failed:\n{err.read().decode(errors='replace')[-2000:]}")
        cpu = (usage.ru_utime + usage.ru_stime) * 1000
        return wall, cpu, usage.ru_maxrss / 1024, out.read().decode(errors="replace")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("trees", nargs="+", metavar="NAME=PATH")
    options = parser.parse_args()
    trees = [
        (name, str(Path(path).resolve()))
        for name, _, path in (t.partition("=") for t in options.trees)
    ]
    peers = _peers_module()
    python = sys.executable

    with tempfile.TemporaryDirectory() as tmp, ProtocolServer() as hello_server:
        arrivals: list[float] = []

        def answer(request: RecordedRequest) -> ScriptedResponse:
            arrivals.append(time.monotonic())
            return ScriptedResponse.sse(openai_events(["Hi", " there", "!"]))

        hello_server.set_handler(answer)
        built = subprocess.run(
            [
                python,
                "-c",
                "import sys; from harnessc.cli import main; sys.exit(main())",
                "build",
                str(ROOT / "benchmarks" / "peers" / "add_agent.yaml"),
                "-o",
                tmp,
            ],
            env=dict(os.environ, PYTHONPATH=trees[0][1]),
            capture_output=True,
            text=True,
        )
        if built.returncode != 0:
            sys.exit(f"harnessc build failed: {built.stderr.strip()}")
        add_agent = str(Path(tmp) / "add_agent.py")
        with peers.ScriptedServer() as add_server:  # type: ignore[attr-defined]
            cases: list[tuple[str, str, list[str], dict[str, str]]] = []
            for name, tree in trees:
                env = dict(
                    os.environ,
                    PYTHONPATH=tree,
                    HELLO_BASE_URL=f"{hello_server.url}/v1",
                    XDG_DATA_HOME=str(Path(tmp) / "data"),  # session files: not the user's
                )
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                hello = str(Path(tree) / "generated" / "hello.py")
                cases.append((name, "hello --help", [python, hello, "--help"], env))
                cases.append((name, "hello one-shot", [python, hello, "hi"], env))
                cases.append((name, "add N=1", [python, add_agent, peers.PROMPT], env))  # type: ignore[attr-defined]
            figures: dict[tuple[str, str], list[tuple[float, float, float, float]]] = {}

            def once(name: str, label: str, command: list[str], env: dict[str, str]) -> None:
                if label == "add N=1":
                    env = dict(
                        env,
                        BENCH_BASE_URL=add_server.base_url(1, uuid.uuid4().hex[:12]),
                        OPENAI_API_KEY="sk-bench-dummy",
                    )
                arrivals.clear()
                started = time.monotonic()
                wall, cpu, rss, out = _run(command, env)
                if label == "add N=1" and peers.final_text(1) not in out:  # type: ignore[attr-defined]
                    sys.exit(f"{name}: the add agent did not finish: {out[-500:]}")
                first = (
                    (arrivals[0] - started) * 1000 if label == "hello one-shot" else float("nan")
                )
                figures.setdefault((name, label), []).append((wall, cpu, rss, first))

            for case in cases:  # warm-up: bytecode caches, the page cache
                once(*case)
            figures.clear()
            for round_ in range(options.runs):
                for case in cases if round_ % 2 == 0 else cases[::-1]:
                    once(*case)

    print(f"medians of {options.runs} alternating runs; load average now {os.getloadavg()[0]:.2f}")
    print(
        f"{'tree':<10} {'case':<16} {'wall ms':>8} {'CPU ms':>8} {'RSS MiB':>8} {'1st request ms':>15}"
    )
    for (name, label), rows in figures.items():
        wall, cpu, rss, first = (statistics.median(row[i] for row in rows) for i in range(4))
        print(f"{name:<10} {label:<16} {wall:8.1f} {cpu:8.1f} {rss:8.1f} {first:15.1f}")
    base = trees[0][0]
    for name, _ in trees[1:]:
        for label in ("hello --help", "hello one-shot", "add N=1"):
            ratio = [
                statistics.median(r[i] for r in figures[(name, label)])
                / statistics.median(r[i] for r in figures[(base, label)])
                for i in range(3)
            ]
            print(
                f"{name} / {base}, {label}: wall {ratio[0]:.2f}x, CPU {ratio[1]:.2f}x, "
                f"RSS {ratio[2]:.2f}x"
            )


if __name__ == "__main__":
    main()

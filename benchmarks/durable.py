"""Durable runs: queue throughput with 1, 2 and 4 worker processes, the per-step overhead
of a durable run against the same run without ``durable:``, DBOS's own minimal step cost
in the same process, and the peak RSS of a worker.

Run: python benchmarks/durable.py [--runs 1000] [--steps 5] [--latency-ms 20] [--sqlite]
Needs PostgreSQL (HARNESSC_TEST_PG_DSN, or scripts/pg-test-up starts the machine's).
Targets: 4 workers >= 3.5x one worker; durable per-step overhead within 2x of DBOS's
minimal step cost. Prints figures, asserts nothing; wall times need an idle machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harnessc.testing import ProtocolServer, RecordedRequest, ScriptedResponse  # noqa: E402
from tests.durable.durakit import AGENT_SOURCE, scripted  # noqa: E402


def pg_dsn() -> str:
    dsn = os.environ.get("HARNESSC_TEST_PG_DSN")
    if dsn:
        return dsn
    out = subprocess.run([str(ROOT / "scripts" / "pg-test-up")], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"no PostgreSQL: {out.stderr.strip()}")
    for line in out.stdout.splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[1].startswith("HARNESSC_TEST_PG_DSN="):
            return words[1].split("=", 1)[1]
    raise SystemExit("scripts/pg-test-up printed no DSN")


def fresh_database(dsn: str) -> tuple[str, str]:
    import psycopg

    name = "bench_" + secrets.token_hex(4)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return dsn.rsplit("/", 1)[0] + "/" + name, name


def drop_database(dsn: str, name: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def throughput(
    workdir: Path, env: dict[str, str], url: str, workers: int, runs: int, steps: int
) -> tuple[float, list[float]]:
    """Seconds from the first enqueue to the last finished run, and each worker's peak RSS."""
    from dbos import DBOS, DBOSClient

    agent = workdir / "agent.py"
    DBOS.migrate(url)
    procs = [
        subprocess.Popen(
            [sys.executable, str(agent), "--worker", "--worker-id", f"b{n}", "--drain-s", "0"],
            env={**env, "DURABLE_URL": url, "DURABLE_LEASE_S": "600"},
            cwd=workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n in range(workers)
    ]
    client = DBOSClient(system_database_url=url, application_name="hx-dtest")
    try:
        time.sleep(3.0)  # workers up (DBOS imported, queue registered)
        start = time.perf_counter()
        for i in range(runs):
            client.enqueue(
                {"workflow_name": "harnessc_run", "queue_name": "dtest", "workflow_id": f"b-{i}"},
                {"prompt": f"steps {steps} b{i}", "cwd": str(workdir)},
            )
        while (
            len(client.list_workflows(status="SUCCESS", load_input=False, load_output=False)) < runs
        ):
            time.sleep(0.2)
        elapsed = time.perf_counter() - start
        rss = [peak_rss_mb(p.pid) for p in procs]
        return elapsed, rss
    finally:
        client.destroy()
        for p in procs:
            p.kill()
            p.wait()


def in_process(
    workdir: Path, env: dict[str, str], url: str, runs: int, steps: int
) -> dict[str, float]:
    """Sequential runs in this process: plain, durable, and DBOS's minimal step."""
    os.environ.update(env)
    sys.path.insert(0, str(workdir))
    import agent as module  # the agent module written below
    from dbos import DBOS

    from harnessc.runtime.agent import AgentHarness
    from harnessc.runtime.durable import DurableConfig
    from harnessc.runtime.durable.engine import launch_executor, shutdown
    from harnessc.runtime.durable.workflow import DurableAgent, durable_run
    from harnessc.runtime.providers import get_provider
    from harnessc.runtime.session import Session

    async def plain() -> None:
        for i in range(runs):
            options = module.build_options(session=Session(), cwd=str(workdir))
            options.provider = get_provider("openai-completions")  # as durable runs use it
            harness = AgentHarness(options)
            await harness.prompt(f"steps {steps} p{i}")

    t = time.perf_counter()
    asyncio.run(plain())
    plain_s = time.perf_counter() - t

    config = DurableConfig(database_url=url, queue="dtest")
    launch_executor(
        config,
        DurableAgent(module.build_options, "dtester", None, None),
        cwd=str(workdir),
        executor_id="bench-inproc",
        concurrency=1,
        listen=False,
    )

    @DBOS.step()
    def noop(i: int) -> int:
        return i

    @DBOS.workflow()
    def minimal(n: int) -> int:
        return sum(noop(i) for i in range(n))

    try:
        t = time.perf_counter()
        for i in range(runs):
            DBOS.start_workflow(
                durable_run, {"prompt": f"steps {steps} d{i}", "cwd": str(workdir)}
            ).get_result()
        durable_s = time.perf_counter() - t
        n = runs * (2 * steps + 1)
        t = time.perf_counter()
        DBOS.start_workflow(minimal, n).get_result()
        minimal_s = time.perf_counter() - t
    finally:
        shutdown(0)
    return {"plain_s": plain_s, "durable_s": durable_s, "minimal_step_s": minimal_s / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--sqlite", action="store_true", help="SQLite instead of PostgreSQL")
    args = parser.parse_args()
    dsn = None if args.sqlite else pg_dsn()
    latency = args.latency_ms / 1000

    def answer(request: RecordedRequest) -> ScriptedResponse:
        response = scripted(request)
        response.delay_s = latency
        return response

    print(f"load average: {os.getloadavg()}")
    with ProtocolServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.set_handler(answer)
        workdir = Path(tmp)
        (workdir / "agent.py").write_text(AGENT_SOURCE)
        env = {
            **os.environ,
            "TEST_BASE_URL": f"{server.url}/v1",
            "TEST_API_KEY": "sk-bench",
            "SIDE_EFFECTS": str(workdir / "side-effects.log"),
            "PYTHONPATH": str(ROOT),
            "DURABLE_CONCURRENCY": "8",
        }
        env.pop("AGENT_SESSIONS", None)  # sessions in memory: the queue is measured
        results: dict[int, float] = {}
        for workers in [int(w) for w in args.workers.split(",") if w]:
            if dsn is None:
                url, name = f"sqlite:///{workdir}/bench-{workers}.sqlite", ""
            else:
                url, name = fresh_database(dsn)
            try:
                elapsed, rss = throughput(workdir, env, url, workers, args.runs, args.steps)
            finally:
                if name:
                    drop_database(dsn or "", name)
            results[workers] = elapsed
            print(
                f"{workers} worker(s): {args.runs} runs x {args.steps} tool steps in {elapsed:.1f} s"
                f" = {args.runs / elapsed:.1f} runs/s; peak RSS per worker "
                + ", ".join(f"{r:.0f} MB" for r in rss)
            )
        if 1 in results:
            for workers, elapsed in results.items():
                if workers > 1:
                    print(
                        f"speed-up {workers} workers: {results[1] / elapsed:.2f}x (target for 4: >= 3.5x)"
                    )
        small = max(5, args.runs // 20)
        if dsn is None:
            url, name = f"sqlite:///{workdir}/bench-inproc.sqlite", ""
        else:
            url, name = fresh_database(dsn)
        try:
            figures: dict[str, Any] = in_process(workdir, env, url, small, args.steps)
        finally:
            if name:
                drop_database(dsn or "", name)
        steps = small * (2 * args.steps + 1)  # model calls + tool executions per run
        overhead = (figures["durable_s"] - figures["plain_s"]) / steps
        print(
            f"{small} sequential runs: plain {figures['plain_s']:.2f} s, durable "
            f"{figures['durable_s']:.2f} s; durable overhead {overhead * 1000:.2f} ms per step, "
            f"DBOS minimal step {figures['minimal_step_s'] * 1000:.2f} ms "
            f"(ratio {overhead / figures['minimal_step_s']:.2f}, target <= 2)"
        )


if __name__ == "__main__":
    main()

"""Many sessions in one process (issue 19): harnessc against openai-agents and pydantic-ai.

For each N (default 10, 100, 1000) and each framework, a fresh child process runs one
warm-up session, then N sessions at once on one event loop (``asyncio.gather``), each
making STEPS tool steps with one python tool (``add``, benchmarks/peers/add_tools.py)
and a final answer, against harnessc's local ProtocolServer (in this parent process)
answering every model call after a 50 ms latency. Per run it prints: wall time,
throughput (steps/s, a step being one model call with its tool batch: STEPS + 1 per
session), event-loop lag p99 (a ticker task measuring its own lateness every 5 ms),
peak RSS, memory per session (the rise of peak RSS over the warm-up, divided by N) and
CPU seconds per step (user + system of the child over the N-session phase).

Every framework's child follows the README's recipe for a service: ``gc.freeze()``
once set-up and the warm-up are done (``--no-gc-freeze`` to measure without it), and
the N sessions start at once (one ``asyncio.gather``, as the issue prescribes; with
``--stagger`` one per turn of the loop instead, README's advice for a service: this
also throttles how many run at once, most for the slower frameworks, so it is not the
comparison).

harnessc runs the module compiled from benchmarks/peers/add_agent.yaml:
``build_options(session=..., http_clients=...)`` with one shared ``HttpClientPool``
(``--max-concurrent``, default 32: against a 50 ms server about twice the requests in
flight that one core can serve, see README "Many sessions in one process"; openai's
client allows 1000 connections), one session file per session (``harnessc``) or
in-memory sessions (``harnessc-mem``). openai-agents runs
``Runner.run`` with one shared AsyncOpenAI client, pydantic-ai ``agent.run`` with one
shared OpenAIProvider; they live in benchmarks/.peers-venv (benchmarks/peers.py
installs them; see benchmarks/peers/README.md) and are skipped when missing.

``--default-path`` measures instead what a user gets without the recipe (issue 47):
each harnessc harness built from ``build_options(session=Session())`` (no shared pool:
its own connections), no ``gc.freeze()`` in any child, all sessions started by one
``gather``; the peers run as above without the freeze. It prints issue 47's targets
beside each N's figures: >= 5x the best peer's steps/s, <= 20 KiB per session, lag p99
<= 100 ms, peak RSS <= 70 MiB (the targets are for N = 1,000).

Usage: python benchmarks/concurrency.py [--n 10,100,1000] [--only harnessc,pydantic-ai]
       [--steps 5] [--latency-ms 50] [--max-concurrent 32] [--no-gc-freeze] [--stagger]
       [--default-path] [--profile FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
PEERS_DIR = ROOT / "peers"
PEERS_PYTHON = ROOT / ".peers-venv" / "bin" / "python"
FRAMEWORKS = ["harnessc", "harnessc-mem", "openai-agents", "pydantic-ai"]
# --default-path: the way a user writes it without the service recipe
DEFAULT_PATH = ["harnessc-default", "openai-agents", "pydantic-ai"]
TICK_S = 0.005
_TAG = re.compile(r"session-(\d+)\b")


# -- the server (parent) -------------------------------------------------------------


def _handler(steps: int, latency_s: float) -> Any:
    from harnessc.testing import ScriptedResponse
    from harnessc.testing.streams import openai_completion, openai_events, openai_tool_call_events

    def reply(request: Any) -> Any:
        body = request.json
        messages = body["messages"]
        user = next(m for m in messages if m["role"] == "user")
        match = _TAG.search(json.dumps(user["content"]))
        tag = match.group(1) if match else "x"
        done = sum(1 for m in messages if m["role"] == "tool")
        call = None
        if done < steps:
            call = (f"call_{tag}_{done}", "add", json.dumps({"a": done, "b": 1}))
        text = f"session-{tag} done FINAL"
        if body.get("stream"):
            events = openai_tool_call_events([call], pieces=1) if call else openai_events([text])
            return ScriptedResponse.sse(events, per_chunk=100, delay_s=latency_s)
        whole = openai_completion(body.get("model") or "bench-model", text, call)
        response = ScriptedResponse.json_body(200, whole)
        response.delay_s = latency_s
        return response

    return reply


# -- the child: one framework, N sessions -------------------------------------------------


class Ticker:
    """Sleeps TICK_S again and again and records how late each wake-up was."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + TICK_S
            await asyncio.sleep(TICK_S)
            self.lags.append(max(0.0, loop.time() - due))

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> tuple[float, float]:
        """The p99 and the largest lateness."""
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        lags = sorted(self.lags) or [0.0]
        return lags[min(len(lags) - 1, int(len(lags) * 0.99))], lags[-1]


def _harnessc_runner(url: str, workdir: Path, variant: str, max_concurrent: int) -> Any:
    import importlib.util

    os.environ["BENCH_BASE_URL"] = url
    sys.path.insert(0, str(PEERS_DIR))
    generated = sorted((PEERS_DIR / ".generated").glob("*.py"))
    spec = importlib.util.spec_from_file_location("add_agent_bench", generated[0])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from harnessc.runtime import AgentHarness
    from harnessc.runtime.providers.transport import HttpClientPool
    from harnessc.runtime.session import JsonlSessionRepo, Session

    repo = JsonlSessionRepo(workdir / "sessions")
    state: dict[str, Any] = {}

    async def run(prompt: str) -> str:
        if variant == "harnessc-default":  # no recipe: the module's defaults
            options = module.build_options(session=Session())
        else:
            clients = state.get("clients")
            if clients is None:
                clients = state["clients"] = HttpClientPool(max_concurrent=max_concurrent)
            memory = variant == "harnessc-mem"
            session = Session() if memory else repo.create(cwd=str(workdir))
            options = module.build_options(session=session, http_clients=clients)
        harness = AgentHarness(options)
        try:
            result = await harness.prompt(prompt)
            if result.status != "done":
                raise RuntimeError(f"run ended {result.status}: {result.reason}")
            return result.text
        finally:
            await harness.close()

    return run


def _openai_agents_runner(url: str) -> Any:
    sys.path.insert(0, str(PEERS_DIR))
    from add_tools import add  # type: ignore[import-not-found]
    from openai import AsyncOpenAI  # type: ignore[import-not-found]

    from agents import (  # type: ignore[import-not-found]
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=url, api_key="sk-bench-dummy")
    agent = Agent(
        name="adder",
        instructions="You add numbers with the add tool.",
        model=OpenAIChatCompletionsModel(model="bench-model", openai_client=client),
        tools=[function_tool(add)],
    )

    async def run(prompt: str) -> str:
        result = await Runner.run(agent, prompt, max_turns=1000)
        return str(result.final_output)

    return run


def _pydantic_ai_runner(url: str) -> Any:
    sys.path.insert(0, str(PEERS_DIR))
    from add_tools import add
    from pydantic_ai import Agent  # type: ignore[import-not-found]
    from pydantic_ai.models.openai import OpenAIChatModel  # type: ignore[import-not-found]
    from pydantic_ai.providers.openai import OpenAIProvider  # type: ignore[import-not-found]
    from pydantic_ai.usage import UsageLimits  # type: ignore[import-not-found]

    provider = OpenAIProvider(base_url=url, api_key="sk-bench-dummy")
    agent = Agent(
        OpenAIChatModel("bench-model", provider=provider),
        instructions="You add numbers with the add tool.",
        tools=[add],
    )

    async def run(prompt: str) -> str:
        result = await agent.run(prompt, usage_limits=UsageLimits(request_limit=None))
        return str(result.output)

    return run


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _child_main(args: argparse.Namespace) -> dict[str, Any]:
    name, n = args.framework, args.n
    with tempfile.TemporaryDirectory() as tmp:
        if name.startswith("harnessc"):
            run = _harnessc_runner(args.url, Path(tmp), name, args.max_concurrent)
        elif name == "openai-agents":
            run = _openai_agents_runner(args.url)
        else:
            run = _pydantic_ai_runner(args.url)
        warm = await run("Add for session-0 please.")
        if "FINAL" not in warm:
            raise RuntimeError(f"warm-up answered {warm!r}")
        if args.gc_freeze:  # the recipe: set-up's objects leave the collector's scans
            gc.collect()
            gc.freeze()
        base_peak = _peak_kib()
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        ticker = Ticker()
        ticker.start()
        cpu0, t0 = _cpu(), time.perf_counter()
        tasks = []
        for i in range(n):
            tasks.append(asyncio.ensure_future(run(f"Add for session-{i + 1} please.")))
            if args.stagger:  # one start per turn of the loop
                await asyncio.sleep(0)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        wall = time.perf_counter() - t0
        cpu = _cpu() - cpu0
        lag, lag_max = await ticker.stop()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)
        failures = [repr(r) for r in results if isinstance(r, BaseException)]
        wrong = [
            r
            for i, r in enumerate(results)
            if not isinstance(r, BaseException) and f"session-{i + 1} done" not in r
        ]
        return {
            "wall": wall,
            "cpu": cpu,
            "lag_p99": lag,
            "lag_max": lag_max,
            "peak_kib": _peak_kib(),
            "base_peak_kib": base_peak,
            "failures": failures[:3],
            "n_failed": len(failures),
            "n_wrong": len(wrong),
        }


def child(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--framework", required=True)
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--max-concurrent", type=int, default=32)
    parser.add_argument("--gc-freeze", type=int, default=1)
    parser.add_argument("--stagger", type=int, default=0)
    parser.add_argument("--profile", default="")
    args = parser.parse_args(argv)
    if args.framework.startswith("harnessc"):
        sys.path.insert(0, str(REPO))  # -I: this work tree's harnessc, not an installed one
    print(json.dumps(asyncio.run(_child_main(args))))
    return 0


# -- the parent ------------------------------------------------------------------------


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _compile_agent() -> bool:
    sys.path.insert(0, str(ROOT))
    from peers import harnessc_agent  # the same compiled module benchmarks/peers.py runs

    path, how = harnessc_agent()
    return "compiled" in how and path.parent.name == ".generated"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", default="10,100,1000", help="comma-separated session counts")
    parser.add_argument("--only", default="", help="comma-separated frameworks")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--max-concurrent", type=int, default=32, help="harnessc's request cap")
    parser.add_argument("--no-gc-freeze", action="store_true", help="skip gc.freeze()")
    parser.add_argument("--stagger", action="store_true", help="start one session per turn")
    parser.add_argument("--profile", default="", help="write harnessc's cProfile to FILE.N")
    parser.add_argument(
        "--default-path",
        action="store_true",
        help="no recipe: build_options(session=Session()), own connections, no gc.freeze()",
    )
    args = parser.parse_args()
    counts = [int(x) for x in args.n.split(",") if x]
    if args.default_path:
        args.no_gc_freeze = True
    wanted = [x for x in args.only.split(",") if x] or (
        DEFAULT_PATH if args.default_path else FRAMEWORKS
    )
    if not _compile_agent():
        print("harnessc build of benchmarks/peers/add_agent.yaml failed")
        return 1
    rows = []
    for name in wanted:
        if name.startswith("harnessc"):
            rows.append((name, sys.executable))
        elif PEERS_PYTHON.exists():
            rows.append((name, str(PEERS_PYTHON)))
        else:
            print(f"skipping {name}: no {PEERS_PYTHON} (run benchmarks/peers.py once)")

    from harnessc.testing import ProtocolServer

    # -I keeps benchmarks/ and PYTHONPATH off the children's path (the peers must not
    # import this tree); a harnessc child puts this work tree first itself.
    env = dict(os.environ, OPENAI_API_KEY="sk-bench-dummy", OPENAI_AGENTS_DISABLE_TRACING="1")
    env.pop("OPENAI_BASE_URL", None)
    pool = (
        "harnessc-default: build_options(session=Session()), its own connections"
        if args.default_path
        else f"harnessc max_concurrent {args.max_concurrent}"
    )
    print(
        f"{args.steps} tool steps + 1 answer per session, {args.latency_ms:.0f} ms latency, "
        f"{pool}, "
        f"gc.freeze() {'off' if args.no_gc_freeze else 'on'}, "
        f"{'staggered starts' if args.stagger else 'all started at once'}"
    )
    header = (
        f"{'framework':<16} {'N':>5} {'wall s':>7} {'steps/s':>8} {'lag p99 ms':>10} "
        f"{'max ms':>7} {'peak MiB':>8} {'KiB/sess':>8} {'CPU ms/step':>11}  load"
    )
    print(header)
    figures: dict[tuple[str, int], dict[str, float]] = {}
    with ProtocolServer() as server:
        server.set_handler(_handler(args.steps, args.latency_ms / 1000))
        url = f"{server.url}/v1"
        for n in counts:
            for name, python in rows:
                command = [python, "-I", __file__, "--child", "--framework", name, "--n", str(n)]
                command += ["--url", url, "--max-concurrent", str(args.max_concurrent)]
                command += ["--gc-freeze", "0" if args.no_gc_freeze else "1"]
                command += ["--stagger", "1" if args.stagger else "0"]
                if args.profile and name.startswith("harnessc"):
                    command += ["--profile", f"{args.profile}.{name}.{n}"]
                load = _load()
                done = subprocess.run(
                    command, capture_output=True, text=True, env=env, cwd=str(REPO), check=False
                )
                server.reset()
                server.set_handler(_handler(args.steps, args.latency_ms / 1000))
                if done.returncode != 0:
                    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                    print(f"{name:<16} {n:>5} failed: {' | '.join(tail)}")
                    continue
                r = json.loads(done.stdout.strip().splitlines()[-1])
                steps = n * (args.steps + 1)
                per_session = (r["peak_kib"] - r["base_peak_kib"]) / n
                bad = ""
                if r["n_failed"] or r["n_wrong"]:
                    bad = f"  FAILED {r['n_failed']} WRONG {r['n_wrong']} {r['failures'][:1]}"
                print(
                    f"{name:<16} {n:>5} {r['wall']:>7.2f} {steps / r['wall']:>8.0f} "
                    f"{r['lag_p99'] * 1000:>10.1f} {r['lag_max'] * 1000:>7.0f} "
                    f"{r['peak_kib'] / 1024:>8.1f} "
                    f"{per_session:>8.1f} {r['cpu'] / steps * 1000:>11.2f}  {load}{bad}",
                    flush=True,
                )
                if not (r["n_failed"] or r["n_wrong"]):
                    figures[(name, n)] = {
                        "steps_s": steps / r["wall"],
                        "kib": per_session,
                        "lag_ms": r["lag_p99"] * 1000,
                        "peak_mib": r["peak_kib"] / 1024,
                    }
            if args.default_path:
                _default_path_targets(figures, n)
    return 0


def _default_path_targets(figures: dict[tuple[str, int], dict[str, float]], n: int) -> None:
    """Issue 47's targets for the default path beside this N's figures."""
    ours = figures.get(("harnessc-default", n))
    if ours is None:
        return
    peers = [(name, f) for (name, m), f in figures.items() if m == n and name in DEFAULT_PATH[1:]]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT MET"

    print(f"  targets at N = {n} (issue 47's are for N = 1000):")
    if peers:
        best_name, best = max(peers, key=lambda p: p[1]["steps_s"])
        ratio = ours["steps_s"] / best["steps_s"]
        print(
            f"    steps/s {ours['steps_s']:.0f} against the best peer's ({best_name}) "
            f"{best['steps_s']:.0f}: {ratio:.2f}x (target >= 5x: {verdict(ratio >= 5)})"
        )
    print(f"    KiB per session {ours['kib']:.1f} (target <= 20: {verdict(ours['kib'] <= 20)})")
    print(
        f"    event-loop lag p99 {ours['lag_ms']:.0f} ms (target <= 100: "
        f"{verdict(ours['lag_ms'] <= 100)})"
    )
    print(
        f"    peak RSS {ours['peak_mib']:.1f} MiB (target <= 70: {verdict(ours['peak_mib'] <= 70)})"
    )


if __name__ == "__main__":
    raise SystemExit(main())

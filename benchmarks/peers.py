"""harnessc against the frameworks users would pick instead (issues 9 and 35), side by side.

Starts one scripted OpenAI-compatible server on 127.0.0.1, then runs each framework's
add agent (benchmarks/peers/) as a whole process, in alternation, for N = 1 and
N = --steps tool steps, and prints per framework: the median wall time for N = 1
(start-up plus one step), the per-step overhead ((T_N - T_1) / (N - 1)), the peak RSS,
and each figure's ratio to harnessc's.

The peers (openai-agents, pydantic-ai) live in their own virtual environment,
benchmarks/.peers-venv, which this script creates; they never enter the project's
dependencies. harnessc's agent is compiled from benchmarks/peers/add_agent.yaml with
``harnessc build`` when the compiler is there, else the hand-written equivalent
benchmarks/peers/add_agent_manual.py runs.

Usage: python benchmarks/peers.py [--runs 5] [--steps 50] [--skip-install]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
PEERS_DIR = ROOT / "peers"
VENV = ROOT / ".peers-venv"
# harnessc's own clean environment: the project's declared dependencies and nothing else,
# harnessc itself taken from this work tree (PYTHONPATH), as a user's install would have.
HARNESSC_VENV = PEERS_DIR / ".harnessc-venv"
REPO = ROOT.parent
GENERATED = PEERS_DIR / ".generated"
SPEC = PEERS_DIR / "add_agent.yaml"
MANUAL_AGENT = PEERS_DIR / "add_agent_manual.py"
CHILD_TIMEOUT_S = 300.0
PROMPT = "Add the numbers with the add tool until the server says you are done."


# -- the scripted server ---------------------------------------------------------------

_PATH = re.compile(r"^/n/(\d+)/r/([A-Za-z0-9_-]+)/v1/chat/completions$")


def final_text(n: int) -> str:
    return f"All {n} additions are done. FINAL-{n}"


def _reply(n: int, body: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(tool call, text): a call to add while fewer than n tool results are in the request."""
    done = sum(1 for m in body.get("messages") or () if m.get("role") == "tool")
    if done < n:
        call = {
            "id": f"call_{done}",
            "type": "function",
            "function": {"name": "add", "arguments": json.dumps({"a": done, "b": 1})},
        }
        return call, None
    return None, final_text(n)


def _completion(model: str, call: dict[str, Any] | None, text: str | None) -> dict[str, Any]:
    from harnessc.testing.streams import openai_completion

    function = call["function"] if call is not None else None
    whole = (call["id"], function["name"], function["arguments"]) if function else None
    return openai_completion(model, text, whole)


def _sse(model: str, call: dict[str, Any] | None, text: str | None, usage: bool) -> bytes:
    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    frames = [chunk({"role": "assistant", "content": ""}, None)]
    if call is not None:
        frames.append(chunk({"tool_calls": [{"index": 0, **call}]}, None))
        frames.append(chunk({}, "tool_calls"))
    else:
        frames.append(chunk({"content": text}, None))
        frames.append(chunk({}, "stop"))
    if usage:
        frames.append(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": model,
                "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )
    out = "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"
    return out.encode()


class ScriptedServer:
    """OpenAI chat completions at /n/{N}/r/{run id}/v1, counting requests per run."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle on, the body would wait
            # for the client's delayed ACK (~40 ms a request) and swamp every figure.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:
                match = _PATH.match(self.path)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if match is None:
                    self._send(404, "application/json", b'{"error": {"message": "not found"}}')
                    return
                n, run_id = int(match.group(1)), match.group(2)
                with outer._lock:
                    outer.requests[run_id] += 1
                body = json.loads(raw)
                model = str(body.get("model") or "bench-model")
                call, text = _reply(n, body)
                if body.get("stream"):
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    self._send(200, "text/event-stream", _sse(model, call, text, usage))
                else:
                    data = json.dumps(_completion(model, call, text)).encode()
                    self._send(200, "application/json", data)

            def _send(self, status: int, kind: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def base_url(self, n: int, run_id: str) -> str:
        return f"http://127.0.0.1:{self.port}/n/{n}/r/{run_id}/v1"


# -- frameworks ---------------------------------------------------------------------------


@dataclass(slots=True)
class Framework:
    name: str
    python: str
    script: Path
    note: str = ""
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    ours: bool = True  # a harnessc row (targets compare these with the peers)
    wall: dict[int, list[float]] = field(default_factory=dict)
    rss: dict[int, list[float]] = field(default_factory=dict)
    cpu: dict[int, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Peer:
    name: str
    requirement: str
    module: str
    dist: str
    script: str


PEERS = [
    Peer("openai-agents", "openai-agents", "agents", "openai-agents", "openai_agents_peer.py"),
    Peer(
        "pydantic-ai",
        "pydantic-ai-slim[openai]",
        "pydantic_ai",
        "pydantic-ai-slim",
        "pydantic_ai_peer.py",
    ),
]


def _venv_python(venv: Path = VENV) -> Path:
    return venv / "bin" / "python"


def _make_venv(venv: Path) -> bool:
    if _venv_python(venv).exists():
        return True
    print(f"creating {venv}")
    return subprocess.run([sys.executable, "-m", "venv", str(venv)], check=False).returncode == 0


def _pip_install(python: Path, requirements: list[str]) -> str | None:
    """None when the install worked, else the tail of pip's complaint."""
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", *requirements],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return None
    return "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])


def _importable(python: Path, module: str) -> bool:
    probe = subprocess.run(
        # -I: the work tree's own agents/ folder must not pass for the agents package
        [str(python), "-I", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.returncode == 0


def _version(python: Path, dist: str) -> str:
    probe = subprocess.run(
        [str(python), "-I", "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.stdout.strip() or "?"


def prepare_peers(skip_install: bool) -> list[Framework]:
    """The peers ready to run, installing them into benchmarks/.peers-venv when needed."""
    python = _venv_python()
    if not python.exists() and skip_install:
        print(f"skipping every peer: no virtual environment at {VENV} (--skip-install)")
        return []
    if not _make_venv(VENV):
        print("skipping every peer: could not create the virtual environment")
        return []
    ready: list[Framework] = []
    for peer in PEERS:
        if not _importable(python, peer.module):
            if skip_install:
                print(f"skipping {peer.name}: not installed in {VENV} (--skip-install)")
                continue
            print(f"installing {peer.requirement} into {VENV} ...")
            failed = _pip_install(python, [peer.requirement])
            if failed is not None or not _importable(python, peer.module):
                print(f"skipping {peer.name}: its install failed\n{failed or ''}")
                continue
        note = f"{peer.dist} {_version(python, peer.dist)}"
        ready.append(Framework(peer.name, str(python), PEERS_DIR / peer.script, note, ours=False))
    return ready


def harnessc_agent() -> tuple[Path, str]:
    """harnessc's add agent: compiled from the spec if the compiler exists, else hand-written."""
    compiler = shutil.which("harnessc")
    if compiler is not None:
        if GENERATED.exists():
            shutil.rmtree(GENERATED)
        built = subprocess.run(
            [compiler, "build", str(SPEC), "-o", str(GENERATED)],
            capture_output=True,
            text=True,
            check=False,
        )
        modules = sorted(GENERATED.glob("*.py")) if GENERATED.exists() else []
        if built.returncode == 0 and modules:
            return modules[0], "compiled by harnessc build"
        reason = (built.stderr or built.stdout).strip().splitlines()[-1:] or ["no module"]
        print(f"harnessc build did not produce the agent ({reason[0]}); using {MANUAL_AGENT.name}")
    return MANUAL_AGENT, "hand-written stand-in"


def _declared_dependencies() -> list[str]:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"])


def prepare_harnessc(skip_install: bool, trees: list[str]) -> list[Framework]:
    """harnessc in a clean venv (the reference row) and in the project's own interpreter.

    ``trees`` ("NAME=PATH") add clean-venv rows running another copy of the harnessc
    package (PATH holds its ``harnessc/`` folder), to measure a change side by side.
    """
    agent, how = harnessc_agent()
    rows: list[Framework] = []
    python = _venv_python(HARNESSC_VENV)
    ready = python.exists() and _importable(python, "httpx")
    if not ready and not skip_install and _make_venv(HARNESSC_VENV):
        print(f"installing harnessc's declared dependencies into {HARNESSC_VENV} ...")
        failed = _pip_install(python, _declared_dependencies())
        ready = failed is None
        if failed:
            print(f"no clean-venv harnessc row: the install failed\n{failed}")
    if ready:
        clean = {"PYTHONPATH": str(REPO)}
        rows.append(Framework("harnessc", str(python), agent, f"{how}; clean venv", clean))
        rows.append(
            Framework(
                "harnessc-nosess",
                str(python),
                agent,
                "the same with --no-session (no session file, no fsync per turn)",
                clean,
                ["--no-session"],
            )
        )
        for item in trees:
            name, _, path = item.partition("=")
            tree = Path(path).resolve()
            note = f"clean venv, harnessc from {tree}"
            rows.append(Framework(name, str(python), agent, note, {"PYTHONPATH": str(tree)}))
    else:
        print(f"no clean-venv harnessc row: {HARNESSC_VENV} is not set up")
    dev = "harnessc" if not rows else "harnessc-dev"
    rows.append(Framework(dev, sys.executable, agent, f"{how}; the project's interpreter"))
    return rows


# -- running ----------------------------------------------------------------------------


def run_once(
    fw: Framework, server: ScriptedServer, n: int, workdir: Path
) -> tuple[float, float, float]:
    """One whole process: (wall s, CPU s, peak RSS MiB). Raises RuntimeError on failure."""
    run_id = uuid.uuid4().hex[:12]
    child_env = dict(os.environ)
    # PYTHONDONTWRITEBYTECODE would make each run compile harnessc from source while the
    # peers load the bytecode pip wrote at install: every child caches bytecode (the
    # warm-up run writes it), as on a user's machine.
    for name in ("PYTHONPATH", "OPENAI_BASE_URL", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"):
        child_env.pop(name, None)
    child_env.update(
        BENCH_BASE_URL=server.base_url(n, run_id),
        OPENAI_API_KEY="sk-bench-dummy",
        OPENAI_AGENTS_DISABLE_TRACING="1",
        # harnessc's session files go to the run's folder, not the user's data folder
        XDG_DATA_HOME=str(workdir / "data"),
    )
    child_env.update(fw.env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [fw.python, str(fw.script), *fw.args, PROMPT],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=workdir,
            env=child_env,
        )
        timer = threading.Timer(CHILD_TIMEOUT_S, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    requests = server.requests.pop(run_id, 0)
    problems = []
    if proc.returncode != 0:
        problems.append(f"exit code {proc.returncode}")
    if final_text(n) not in stdout:
        problems.append("the final text is missing from stdout")
    if requests != n + 1:
        problems.append(f"{requests} model requests (expected {n + 1})")
    if problems:
        tail = "\n    ".join((stderr.strip() or stdout.strip()).splitlines()[-8:])
        raise RuntimeError(f"{'; '.join(problems)}\n    {tail}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(frameworks: list[Framework], steps: int, runs: int) -> None:
    with ScriptedServer() as server, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for fw in frameworks:  # warm-up: bytecode caches, the page cache
            try:
                run_once(fw, server, 1, workdir)
            except RuntimeError as exc:
                fw.failures.append(f"warm-up: {exc}")
        for r in range(runs):
            order = frameworks[r % len(frameworks) :] + frameworks[: r % len(frameworks)]
            for n in (1, steps):
                for fw in order:
                    try:
                        wall, cpu, rss = run_once(fw, server, n, workdir)
                    except RuntimeError as exc:
                        fw.failures.append(f"N={n}: {exc}")
                        continue
                    fw.wall.setdefault(n, []).append(wall)
                    fw.rss.setdefault(n, []).append(rss)
                    fw.cpu.setdefault(n, []).append(cpu)
            done = ", ".join(
                f"{fw.name} {statistics.median(fw.wall[1]):.3f}s"
                for fw in frameworks
                if 1 in fw.wall
            )
            print(f"  round {r + 1}/{runs}: N=1 medians so far: {done}", flush=True)


# -- the table ----------------------------------------------------------------------------


@dataclass(slots=True)
class Figures:
    t1: float
    tn: float
    step_ms: float
    rss: float
    cpu1: float
    cpu_step_ms: float


def figures(fw: Framework, steps: int) -> Figures | None:
    if not fw.wall.get(1) or not fw.wall.get(steps):
        return None
    t1 = statistics.median(fw.wall[1])
    tn = statistics.median(fw.wall[steps])
    rss = max(statistics.median(fw.rss[1]), statistics.median(fw.rss[steps]))
    c1 = statistics.median(fw.cpu[1])
    cn = statistics.median(fw.cpu[steps])
    per_step = (tn - t1) / (steps - 1) * 1000
    return Figures(t1, tn, per_step, rss, c1, (cn - c1) / (steps - 1) * 1000)


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base > 0 else "-"


def report(frameworks: list[Framework], steps: int, runs: int, verbose: bool = False) -> None:
    figs = {fw.name: figures(fw, steps) for fw in frameworks}
    ours = figs.get("harnessc")
    print()
    print(
        f"whole processes, medians of {runs} runs; per step = (T{steps} - T1) / {steps - 1}; "
        "ratio = figure / harnessc's"
    )
    header = (
        f"{'framework':<14} {'N=1 wall':>9} {'ratio':>6} {f'N={steps} wall':>10} "
        f"{'per step':>9} {'ratio':>6} {'peak RSS':>10} {'ratio':>6} "
        f"{'N=1 CPU':>8} {'CPU/step':>9}"
    )
    print(header)
    print("-" * len(header))
    for fw in frameworks:
        f = figs[fw.name]
        if f is None:
            print(f"{fw.name:<14} {'failed':>9}")
            continue
        r1 = _ratio(f.t1, ours.t1) if ours else "-"
        rs = _ratio(f.step_ms, ours.step_ms) if ours else "-"
        rr = _ratio(f.rss, ours.rss) if ours else "-"
        print(
            f"{fw.name:<14} {f.t1:>8.3f}s {r1:>6} {f.tn:>9.3f}s {f.step_ms:>7.1f}ms {rs:>6} "
            f"{f.rss:>6.1f} MiB {rr:>6} {f.cpu1:>7.3f}s {f.cpu_step_ms:>7.1f}ms"
        )
    print()
    for fw in frameworks:
        print(f"  {fw.name}: {fw.note}")
    if verbose:
        print()
        for fw in frameworks:
            for n, walls in sorted(fw.wall.items()):
                cpus = fw.cpu.get(n, [])
                runs = " ".join(f"{w:.3f}/{c:.3f}" for w, c in zip(walls, cpus, strict=False))
                print(f"  {fw.name} N={n} wall/CPU s: {runs}")
    peers = [f for fw in frameworks if not fw.ours and (f := figs[fw.name])]
    if not peers:
        return
    best_t1 = min(p.t1 for p in peers)
    best_cpu1 = min(p.cpu1 for p in peers)
    best_step = min(p.step_ms for p in peers)
    least_rss = min(p.rss for p in peers)
    for fw in frameworks:
        mine = figs[fw.name]
        if not fw.ours or mine is None:
            continue
        print()
        # Start-up and RSS: issue 35's single-run targets; the per-step one is issue 9's.
        print(f"targets ({fw.name} / best peer):")
        for label, value, base, limit in (
            ("N=1 CPU time", mine.cpu1, best_cpu1, 0.2),
            ("N=1 wall time", mine.t1, best_t1, 0.2),
            ("per-step overhead", mine.step_ms, best_step, 0.25),
            ("peak RSS", mine.rss, least_rss, 0.35),
        ):
            share = value / base if base > 0 else float("inf")
            verdict = "met" if share <= limit else "MISSED"
            print(f"  {label:<18} {share:5.2f} (target <= {limit})  {verdict}")
    for fw in frameworks:
        for failure in fw.failures[:3]:
            print(f"\n{fw.name} failed a run: {failure}")
        if len(fw.failures) > 3:
            print(f"{fw.name}: {len(fw.failures) - 3} more failed runs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per framework and N")
    parser.add_argument("--steps", type=int, default=50, help="tool steps of the long run")
    parser.add_argument(
        "--skip-install", action="store_true", help="use benchmarks/.peers-venv as it is"
    )
    parser.add_argument(
        "--only", action="append", default=None, help="run only this framework (repeatable)"
    )
    parser.add_argument("--verbose", action="store_true", help="also print every run's figures")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="also run harnessc from another copy of the package (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be at least 2")
    frameworks = [
        *prepare_harnessc(args.skip_install, args.tree),
        *prepare_peers(args.skip_install),
    ]
    if args.only:
        frameworks = [fw for fw in frameworks if fw.name in args.only]
    print("frameworks: " + ", ".join(f"{fw.name} ({fw.note})" for fw in frameworks))
    print(f"N = 1 and N = {args.steps}, {args.runs} runs each, in alternation")
    load_before = os.getloadavg()[0]
    measure(frameworks, args.steps, args.runs)
    report(frameworks, args.steps, args.runs, args.verbose)
    print(f"\nload average (1 min): {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

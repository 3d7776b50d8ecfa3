"""Served agents against the peers' servers (issue 47), over AG-UI, side by side.

One scripted model (harnessc's ProtocolServer in a process of its own: chat completions
for harnessc, pydantic-ai and the floor, Gemini's generateContent for Google ADK) answers
every request after --latency-ms, with a call of the ``add`` tool until a run's request
holds --steps tool results, then with a final text naming the run. Each server runs the
same add agent in a process of its own, started fresh for each number of clients:

- ``bare``: the floor, bare aiohttp doing the agent's work (benchmarks/peers/serve_bare.py);
- ``harnessc``: benchmarks/peers/serve_agent.yaml compiled and started with ``--serve``
  (POST /agui); its ``add`` tool is declared ``read_only: true``, as docs/tools.md tells
  a user to declare a pure function, so its batches take no workspace checkpoint;
- ``harnessc-plain``: the same without workspace checkpoints (serve_agent_plain.yaml,
  ``checkpoints: false``): what the checkpoints around each tool batch cost;
- ``pydantic-ai``: its AG-UI adapter (``AGUIAdapter.dispatch_request``) under uvicorn;
- ``adk``: Google ADK's agent through ag-ui-adk's FastAPI endpoint under uvicorn.

The peers run in benchmarks/.peers-venv (created and filled here, or by
benchmarks/peers.py; --skip-install uses it as it is). For each number of clients
(--clients, default 100 and 1,000) and each server, after a warm-up:

1. **memory per open run**: the model holds every request for --hold-s; N runs are
   started and, once the RUN_STARTED of all N arrived (or --open-timeout passed) and
   then the model saw the first request of each (or --hold-s more passed), the server's
   peak resident memory over its idle memory, divided by the runs open (a run waiting
   for one of its server's model connections is open too: each server has its own cap
   on them, aiohttp's default 100, harnessc's 64);
2. **load**: N clients, each starting its next run as soon as its last one ended, for
   --duration seconds, then every run in flight is read to its end (at most
   --run-timeout): runs per second (runs finished / the time until the last ended),
   p50 / p99 of a run's latency (POST to RUN_FINISHED) over the model's own
   ((steps + 1) x latency), the server's CPU per run and its peak RSS.

The clients are plain asyncio connections in this process (an HTTP library's own CPU
would be measured instead of the servers'); a run counts only when its stream holds
RUN_FINISHED and the run's final text (so all its tool steps were made). Prints each
target of issue 47 beside its figure, and the load average with every row. Stops every
process it started and leaves no files (the compiled agent lives in a temporary folder).

``--profile DIR`` (needs py-spy) samples each server during its load phase, keeps the
raw stacks in DIR and prints where each server's CPU per run goes: by code area
(harnessc's subpackages, site packages, standard-library modules) and by function. The
sampler takes CPU itself: take the figures from a run without it.

Usage: python benchmarks/serve_peers.py [--clients 100,1000] [--only bare,harnessc,...]
       [--duration 20] [--latency-ms 50] [--steps 5] [--hold-s 8] [--skip-install]
       [--profile DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
PEERS_DIR = ROOT / "peers"
VENV = ROOT / ".peers-venv"
SPEC = PEERS_DIR / "serve_agent.yaml"
PLAIN_SPEC = PEERS_DIR / "serve_agent_plain.yaml"  # the same without checkpoints
PEER_REQUIREMENTS = [
    "pydantic-ai-slim[openai,ag-ui]",
    "google-adk",
    "ag-ui-adk",
    "uvicorn",
]
SERVERS = ["bare", "harnessc", "harnessc-plain", "pydantic-ai", "adk"]
_TAG = re.compile(r"run-([A-Za-z0-9]+)")


# -- the scripted model (its own process) ---------------------------------------------


class Model:
    """The scripted model's answers and the counts the benchmark reads."""

    def __init__(self, steps: int, latency_s: float) -> None:
        self.steps = steps
        self.latency_s = latency_s
        self.lock = threading.Lock()
        self.requests = 0
        self.first = 0  # requests of a run without tool results yet: runs that began
        self.finals = 0

    def handle(self, request: Any) -> Any:
        from harnessc.testing import ScriptedResponse

        route = request.route
        if route == "/_bench/latency":
            with self.lock:
                self.latency_s = float(request.json["s"])
                self.first = self.requests = self.finals = 0
            return ScriptedResponse.json_body(200, {"ok": True})
        if route == "/_bench/stats":
            with self.lock:
                counts = {"requests": self.requests, "first": self.first, "finals": self.finals}
            return ScriptedResponse.json_body(200, counts)
        body = request.json or {}
        gemini = ":generateContent" in route or ":streamGenerateContent" in route
        if gemini:
            contents = body.get("contents") or []
            done = sum(1 for c in contents for p in c.get("parts") or () if "functionResponse" in p)
            prompt = json.dumps(contents[:1])
        else:
            messages = body.get("messages") or []
            done = sum(1 for m in messages if m.get("role") == "tool")
            prompt = json.dumps([m for m in messages if m.get("role") == "user"][:1])
        match = _TAG.search(prompt)
        tag = match.group(1) if match else "x"
        with self.lock:
            self.requests += 1
            self.first += done == 0
            self.finals += done >= self.steps
            delay = self.latency_s
        text = f"run-{tag} done FINAL-{tag}"
        call = done < self.steps
        if gemini:
            response = _gemini(route, call, done, text)
        else:
            response = _openai(body, call, done, tag, text)
        response.delay_s = delay
        return response


def _openai(body: dict[str, Any], call: bool, done: int, tag: str, text: str) -> Any:
    from harnessc.testing import ScriptedResponse
    from harnessc.testing.streams import openai_completion, openai_events, openai_tool_call_events

    arguments = json.dumps({"a": done, "b": 1})
    call_id = f"call_{tag}_{done}"
    if body.get("stream"):
        events = (
            openai_tool_call_events([(call_id, "add", arguments)], pieces=1)
            if call
            else openai_events([text])
        )
        return ScriptedResponse.sse(events, per_chunk=100)
    model = body.get("model") or "bench-model"
    whole = openai_completion(model, text, (call_id, "add", arguments) if call else None)
    return ScriptedResponse.json_body(200, whole)


def _gemini(route: str, call: bool, done: int, text: str) -> Any:
    from harnessc.testing import ScriptedResponse
    from harnessc.testing.streams import google_chunk, google_events

    calls = [("add", {"a": done, "b": 1})] if call else []
    if ":streamGenerateContent" in route:
        events = google_events(calls=calls) if call else google_events([text])
        return ScriptedResponse.sse(events, per_chunk=100)
    parts = [{"functionCall": {"name": "add", "args": calls[0][1]}}] if call else [{"text": text}]
    return ScriptedResponse.json_body(
        200, google_chunk(parts, finish_reason="STOP", usage=(10, 5, 0, 0))
    )


def model_server(steps: int, latency_s: float) -> None:
    """``--model``: serve the scripted model, print its URL, stop when stdin ends."""

    from harnessc.testing import ProtocolServer

    model = Model(steps, latency_s)
    with ProtocolServer() as server:
        server.set_handler(model.handle)

        def forget() -> None:  # the recorded requests would grow for the whole sitting
            while True:
                time.sleep(5)
                server.reset()
                server.set_handler(model.handle)

        threading.Thread(target=forget, daemon=True).start()
        print(server.url, flush=True)
        sys.stdin.read()


class ModelProcess:
    def __init__(self, steps: int, latency_s: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--model", str(steps), str(latency_s)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=REPO,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        if not self.url:
            raise SystemExit("the scripted model did not start")

    def call(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as reply:
            return dict(json.loads(reply.read()))

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the servers ----------------------------------------------------------------------


@dataclass(slots=True)
class ServerKind:
    name: str
    path: str  # the AG-UI endpoint
    note: str = ""
    command: list[str] = field(default_factory=list)  # with PORT for the port
    env: dict[str, str] = field(default_factory=dict)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _proc_stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its waited-for children."""
    try:
        fields = _proc_stat(pid)
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Running:
    """One server process, started and ready."""

    def __init__(self, kind: ServerKind, model_url: str, workdir: Path, clients: int) -> None:
        self.kind = kind
        self.port = _free_port()
        runs = str(max(clients, 16))  # the warm-up's runs fit too
        command = [c.replace("PORT", str(self.port)).replace("CLIENTS", runs) for c in kind.command]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE", "OPENAI_BASE_URL"):
            env.pop(name, None)
        env.update(
            BENCH_BASE_URL=f"{model_url}/v1",
            BENCH_MODEL_URL=model_url,
            OPENAI_API_KEY="sk-bench-dummy",
            GOOGLE_API_KEY="bench-dummy",
            XDG_DATA_HOME=str(workdir / "data"),
        )
        env.pop("HARNESSC_SERVE_TOKEN", None)
        env.update(kind.env)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            command,
            cwd=PEERS_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{kind.name} exited at start:\n{self.output()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{kind.name} did not listen within 120 s")
            time.sleep(0.1)

    def output(self) -> str:
        self.log.seek(0)
        return "\n".join(self.log.read().decode(errors="replace").strip().splitlines()[-12:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


# -- the clients ----------------------------------------------------------------------


def agui_input(tag: str) -> bytes:
    return json.dumps(
        {
            "threadId": f"thread-{tag}",
            "runId": f"run-{tag}",
            "state": {},
            "messages": [
                {"id": f"msg-{tag}", "role": "user", "content": f"Add for run-{tag} please."}
            ],
            "tools": [],
            "context": [],
            "forwardedProps": {},
        }
    ).encode()


@dataclass(slots=True)
class Outcome:
    ok: bool
    latency: float
    problem: str = ""


async def one_run(
    port: int, path: str, tag: str, timeout: float, started: list[int] | None = None
) -> Outcome:
    """POST one RunAgentInput and read the event stream to RUN_FINISHED; ``started[0]``
    counts the runs whose RUN_STARTED arrived."""
    body = agui_input(tag)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
        "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sent = time.perf_counter()
    seen = bytearray()
    writer = None
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head + body)
            while chunk := await reader.read(65536):
                seen += chunk
                window = seen[-(len(chunk) + 32) :]
                if started is not None and b"RUN_STARTED" in seen:
                    started[0] += 1
                    started = None
                if b"RUN_FINISHED" in window or b"RUN_ERROR" in window:
                    break
    except TimeoutError:
        return Outcome(False, time.perf_counter() - sent, "timed out")
    except OSError as exc:
        return Outcome(False, time.perf_counter() - sent, f"{type(exc).__name__}: {exc}")
    finally:
        if writer is not None:
            writer.close()
    latency = time.perf_counter() - sent
    if not seen.startswith(b"HTTP/1.1 200"):
        return Outcome(False, latency, bytes(seen[:200]).decode(errors="replace"))
    if b"RUN_ERROR" in seen:
        start = seen.find(b"RUN_ERROR")
        return Outcome(False, latency, bytes(seen[start : start + 300]).decode(errors="replace"))
    if b"RUN_FINISHED" not in seen or f"FINAL-{tag}".encode() not in seen:
        return Outcome(False, latency, "no RUN_FINISHED with the final text")
    return Outcome(True, latency)


class Sampler:
    """The server's peak RSS, sampled every 50 ms while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = rss_kib(pid)
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            self.peak = max(self.peak, rss_kib(self.pid))
            await asyncio.sleep(0.05)

    def __enter__(self) -> Sampler:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        self.peak = max(self.peak, rss_kib(self.pid))


@dataclass(slots=True)
class Row:
    server: str
    clients: int
    runs: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)
    wall: float = 0.0
    latencies: list[float] = field(default_factory=list)
    cpu_per_run_ms: float = float("nan")
    peak_mib: float = 0.0
    idle_mib: float = 0.0
    open_runs: int = 0
    at_model: int = 0  # of them, the runs whose first model request had arrived
    kib_per_open_run: float = float("nan")
    load: str = ""

    @property
    def runs_per_s(self) -> float:
        return self.runs / self.wall if self.wall > 0 else 0.0

    def overhead_ms(self, q: float, model_s: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        value = ordered[min(len(ordered) - 1, int(len(ordered) * q))]
        return (value - model_s) * 1000


async def warm_up(port: int, path: str, timeout: float) -> list[str]:
    outcomes = await asyncio.gather(*(one_run(port, path, f"w{i}", timeout) for i in range(8)))
    return [o.problem for o in outcomes if not o.ok]


async def hold(
    running: Running, model: ModelProcess, row: Row, n: int, args: argparse.Namespace
) -> bool:
    """Memory per open run: N runs held at the model. True when all N ended well."""
    pid = running.proc.pid
    await asyncio.to_thread(model.call, "/_bench/latency", {"s": args.hold_s})
    row.idle_mib = rss_kib(pid) / 1024
    idle = rss_kib(pid)
    port, path = running.port, running.kind.path
    started = [0]
    timeout = args.run_timeout + (args.steps + 1) * args.hold_s
    with Sampler(pid) as sampler:
        tasks = [
            asyncio.ensure_future(one_run(port, path, f"h{i}", timeout, started)) for i in range(n)
        ]
        deadline = time.monotonic() + args.open_timeout
        while time.monotonic() < deadline and started[0] < n:
            await asyncio.sleep(0.1)
        opened = started[0]
        # then until every open run's first request reached the model, or --hold-s (a
        # server whose model connections are capped keeps the others waiting for one)
        deadline = time.monotonic() + args.hold_s
        while time.monotonic() < deadline:
            row.at_model = int((await asyncio.to_thread(model.call, "/_bench/stats"))["first"])
            if row.at_model >= opened:
                break
            await asyncio.sleep(0.2)
        peak = max(sampler.peak, rss_kib(pid))
    row.open_runs = opened
    row.kib_per_open_run = (peak - idle) / opened if opened else float("nan")
    await asyncio.to_thread(model.call, "/_bench/latency", {"s": args.latency_ms / 1000})
    outcomes = await asyncio.gather(*tasks)
    return all(o.ok for o in outcomes)


async def load(running: Running, row: Row, n: int, args: argparse.Namespace) -> None:
    pid = running.proc.pid
    port, path = running.port, running.kind.path
    cpu0 = cpu_s(pid)
    begin = time.perf_counter()
    stop_at = begin + args.duration
    last_end = [begin]

    async def client(i: int) -> None:
        k = 0
        while time.perf_counter() < stop_at:
            outcome = await one_run(port, path, f"c{i}x{k}", args.run_timeout)
            k += 1
            if outcome.ok:
                row.runs += 1
                row.latencies.append(outcome.latency)
                last_end[0] = max(last_end[0], time.perf_counter())
            else:
                row.failed += 1
                if len(row.problems) < 3:
                    row.problems.append(outcome.problem)

    profiler = None
    if args.profile:
        profiler = start_profiler(pid, Path(args.profile) / f"{running.kind.name}-{n}.txt")
    try:
        with Sampler(pid) as sampler:
            await asyncio.gather(*(client(i) for i in range(n)))
    finally:
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)  # py-spy writes its file and ends
            profiler.wait(timeout=60)
    row.wall = last_end[0] - begin
    row.cpu_per_run_ms = (cpu_s(pid) - cpu0) / row.runs * 1000 if row.runs else float("nan")
    row.peak_mib = sampler.peak / 1024


# -- profiles (--profile DIR: py-spy on each server during its load) -------------------


def start_profiler(pid: int, out: Path) -> subprocess.Popen[bytes] | None:
    spy = shutil.which("py-spy")
    if spy is None:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        [spy, "record", "-p", str(pid), "-r", "200", "--format", "raw", "--nonblocking"]
        + ["-o", str(out)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]+)(?::\d+)?\)$")


def _area(path: str) -> str:
    """Where a frame's code lives: harnessc's subpackage, else the top-level package or
    module (py-spy names files from their folder on sys.path)."""
    parts = Path(path).parts
    if len(parts) > 2 and parts[0] == "harnessc":
        return "/".join(parts[: 3 if parts[1] == "runtime" and len(parts) > 3 else 2])
    return parts[0].removesuffix(".py") if parts else "?"


def summarise_profile(raw: Path, cpu_per_run_ms: float, top: int = 15) -> list[str]:
    """The functions and code areas with the most samples, as ms of CPU per run (their
    share of the samples times the server's CPU per run)."""
    own: dict[str, int] = {}
    within: dict[str, int] = {}
    areas: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples = int(count)
        total += samples
        names = []
        for frame in stack.split(";"):
            match = _FRAME.match(frame)
            if match:
                file = match.group("file")
                names.append((f"{match.group('func')} ({Path(file).name})", _area(file)))
        if not names:
            continue
        name, area = names[-1]
        own[name] = own.get(name, 0) + samples
        areas[area] = areas.get(area, 0) + samples
        for seen in {n for n, _ in names}:
            within[seen] = within.get(seen, 0) + samples
    if not total:
        return ["  (no samples)"]

    def rows(counts: dict[str, int], limit: int = top) -> list[str]:
        best = sorted(counts.items(), key=lambda kv: -kv[1])[:limit]
        return [
            f"    {c / total * 100:5.1f}%  {c / total * cpu_per_run_ms:6.2f} ms/run  {name}"
            for name, c in best
        ]

    return [
        f"  {total} samples; by where the sampled code lives (own time):",
        *rows(areas),
        "  by function, own time:",
        *rows(own),
        "  by function, with what it calls (the chain above the event loop's callbacks left out):",
        *rows({k: v for k, v in within.items() if v < 0.85 * total}, 2 * top),
    ]


def measure(kind: ServerKind, model: ModelProcess, n: int, args: argparse.Namespace) -> Row:
    row = Row(kind.name, n)
    before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        running = Running(kind, model.url, Path(tmp), n)
        try:
            problems = asyncio.run(warm_up(running.port, kind.path, args.run_timeout))
            if problems:
                row.problems = problems[:3]
                row.failed = len(problems)
                return row
            clean = asyncio.run(hold(running, model, row, n, args))
            if not clean:  # runs that outlived their timeout may still be working: restart
                running.stop()
                running = Running(kind, model.url, Path(tmp), n)
                asyncio.run(warm_up(running.port, kind.path, args.run_timeout))
            asyncio.run(load(running, row, n, args))
        finally:
            running.stop()
    row.load = f"{before} -> " + " ".join(f"{x:.1f}" for x in os.getloadavg())
    return row


# -- preparing ------------------------------------------------------------------------


def _venv_python() -> Path:
    return VENV / "bin" / "python"


def prepare_peers(skip_install: bool) -> dict[str, str]:
    """The peers' interpreter and their versions, installing them when needed."""
    python = _venv_python()
    probe = "import pydantic_ai.ui.ag_ui, ag_ui_adk, google.adk, uvicorn"
    ready = (
        python.exists()
        and subprocess.run(
            [str(python), "-I", "-c", probe], capture_output=True, check=False
        ).returncode
        == 0
    )
    if not ready and not skip_install:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        print(f"installing {', '.join(PEER_REQUIREMENTS)} into {VENV} ...", flush=True)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", *PEER_REQUIREMENTS],
            capture_output=True,
            text=True,
            check=False,
        )
        ready = done.returncode == 0
        if not ready:
            print("the peers' install failed:\n" + "\n".join(done.stderr.splitlines()[-5:]))
    if not ready:
        return {}
    versions = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            "import importlib.metadata as m\n"
            "for d in ('pydantic-ai-slim', 'google-adk', 'ag-ui-adk', 'uvicorn'):\n"
            "    print(d, m.version(d))",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split("\n")
    return {"python": str(python), "versions": ", ".join(v for v in versions if v)}


def compile_agent(folder: Path, spec: Path = SPEC) -> Path:
    """``spec`` (benchmarks/peers/serve_agent.yaml) compiled by ``harnessc build`` into
    ``folder``."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from harnessc.cli import main; main()",
            "build",
            str(spec),
            "-o",
            str(folder),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    module = folder / f"{spec.stem}.py"
    if done.returncode != 0 or not module.exists():
        raise SystemExit(f"harnessc build failed: {(done.stderr or done.stdout).strip()}")
    return module


def server_kinds(module: Path, plain: Path | None, peers: dict[str, str]) -> list[ServerKind]:
    kinds = [
        ServerKind(
            "bare",
            "/agui",
            "aiohttp only (benchmarks/peers/serve_bare.py)",
            [sys.executable, str(PEERS_DIR / "serve_bare.py"), "--port", "PORT"],
        ),
        ServerKind(
            "harnessc",
            "/agui",
            "the compiled agent's --serve (uvicorn, h11)",
            [sys.executable, str(module), "--serve", "--port", "PORT", "--max-runs", "CLIENTS"]
            + ["--max-connections", "4096"],
            {"PYTHONPATH": str(REPO)},
        ),
    ]
    if plain is not None:
        kinds.append(
            ServerKind(
                "harnessc-plain",
                "/agui",
                "the same without workspace checkpoints (checkpoints: false)",
                [sys.executable, str(plain), "--serve", "--port", "PORT", "--max-runs", "CLIENTS"]
                + ["--max-connections", "4096"],
                {"PYTHONPATH": str(REPO)},
            )
        )
    if peers:
        python = peers["python"]
        kinds.append(
            ServerKind(
                "pydantic-ai",
                "/",
                "AGUIAdapter.dispatch_request under uvicorn (benchmarks/peers/serve_pydantic_ai.py)",
                [python, str(PEERS_DIR / "serve_pydantic_ai.py"), "--port", "PORT"],
            )
        )
        kinds.append(
            ServerKind(
                "adk",
                "/agui",
                "ADK's LlmAgent through ag-ui-adk under uvicorn (benchmarks/peers/serve_adk.py)",
                [
                    python,
                    str(PEERS_DIR / "serve_adk.py"),
                    "--port",
                    "PORT",
                    "--max-runs",
                    "CLIENTS",
                ],
            )
        )
    return kinds


# -- the report -----------------------------------------------------------------------


def report(rows: list[Row], args: argparse.Namespace) -> None:
    model_s = (args.steps + 1) * args.latency_ms / 1000
    print()
    print(
        f"AG-UI, {args.steps} tool steps + 1 answer per run, model latency {args.latency_ms:.0f} ms"
        f" (a run's own: {model_s * 1000:.0f} ms), {args.duration:.0f} s of load per row"
    )
    header = (
        f"{'server':<14} {'clients':>7} {'runs':>6} {'failed':>6} {'runs/s':>7} "
        f"{'p50 over':>9} {'p99 over':>9} {'CPU/run':>8} {'KiB/open':>9} {'open':>5} "
        f"{'idle MiB':>8} {'peak MiB':>8}  load before -> after"
    )
    print(header)
    for r in rows:
        print(
            f"{r.server:<14} {r.clients:>7} {r.runs:>6} {r.failed:>6} {r.runs_per_s:>7.1f} "
            f"{r.overhead_ms(0.5, model_s):>7.0f}ms {r.overhead_ms(0.99, model_s):>7.0f}ms "
            f"{r.cpu_per_run_ms:>6.1f}ms {r.kib_per_open_run:>9.0f} {r.open_runs:>5} "
            f"{r.idle_mib:>8.1f} {r.peak_mib:>8.1f}  {r.load}"
        )
        for problem in r.problems:
            print(f"    {r.server} at {r.clients}: {problem.strip()[:300]}")
    print()
    print("targets (issue 47):")
    for n in sorted({r.clients for r in rows}):
        at = {r.server: r for r in rows if r.clients == n}
        ours = at.get("harnessc")
        peers = [r for name, r in at.items() if name in ("pydantic-ai", "adk") and r.runs]
        if ours is None:
            continue
        if peers:
            best = max(peers, key=lambda r: r.runs_per_s)
            ratio = ours.runs_per_s / best.runs_per_s
            memory = (
                ours.kib_per_open_run / best.kib_per_open_run
                if best.kib_per_open_run > 0
                else float("nan")
            )
            print(
                f"  {n} clients: runs/s {ours.runs_per_s:.1f} against the best peer's "
                f"({best.server}) {best.runs_per_s:.1f}: {ratio:.2f}x (target >= 3x: "
                f"{'met' if ratio >= 3 else 'NOT MET'})"
            )
            print(
                f"  {n} clients: memory per open run {ours.kib_per_open_run:.0f} KiB against "
                f"{best.server}'s {best.kib_per_open_run:.0f}: {memory:.2f}x (target <= 0.3x: "
                f"{'met' if memory <= 0.3 else 'NOT MET'})"
            )
        elif any(name in at for name in ("pydantic-ai", "adk")):
            print(f"  {n} clients: no peer finished a run")
        plain = at.get("harnessc-plain")
        if plain is not None and plain.runs and ours.runs:
            print(
                f"  {n} clients: workspace checkpoints' cost (harnessc against harnessc-plain): "
                f"CPU per run {ours.cpu_per_run_ms:.1f} against {plain.cpu_per_run_ms:.1f} ms "
                f"(+{ours.cpu_per_run_ms - plain.cpu_per_run_ms:.1f}), p99 over the model's "
                f"{ours.overhead_ms(0.99, model_s):.0f} against "
                f"{plain.overhead_ms(0.99, model_s):.0f} ms"
            )
        bare = at.get("bare")
        if bare is not None and bare.runs and ours.runs:
            if n == 100:
                p99, floor = ours.overhead_ms(0.99, model_s), bare.overhead_ms(0.99, model_s)
                ratio = p99 / floor if floor > 0 else float("inf")
                print(
                    f"  {n} clients: p99 overhead {p99:.0f} ms against the bare server's "
                    f"{floor:.0f} ms: {ratio:.2f}x (target <= 1.5x: "
                    f"{'met' if ratio <= 1.5 else 'NOT MET'})"
                )
            ratio = ours.cpu_per_run_ms / bare.cpu_per_run_ms
            print(
                f"  {n} clients: CPU per run {ours.cpu_per_run_ms:.1f} ms against the bare "
                f"server's {bare.cpu_per_run_ms:.1f} ms: {ratio:.2f}x (target <= 2x: "
                f"{'met' if ratio <= 2 else 'NOT MET'})"
            )


def main() -> int:
    if sys.argv[1:2] == ["--model"]:
        model_server(int(sys.argv[2]), float(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="100,1000", help="comma-separated client counts")
    parser.add_argument("--only", default="", help="comma-separated servers: " + ",".join(SERVERS))
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of load per row")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--hold-s", type=float, default=8.0, help="model latency while holding")
    parser.add_argument("--open-timeout", type=float, default=60.0, help="seconds to open N runs")
    parser.add_argument("--run-timeout", type=float, default=120.0, help="seconds a run may take")
    parser.add_argument("--skip-install", action="store_true", help="use .peers-venv as it is")
    parser.add_argument(
        "--profile",
        default="",
        metavar="DIR",
        help="py-spy each server during its load (raw stacks into DIR) and print the top costs",
    )
    args = parser.parse_args()
    if args.profile and shutil.which("py-spy") is None:
        parser.error("--profile needs py-spy on PATH (pip install py-spy)")
    counts = [int(x) for x in args.clients.split(",") if x]
    wanted = [x for x in args.only.split(",") if x] or SERVERS
    peers = prepare_peers(args.skip_install) if {"pydantic-ai", "adk"} & set(wanted) else {}
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        module = compile_agent(Path(tmp) / "generated")
        plain = None
        if "harnessc-plain" in wanted and PLAIN_SPEC.exists():
            plain = compile_agent(Path(tmp) / "generated", PLAIN_SPEC)
        kinds = [k for k in server_kinds(module, plain, peers) if k.name in wanted]
        for name in wanted:
            if name not in {k.name for k in kinds}:
                print(f"skipping {name}: not set up (the peers' venv: {VENV})")
        print("servers: " + "; ".join(f"{k.name}: {k.note}" for k in kinds))
        if peers:
            print(f"peers: {peers['versions']}")
        model = ModelProcess(args.steps, args.latency_ms / 1000)
        try:
            for n in counts:
                for kind in kinds:
                    print(f"  {kind.name} at {n} clients ...", flush=True)
                    try:
                        row = measure(kind, model, n, args)
                    except RuntimeError as exc:
                        row = Row(kind.name, n, problems=[str(exc)])
                    rows.append(row)
                    print(
                        f"    {row.runs} runs, {row.runs_per_s:.1f}/s, "
                        f"{row.kib_per_open_run:.0f} KiB per open run ({row.open_runs} open, "
                        f"{row.at_model} at the model), "
                        f"CPU {row.cpu_per_run_ms:.1f} ms per run; load {row.load}",
                        flush=True,
                    )
        finally:
            model.stop()
    report(rows, args)
    if args.profile:
        for row in rows:
            raw = Path(args.profile) / f"{row.server}-{row.clients}.txt"
            if raw.exists() and row.runs:
                print(f"\nprofile of {row.server} at {row.clients} clients ({raw}):")
                print("\n".join(summarise_profile(raw, row.cpu_per_run_ms)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

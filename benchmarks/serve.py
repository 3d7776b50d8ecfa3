"""A served agent under load (issue 33): N runs at once through the native API.

The parent starts harnessc's ProtocolServer as the model (every reply after
--latency-ms), compiles a small agent (in-memory sessions, or session files with
--files), and starts it with ``--serve --max-runs N`` in a child process. Then:

- **throughput and latency**: N clients at once each POST /v1/runs and read the run's
  event stream to its end (plain asyncio connections, so the clients cost little); it
  prints runs per second (N / wall time), p50 / p99 of the time from sending the POST to
  the first event read on the stream, and the server's CPU time per run;
- **memory per open run**: with the model answering after --hold-s, N runs are started
  and, once all of them are working, the server's resident memory (VmRSS) is read: its
  rise over the idle server, divided by N;
- **in-process**: the same N runs as harnesses in one process (one HttpClientPool, no
  HTTP in front), for comparison of runs per second.

Usage: python benchmarks/serve.py [--n 1000] [--latency-ms 50] [--hold-s 3] [--files]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harnessc.compiler.render import render  # noqa: E402
from harnessc.spec import parse_spec  # noqa: E402
from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events  # noqa: E402

SPEC = """\
version: 1
name: bench
models:
  main:
    provider: openai
    id: bench-model
    base_url: ${BENCH_BASE_URL}
    api_key_env: BENCH_API_KEY
system_prompt: You are a benchmark agent.
session:
  repo: REPO
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _compile(folder: Path, files: bool) -> Path:
    text = SPEC.replace("REPO", "jsonl" if files else "memory")
    path = folder / "bench.yaml"
    path.write_text(text)
    loaded = parse_spec(text.encode(), path)
    assert loaded.spec is not None, [str(d) for d in loaded.diagnostics]
    module = folder / "bench.py"
    module.write_text(render(loaded, folder))
    return module


class Served:
    def __init__(self, module: Path, env: dict[str, str], n: int, workdir: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, str(module), "--serve", "--port", str(self.port)]
            + ["--max-runs", str(max(n, 1))],
            env=env,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


async def _request(port: int, method: str, path: str, body: bytes = b"") -> tuple[Any, Any]:
    """Send one HTTP/1.1 request on a new connection; the open (reader, writer)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
    return reader, writer


async def _one(port: int, index: int, first: list[float]) -> bool:
    """POST a run, then read its event stream until agent_end (a raw asyncio client: an
    HTTP library's own CPU would be measured instead of the server's)."""
    sent = time.perf_counter()
    body = json.dumps({"prompt": f"run {index}"}).encode()
    reader, writer = await _request(port, "POST", "/v1/runs", body)
    answer = await reader.read()
    writer.close()
    run_id = json.loads(answer.split(b"\r\n\r\n", 1)[1])["run_id"]
    reader, writer = await _request(port, "GET", f"/v1/runs/{run_id}/events")
    seen = b""
    try:
        while chunk := await reader.read(65536):
            if not seen and b"data: " in chunk:
                first.append(time.perf_counter() - sent)
            seen = seen[-64:] + chunk
            if b'"type": "agent_end"' in seen:
                return True
        return False
    finally:
        writer.close()


async def _load(url: str, n: int) -> tuple[float, list[float], int]:
    port = int(url.rsplit(":", 1)[1])
    first: list[float] = []
    begin = time.perf_counter()
    done = await asyncio.gather(*(_one(port, i, first) for i in range(n)))
    wall = time.perf_counter() - begin
    return wall, first, sum(done)


async def _hold(url: str, n: int, pid: int) -> int:
    """Start n runs and read the server's RSS once all are working."""
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        await asyncio.gather(*(client.post("/v1/runs", json={"prompt": f"h{i}"}) for i in range(n)))
        peak = 0
        while True:
            health = (await client.get("/healthz")).json()
            peak = max(peak, _rss_kib(pid))
            if health["runs_working"] >= n or health["runs_working"] == 0:
                break
            await asyncio.sleep(0.05)
        peak = max(peak, _rss_kib(pid))
        while (await client.get("/healthz")).json()["runs_working"]:
            await asyncio.sleep(0.1)
    return peak


def _in_process(module: Path, n: int, env: dict[str, str]) -> float:
    code = f"""
import asyncio, importlib.util, time
from harnessc.runtime import AgentHarness
from harnessc.runtime.providers.clients import HttpClientPool
spec = importlib.util.spec_from_file_location("bench", {str(module)!r})
bench = importlib.util.module_from_spec(spec); spec.loader.exec_module(bench)
async def one(i, clients):
    harness = AgentHarness(bench.build_options(http_clients=clients))
    try:
        return (await harness.prompt(f"run {{i}}")).status
    finally:
        await harness.close()
async def main():
    clients = HttpClientPool()
    begin = time.perf_counter()
    statuses = await asyncio.gather(*(one(i, clients) for i in range({n})))
    wall = time.perf_counter() - begin
    await clients.aclose()
    assert all(s == "done" for s in statuses), statuses[:3]
    print(wall)
asyncio.run(main())
"""
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--hold-s", type=float, default=3)
    parser.add_argument("--files", action="store_true", help="session files instead of memory")
    args = parser.parse_args()
    delay = {"s": args.latency_ms / 1000}

    def reply(request: Any) -> ScriptedResponse:
        return ScriptedResponse.sse(openai_events(["hello ", "there"]), delay_s=delay["s"])

    with ProtocolServer() as model, tempfile.TemporaryDirectory() as tmp:
        model.set_handler(reply)
        folder = Path(tmp)
        module = _compile(folder, args.files)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(
            BENCH_BASE_URL=f"{model.url}/v1",
            BENCH_API_KEY="sk-bench",
            PYTHONPATH=str(REPO),
            XDG_DATA_HOME=str(folder / "data"),  # session files: not the user's
        )
        env.pop("HARNESSC_SERVE_TOKEN", None)
        served = Served(module, env, args.n, folder)
        try:
            cpu = _cpu_s(served.process.pid)
            wall, first, done = asyncio.run(_load(served.url, args.n))
            cpu = _cpu_s(served.process.pid) - cpu
        finally:
            served.stop()
        first.sort()
        p50 = statistics.median(first)
        p99 = first[min(len(first) - 1, int(len(first) * 0.99))]
        print(
            f"served: {args.n} runs ({done} done) in {wall:.2f}s: {args.n / wall:.0f} runs/s; "
            f"first event p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms "
            f"(model latency {args.latency_ms:.0f} ms); server CPU {cpu / args.n * 1000:.1f} ms "
            "per run"
        )
        delay["s"] = args.hold_s
        served = Served(module, env, args.n, folder)  # a fresh server: no earlier runs kept
        try:
            idle = _rss_kib(served.process.pid)
            peak = asyncio.run(_hold(served.url, args.n, served.process.pid))
        finally:
            served.stop()
        print(
            f"memory: idle {idle / 1024:.0f} MiB, {args.n} open runs {peak / 1024:.0f} MiB: "
            f"{(peak - idle) / args.n:.0f} KiB per open run"
        )
        delay["s"] = args.latency_ms / 1000
        wall = _in_process(module, args.n, env)
        print(f"in-process: {args.n} runs in {wall:.2f}s: {args.n / wall:.0f} runs/s")


if __name__ == "__main__":
    main()

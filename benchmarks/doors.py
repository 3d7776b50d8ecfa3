"""What a call costs through each door of one served agent (issue 47: the new features'
costs), side by side in one sitting: the native API, MCP (``/mcp``, the mcp SDK's own
client over streamable HTTP), A2A (``SendMessage`` JSON-RPC on ``/a2a``) and AG-UI.

One scripted model (benchmarks/serve_peers.py's, in a process of its own) answers each
request at once with a call of the ``add`` tool until the run's request holds --steps
tool results, then with a final text. benchmarks/peers/serve_agent_plain.yaml is
compiled and served (``--serve``, loopback, no token). For each door, after a warm-up,
--calls calls one after another (a new session each): the median and p90 wall time of
a call at the client, and the server's CPU per call (its /proc utime + stime over the
calls). Prints each door beside the native one as ratios, with the load average.

Usage: python benchmarks/doors.py [--calls 100] [--steps 1] [--only native,mcp,a2a,agui]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import serve_peers  # beside this script

DOORS = ["native", "mcp", "a2a", "agui"]


def _cpu_s(pid: int) -> float:
    fields = serve_peers._proc_stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _native(http: httpx.AsyncClient, url: str) -> None:
    started = await http.post(f"{url}/v1/runs", json={"prompt": "add 1 and 2"})
    started.raise_for_status()
    run_id = started.json()["run_id"]
    async with http.stream("GET", f"{url}/v1/runs/{run_id}/events") as events:
        async for _ in events.aiter_bytes():
            pass
    status = (await http.get(f"{url}/v1/runs/{run_id}")).json()
    if status["status"] != "done":
        raise RuntimeError(f"native run ended {status['status']}: {status['reason']}")


async def _a2a(http: httpx.AsyncClient, url: str) -> None:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "add 1 and 2"}],
            }
        },
    }
    answer = await http.post(f"{url}/a2a", json=request, headers={"A2A-Version": "1.0"})
    answer.raise_for_status()
    state = answer.json()["result"]["task"]["status"]["state"]
    if state != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"A2A task ended {state}")


async def _agui(http: httpx.AsyncClient, url: str) -> None:
    body = {
        "threadId": uuid.uuid4().hex,
        "runId": uuid.uuid4().hex,
        "state": None,
        "messages": [{"id": "m1", "role": "user", "content": "add 1 and 2"}],
        "tools": [],
        "context": [],
        "forwardedProps": None,
    }
    seen = b""
    async with http.stream("POST", f"{url}/agui", json=body) as events:
        async for chunk in events.aiter_bytes():
            seen += chunk
    if b"RUN_FINISHED" not in seen:
        raise RuntimeError("the AG-UI stream ended without RUN_FINISHED")


async def _measure(
    name: str, url: str, pid: int, calls: int, warm: int
) -> tuple[list[float], float]:
    """(seconds per call, server CPU seconds per call)."""
    async with httpx.AsyncClient(timeout=60) as http:
        if name == "mcp":
            import httpx2
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(timeout=60) as http2:
                transport = streamable_http_client(f"{url}/mcp", http_client=http2)
                async with Client(transport, read_timeout_seconds=60) as client:
                    tool = (await client.list_tools()).tools[0].name

                    async def one() -> None:
                        result = await client.call_tool(tool, {"prompt": "add 1 and 2"})
                        if result.is_error:
                            raise RuntimeError(f"MCP call failed: {result.content}")

                    return await _timed(one, pid, calls, warm)
        door: dict[str, Callable[[httpx.AsyncClient, str], Awaitable[None]]] = {
            "native": _native,
            "a2a": _a2a,
            "agui": _agui,
        }

        async def call() -> None:
            await door[name](http, url)

        return await _timed(call, pid, calls, warm)


async def _timed(
    one: Callable[[], Awaitable[None]], pid: int, calls: int, warm: int
) -> tuple[list[float], float]:
    for _ in range(warm):
        await one()
    cpu = _cpu_s(pid)
    took = []
    for _ in range(calls):
        started = time.perf_counter()
        await one()
        took.append(time.perf_counter() - started)
    return took, (_cpu_s(pid) - cpu) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--warm", type=int, default=10)
    parser.add_argument("--steps", type=int, default=1, help="tool steps per run")
    parser.add_argument("--only", default="", help="comma-separated: " + ",".join(DOORS))
    args = parser.parse_args()
    wanted = [d for d in args.only.split(",") if d] or DOORS
    rows: dict[str, tuple[list[float], float]] = {}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        module = serve_peers.compile_agent(Path(tmp) / "generated", serve_peers.PLAIN_SPEC)
        model = serve_peers.ModelProcess(args.steps, 0.0)
        port = serve_peers._free_port()
        env = {
            **os.environ,
            "PYTHONPATH": str(serve_peers.REPO),
            "BENCH_BASE_URL": f"{model.url}/v1",
            "OPENAI_API_KEY": "sk-bench-dummy",
            "XDG_DATA_HOME": str(Path(tmp) / "data"),
        }
        env.pop("HARNESSC_SERVE_TOKEN", None)
        log = Path(tmp) / "serve.log"
        with log.open("w") as out:
            server = subprocess.Popen(
                [sys.executable, str(module), "--serve", "--port", str(port)],
                cwd=serve_peers.PEERS_DIR,
                env=env,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the server did not start:\n{log.read_text()[-2000:]}")
                time.sleep(0.2)
            for name in wanted:
                print(f"  {name} ...", flush=True)
                rows[name] = asyncio.run(_measure(name, url, server.pid, args.calls, args.warm))
        finally:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            model.stop()
    after = os.getloadavg()
    print(
        f"\none served agent, {args.steps} tool step(s) + 1 answer per call, model at once; "
        f"{args.calls} calls per door, one at a time"
    )
    print(f"{'door':<8} {'median ms':>9} {'p90 ms':>7} {'CPU ms/call':>11}  vs native")
    base = rows.get("native")
    for name, (took, cpu) in rows.items():
        median = statistics.median(took) * 1000
        p90 = statistics.quantiles(took, n=10)[-1] * 1000
        versus = ""
        if base is not None and name != "native":
            versus = (
                f"{median / (statistics.median(base[0]) * 1000):.2f}x wall, "
                f"{cpu / base[1]:.2f}x CPU"
            )
        print(f"{name:<8} {median:>9.1f} {p90:>7.1f} {cpu * 1000:>11.2f}  {versus}")
    print(
        f"load average: {' '.join(f'{x:.1f}' for x in load)} -> "
        f"{' '.join(f'{x:.1f}' for x in after)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

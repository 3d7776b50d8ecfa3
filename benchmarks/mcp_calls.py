"""MCP costs: start-up without MCP, time to the first model request without MCP and
with one stdio server (the SDK's notes server), and the per-call overhead of an MCP tool through harnessc against the SDK's own
client calling the same server in the same run.

    python benchmarks/mcp_calls.py [--calls 200]

Targets: start-up without MCP equal to an agent that never heard of MCP (the MCP
package is not imported); per stdio call within 1.5x of the SDK's client and under
5 ms. Prints figures; asserts nothing.
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
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# This file is named like the SDK's package: keep its folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
SERVER = REPO / "tests" / "mcp" / "notes_server.py"

START = """
import time, sys, importlib.util
t = time.perf_counter()
spec = importlib.util.spec_from_file_location("agent", {path!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
from harnessc.runtime import AgentHarness
from harnessc.runtime.session import Session
AgentHarness(module.build_options(session=Session()))
print(time.perf_counter() - t, "mcp" in sys.modules, "harnessc.runtime.mcp" in sys.modules)
"""


def start_up(module: Path, runs: int = 7) -> tuple[float, bool, bool]:
    times = []
    sdk = package = False
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", START.format(path=str(module))],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout.split()
        times.append(float(out[0]))
        sdk, package = out[1] == "True", out[2] == "True"
    return statistics.median(times), sdk, package


def first_request(runs: int = 3, *, with_server: bool = True) -> float:
    """Process start to the first model request, with one stdio server declared or none.

    The first request lists the servers' tools, so it waits for them: the difference
    is the server's start (its Python and SDK import, initialize, tools/list) where it
    does not overlap the agent's own import of the SDK."""
    from harnessc.compiler.render import render
    from harnessc.spec import parse_spec
    from harnessc.testing import ProtocolServer, ScriptedResponse, openai_events

    mcp = f"mcp:\n  notes: {{command: {sys.executable}, args: [{SERVER}]}}\n" if with_server else ""
    spec = f"""\
version: 1
name: bench
models:
  main: {{provider: openai, id: m, base_url: "${{BENCH_URL}}", api_key_env: BENCH_KEY}}
{mcp}session: {{repo: memory}}
"""
    times = []
    with tempfile.TemporaryDirectory() as tmp, ProtocolServer() as server:
        path = Path(tmp) / "bench.yaml"
        path.write_text(spec)
        module = Path(tmp) / "bench.py"
        module.write_text(render(parse_spec(spec.encode(), path), tmp))
        env = {
            **os.environ,
            "BENCH_URL": f"{server.url}/v1",
            "BENCH_KEY": "k",
            "XDG_DATA_HOME": str(Path(tmp) / "data"),  # sessions and MCP logs: not the user's
        }
        for _ in range(runs):
            server.reset()
            server.enqueue(ScriptedResponse.sse(openai_events(["ok"])))
            started = time.perf_counter()
            process = subprocess.Popen(
                [sys.executable, str(module), "hi"],
                cwd=tmp,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            server.wait_for_requests(1, timeout_s=120)
            times.append(time.perf_counter() - started)
            process.wait(60)
    return statistics.median(times)


async def per_call(calls: int) -> tuple[float, float]:
    """Milliseconds per call: harnessc's MCP tool, then the SDK's ClientSession."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from harnessc.runtime.core.commands import CommandRegistry
    from harnessc.runtime.core.signal import AbortSignal
    from harnessc.runtime.mcp import McpServerConfig, McpToolset

    class Host:
        def __init__(self) -> None:
            self.tools: dict[str, Any] = {}
            self.commands = CommandRegistry()

        def on(self, name: str, handler: Any) -> None:
            pass

        def add_tools(self, tools: Any, activate: bool = True) -> None:
            self.tools.update({t.name: t for t in tools})

        async def notice(self, *args: Any) -> None:
            pass

        def on_close(self, callback: Any) -> None:
            pass

    with tempfile.TemporaryDirectory() as tmp:
        toolset = McpToolset(
            [McpServerConfig(name="notes", command=sys.executable, args=[str(SERVER)])],
            log_dir=tmp,
        )
        host = Host()
        toolset.install(host)
        await toolset.start()
        tool = host.tools["mcp__notes__search"]
        params = {"query": "x"}
        for _ in range(20):
            await tool.execute("w", params, AbortSignal(), lambda _: None, None)
        started = time.perf_counter()
        for i in range(calls):
            await tool.execute(str(i), params, AbortSignal(), lambda _: None, None)
        ours = (time.perf_counter() - started) / calls * 1000
        await toolset.aclose()

        server = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
        with open(Path(tmp) / "sdk.log", "w") as errlog:
            async with stdio_client(server, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await session.list_tools()
                    for _ in range(20):
                        await session.call_tool("search", params)
                    started = time.perf_counter()
                    for _ in range(calls):
                        await session.call_tool("search", params)
                    sdk = (time.perf_counter() - started) / calls * 1000
    return ours, sdk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}")
    plain, sdk, package = start_up(REPO / "generated" / "hello.py")
    print(
        f"start-up, no MCP (hello):        {plain * 1000:7.1f} ms  (mcp SDK imported: {sdk}, harnessc.runtime.mcp: {package})"
    )
    declared, sdk, package = start_up(REPO / "generated" / "notes.py")
    print(
        f"start-up, MCP declared (notes):  {declared * 1000:7.1f} ms  (mcp SDK imported: {sdk}; servers start at the first run)"
    )
    bare, served = first_request(with_server=False), first_request()
    print(f"first model request, no MCP:         {bare * 1000:7.1f} ms")
    print(f"first model request, 1 stdio server: {served * 1000:7.1f} ms")
    ours, theirs = asyncio.run(per_call(args.calls))
    print(
        f"per stdio call: harnessc {ours:.2f} ms, SDK client {theirs:.2f} ms, ratio {ours / theirs:.2f}"
    )


if __name__ == "__main__":
    main()

"""Harness overhead per turn: a 200-turn tool loop with the scripted provider and a no-op tool.

Prints microseconds of harness overhead per turn (target: under 300 us) and the cold
import time of ``harnessc.runtime`` (target: under 150 ms), and checks that importing
the runtime pulls in neither pydantic, yaml nor jinja2.

    python benchmarks/loop_overhead.py
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from typing import Any

TURNS = 200


def import_time() -> tuple[float, list[str]]:
    code = (
        "import time, sys; t = time.perf_counter(); import harnessc.runtime; "
        "d = time.perf_counter() - t; "
        "print(d); print(','.join(m for m in ('pydantic', 'yaml', 'jinja2') if m in sys.modules))"
    )
    runs = []
    heavy: list[str] = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        seconds, mods = (
            out.stdout.splitlines()[:2] if "\n" in out.stdout.strip() else (out.stdout.strip(), "")
        )
        runs.append(float(seconds))
        heavy = [m for m in mods.split(",") if m]
    return statistics.median(runs), heavy


async def one_run() -> float:
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, Session
    from harnessc.runtime.providers.scripted import ScriptedProvider, reply_text, reply_tool_calls
    from harnessc.runtime.tools.base import Tool, text_result

    async def noop(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        return text_result("ok")

    replies: list[Any] = [reply_tool_calls([("noop", {})]) for _ in range(TURNS - 1)] + [
        reply_text("done")
    ]
    provider = ScriptedProvider(replies, chunk_size=64)
    harness = AgentHarness(
        AgentHarnessOptions(
            session=Session(),
            models={"m": Model(id="bench", api="scripted")},
            tools=[Tool("noop", "Does nothing.", {"type": "object", "properties": {}}, noop)],
            provider=provider,
        )
    )
    events = 0

    def listener(event: Any) -> None:
        nonlocal events
        events += 1

    harness.subscribe(listener)
    started = time.perf_counter()
    result = await harness.prompt("loop")
    elapsed = time.perf_counter() - started
    assert result.status == "done", result
    return elapsed


def main() -> None:
    seconds, heavy = import_time()
    print(
        f"import harnessc.runtime (cold, median of 5): {seconds * 1000:.1f} ms  (target < 150 ms)"
    )
    print(f"heavy modules imported by the runtime: {', '.join(heavy) or 'none'}")
    runs = [asyncio.run(one_run()) for _ in range(5)]
    per_turn = statistics.median(runs) / TURNS * 1e6
    print(f"{TURNS}-turn tool loop: median {statistics.median(runs) * 1000:.1f} ms over 5 runs")
    print(f"harness overhead per turn: {per_turn:.0f} us  (target < 300 us)")


if __name__ == "__main__":
    main()

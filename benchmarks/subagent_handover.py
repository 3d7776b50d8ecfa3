"""The cost of a hand-over to a sub-agent, beside a plain tool call.

Two loops of N turns with the scripted provider: one calls a no-op tool each turn, the
other hands a task to a sub-agent each turn (the sub-agent answers in one reply). The
difference per turn is what starting, running and closing a sub-agent costs (its
harness, its session, its events passed up, its result), without any network. Memory:
the bytes allocated and kept (tracemalloc) per hand-over, and the peak of one.

    python benchmarks/subagent_handover.py
"""

from __future__ import annotations

import asyncio
import statistics
import time
import tracemalloc
from typing import Any

TURNS = 100


def _options(replies: list[Any], *, subagent: bool) -> Any:
    from harnessc.runtime import AgentHarnessOptions, Model, Session
    from harnessc.runtime.agent.subagents import SubAgent, SubAgents
    from harnessc.runtime.providers.scripted import ScriptedProvider
    from harnessc.runtime.tools.base import Tool, text_result

    async def noop(call_id: str, params: Any, signal: Any, on_update: Any, ctx: Any) -> Any:
        return text_result("ok")

    extensions: list[Any] = []
    if subagent:
        helper = SubAgent("helper", "Answers in one reply.", system_prompt="You help.")
        extensions.append(SubAgents([helper], agent="lead"))
    return AgentHarnessOptions(
        session=Session(),
        models={"m": Model(id="bench", api="scripted")},
        tools=[Tool("noop", "Does nothing.", {"type": "object", "properties": {}}, noop)],
        provider=ScriptedProvider(replies, chunk_size=64),
        extensions=extensions,
    )


def _replies(subagent: bool) -> list[Any]:
    from harnessc.runtime.providers.scripted import reply_text, reply_tool_calls

    out: list[Any] = []
    for _ in range(TURNS - 1):
        if subagent:
            args = {"subagent_type": "helper", "description": "help", "prompt": "help me"}
            out.append(reply_tool_calls([("task", args)]))
            out.append(reply_text("helped"))  # the sub-agent's one reply
        else:
            out.append(reply_tool_calls([("noop", {})]))
    out.append(reply_text("done"))
    return out


async def one_run(subagent: bool, trace: bool) -> tuple[float, int, int]:
    from harnessc.runtime import AgentHarness

    harness = AgentHarness(_options(_replies(subagent), subagent=subagent))
    if trace:
        tracemalloc.start()
        tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0] if trace else 0
    started = time.perf_counter()
    result = await harness.prompt("loop")
    elapsed = time.perf_counter() - started
    kept, peak = tracemalloc.get_traced_memory() if trace else (0, 0)
    tracemalloc.stop()
    assert result.status == "done", result
    await harness.close()
    return elapsed, kept - before, peak - before


def main() -> None:
    rows = {}
    for subagent in (False, True):
        timed = [asyncio.run(one_run(subagent, False)) for _ in range(5)]
        traced = [asyncio.run(one_run(subagent, True)) for _ in range(3)]
        rows[subagent] = (
            statistics.median(r[0] for r in timed) / TURNS,
            statistics.median(r[1] for r in traced) / TURNS,
            statistics.median(r[2] for r in traced),
        )
    plain, handover = rows[False], rows[True]
    print(f"{TURNS}-turn loops: time median of 5 runs, memory median of 3 traced runs")
    print(f"plain tool call: {plain[0] * 1e6:8.0f} us/turn  {plain[1] / 1024:6.1f} KiB kept/turn")
    print(
        f"hand-over:       {handover[0] * 1e6:8.0f} us/turn  {handover[1] / 1024:6.1f} KiB kept/turn"
    )
    print(
        f"a hand-over costs {(handover[0] - plain[0]) * 1e6:.0f} us and "
        f"{(handover[1] - plain[1]) / 1024:.1f} KiB more than a tool call "
        f"(peak of the whole loop: {handover[2] / 1024:.0f} KiB vs {plain[2] / 1024:.0f} KiB)"
    )


if __name__ == "__main__":
    main()

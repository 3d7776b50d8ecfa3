"""One long session (issue 35): CPU per model step against the turn number.

One harness, one session (a session file, or in memory with ``--memory``), TURNS
prompts one after another on one event loop. Each turn is a tool step (one call of a
python tool returning about ``--result-chars`` characters) and a final answer, against
harnessc's local ProtocolServer (in this process, on its own thread) answering every
model call at once. The model's context window is small (``--window`` tokens, 4,000
reserved), so the session's own compaction (a summary request each time) summarises it again and again as it grows:
the context rises to about the window, falls back to ``keep_recent_tokens`` and rises
again.

Printed per block of ``--block`` turns: the event loop thread's CPU per model step
(``time.thread_time``: the harness's own work and the kernel's sending of the request,
not the server's, which runs on another thread), the part of it spent building the
request (history to encoded body: ``HttpProvider.prepare``), the context's length in
messages and the request body's size at the block's last step, and the summary
requests made in the block. A warm-up turn
(imports made on first use) comes first and is not counted. A step whose cost grows
with the session shows as a CPU column that rises with the context column; a step
that costs the same at any length shows as a flat one.

Usage: python benchmarks/long_session.py [--turns 200] [--block 20] [--window 64000]
       [--result-chars 2000] [--memory] [--profile FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SUMMARY_MARK = "You write summaries of conversations"


def _handler(result_chars: int, stats: dict[str, Any]) -> Any:
    from harnessc.testing import ScriptedResponse
    from harnessc.testing.streams import openai_events, openai_tool_call_events

    def reply(request: Any) -> Any:
        body = request.json
        messages = body["messages"]
        stats["body_bytes"] = len(request.body)
        stats["messages"] = len(messages)
        usage = (len(request.body) // 4, 20, 0)  # what a model reports: the prompt's tokens
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        if SUMMARY_MARK in system:
            stats["summaries"] = stats.get("summaries", 0) + 1
            text = "## Goal\nAdd numbers.\n## Progress\nMany sums were made. " * 4
            return ScriptedResponse.sse(openai_events([text], usage=usage), per_chunk=100)
        last = messages[-1]
        if last["role"] == "tool":
            answer = f"The sum is {last['content'][:12]}."
            return ScriptedResponse.sse(openai_events([answer], usage=usage))
        turn = len(messages)
        arguments = json.dumps({"a": turn, "b": result_chars})
        call = (f"call_{turn}", "pad", arguments)
        events = openai_tool_call_events([call], pieces=1, usage=usage)
        return ScriptedResponse.sse(events, per_chunk=100)

    return reply


def pad(a: int, b: int) -> str:
    """A result of ``b`` characters that starts with ``a + 1``.

    Args:
        a: the number to add one to.
        b: the result's length in characters.
    """
    head = str(a + 1)
    return head + " " + "lorem ipsum dolor sit amet " * max(0, (b - len(head)) // 27)


async def _run(args: argparse.Namespace, url: str, stats: dict[str, Any]) -> list[str]:
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
    from harnessc.runtime.compaction.trigger import CompactionSettings
    from harnessc.runtime.providers.http import HttpProvider
    from harnessc.runtime.session import JsonlSessionRepo, Session
    from harnessc.runtime.tools import python_tool

    prepare = HttpProvider.prepare

    async def timed_prepare(self: Any, request: Any, out: Any) -> None:
        # The request's build: history -> wire messages -> the encoded body (no hook
        # runs here, so the await does not suspend: thread time is the build's own).
        t0 = time.thread_time()
        try:
            await prepare(self, request, out)
        finally:
            stats["build"] = stats.get("build", 0.0) + time.thread_time() - t0

    HttpProvider.prepare = timed_prepare  # type: ignore[method-assign]
    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        session = Session() if args.memory else JsonlSessionRepo(Path(tmp)).create(cwd=tmp)
        options = AgentHarnessOptions(
            session=session,
            models={
                "main": Model(
                    id="bench-model",
                    api="openai-completions",
                    provider="openai",
                    base_url=url,
                    api_key_env="OPENAI_API_KEY",
                    context_window=args.window,
                ),
            },
            model="main",
            tools=[python_tool(pad)],
            system_prompt="You pad numbers with the pad tool.",
        )
        harness = AgentHarness(options)
        harness.compaction_settings = CompactionSettings(
            reserve_tokens=4000, keep_recent_tokens=args.window // 4
        )
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile()
        try:
            cpu = 0.0
            steps = 0
            summaries = 0
            stats["build"] = 0.0
            await harness.prompt("Warm-up: pad the number 0, please.")  # first-use imports
            for turn in range(1, args.turns + 1):
                before = stats.get("requests", 0)
                if profiler is not None:
                    profiler.enable()
                t0 = time.thread_time()
                result = await harness.prompt(f"Turn {turn}: pad the number {turn}, please. " * 8)
                cpu += time.thread_time() - t0
                if profiler is not None:
                    profiler.disable()
                if result.status != "done":
                    raise RuntimeError(f"turn {turn} ended {result.status}: {result.reason}")
                steps += stats["requests"] - before
                if turn % args.block == 0:
                    done = stats.get("summaries", 0)
                    per_step = 1000 / max(1, steps)
                    rows.append(
                        f"{turn - args.block + 1:>4}-{turn:<4} {cpu * per_step:>11.2f} "
                        f"{stats['build'] * per_step:>8.3f} "
                        f"{len(harness.messages):>9} {stats['body_bytes'] / 1024:>9.1f} "
                        f"{done - summaries:>9}"
                    )
                    cpu, steps, summaries, stats["build"] = 0.0, 0, done, 0.0
        finally:
            await harness.close()
            if profiler is not None:
                profiler.dump_stats(args.profile)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--window", type=int, default=64000, help="context window, tokens")
    parser.add_argument("--result-chars", type=int, default=2000)
    parser.add_argument("--memory", action="store_true", help="an in-memory session")
    parser.add_argument("--profile", default="", help="write a cProfile of the turns to FILE")
    args = parser.parse_args()
    import os

    os.environ["OPENAI_API_KEY"] = "sk-bench-dummy"
    from harnessc.testing import ProtocolServer

    stats: dict[str, Any] = {}
    handler = _handler(args.result_chars, stats)

    def counted(request: Any) -> Any:
        stats["requests"] = stats.get("requests", 0) + 1
        return handler(request)

    with ProtocolServer() as server:
        server.set_handler(counted)
        rows = asyncio.run(_run(args, f"{server.url}/v1", stats))
    print(
        f"{args.turns} turns (a tool step and an answer each), window {args.window} tokens, "
        f"{'in-memory session' if args.memory else 'session file'}"
    )
    print(
        f"{'turns':<9} {'CPU ms/step':>11} {'build ms':>8} {'messages':>9} {'body KiB':>9} "
        f"{'summaries':>9}"
    )
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a hand-over to a remote A2A agent costs beside the same agent run locally (issue
47: the new features' costs), side by side in one sitting.

One agent, benchmarks/peers/serve_agent_plain.yaml compiled by ``harnessc build``, is
the sub-agent both ways; one scripted model (benchmarks/serve_peers.py's, in a process
of its own) answers each of its requests at once with a final text (--steps tool steps
before it). A lead harness in this process hands a task to it on each of --turns turns
(its own replies scripted, no network):

- ``local``: the sub-agent is the generated module (``SubAgent(module=...)``): its
  harness and session are made in the lead's process for each hand-over;
- ``a2a``: the same module served (``--serve``, loopback, no token) and named by its
  A2A address (``SubAgent(remote=RemoteA2A(url))``): the a2a-sdk's client sends the
  task and streams its updates.

Per hand-over: the lead's wall time (median over --rounds loops), the lead process's
CPU, the served agent's CPU (its /proc utime + stime) and the two together, and the
remote one beside the local one as ratios. Run the two alternately; the load average is
printed with them. Stops every process it started and leaves no files.

Usage: python benchmarks/a2a_handover.py [--turns 50] [--rounds 5] [--steps 0]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import serve_peers  # beside this script

KINDS = ("local", "a2a")


def _lead(turns: int, judge: Any) -> Any:
    from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model, Session
    from harnessc.runtime.agent.subagents import SubAgents
    from harnessc.runtime.providers.scripted import (
        ScriptedProvider,
        reply_text,
        reply_tool_calls,
    )

    args = {"subagent_type": "judge", "description": "add", "prompt": "add 1 and 2"}
    replies = [reply_tool_calls([("task", args)]) for _ in range(turns)]
    replies.append(reply_text("done"))
    return AgentHarness(
        AgentHarnessOptions(
            session=Session(),
            models={"m": Model(id="lead", api="scripted")},
            provider=ScriptedProvider(replies, chunk_size=64),
            extensions=[SubAgents([judge], agent="lead")],
        )
    )


async def _loop(turns: int, judge: Any) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of ``turns`` hand-overs."""
    harness = _lead(turns, judge)
    cpu = time.process_time()
    started = time.perf_counter()
    result = await harness.prompt("hand it over")
    took = time.perf_counter() - started
    cpu = time.process_time() - cpu
    await harness.close()
    if result.status != "done":
        raise SystemExit(f"the lead ended {result.status}: {result.reason}")
    ends = [
        m
        for m in result.messages
        if getattr(m, "role", "") == "toolResult" and getattr(m, "is_error", False)
    ]
    if ends:
        raise SystemExit(f"a hand-over failed: {ends[0]}")
    return took, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50, help="hand-overs per loop")
    parser.add_argument("--rounds", type=int, default=5, help="loops of each kind")
    parser.add_argument("--steps", type=int, default=0, help="the sub-agent's tool steps")
    args = parser.parse_args()
    from harnessc.runtime.agent.remote_a2a import RemoteA2A
    from harnessc.runtime.agent.subagents import SubAgent

    load = os.getloadavg()
    rows: dict[str, list[tuple[float, float, float]]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        module = serve_peers.compile_agent(Path(tmp) / "generated", serve_peers.PLAIN_SPEC)
        model = serve_peers.ModelProcess(args.steps, 0.0)
        served = serve_peers.ServerKind(
            "harnessc-plain",
            "/a2a",
            command=[sys.executable, str(module), "--serve", "--port", "PORT"],
            env={"PYTHONPATH": str(serve_peers.REPO)},
        )
        os.environ.update(BENCH_BASE_URL=f"{model.url}/v1", OPENAI_API_KEY="sk-bench-dummy")
        server = serve_peers.Running(served, model.url, Path(tmp), 1)
        url = f"http://127.0.0.1:{server.port}"
        judges = {
            "local": SubAgent("judge", "Adds numbers.", module=module),
            "a2a": SubAgent("judge", "Adds numbers.", remote=RemoteA2A(url)),
        }
        cwd = os.getcwd()
        os.chdir(serve_peers.PEERS_DIR)  # where the local module finds its python tools
        sys.path.insert(0, str(serve_peers.PEERS_DIR))
        try:
            for kind in KINDS:  # a warm-up of each
                asyncio.run(_loop(3, judges[kind]))
            for _ in range(args.rounds):
                for kind in KINDS:
                    spent = serve_peers.cpu_s(server.proc.pid)
                    took, cpu = asyncio.run(_loop(args.turns, judges[kind]))
                    spent = serve_peers.cpu_s(server.proc.pid) - spent
                    rows[kind].append((took / args.turns, cpu / args.turns, spent / args.turns))
        finally:
            os.chdir(cwd)
            server.stop()
            model.stop()
    after = os.getloadavg()
    print(
        f"\n{args.turns} hand-overs per loop, {args.rounds} loops of each kind, run alternately; "
        f"the sub-agent makes {args.steps} tool step(s) + 1 answer, the model answers at once"
    )
    print(f"{'kind':<6} {'wall ms':>8} {'lead CPU ms':>11} {'served CPU ms':>13} {'CPU ms':>7}")
    medians: dict[str, tuple[float, float, float]] = {}
    for kind in KINDS:
        wall = statistics.median(r[0] for r in rows[kind]) * 1000
        lead = statistics.median(r[1] for r in rows[kind]) * 1000
        served = statistics.median(r[2] for r in rows[kind]) * 1000
        medians[kind] = (wall, lead, lead + served)
        print(f"{kind:<6} {wall:>8.2f} {lead:>11.2f} {served:>13.2f} {lead + served:>7.2f}")
    local, remote = medians["local"], medians["a2a"]
    print(
        f"a remote hand-over: {remote[0] / local[0]:.2f}x the wall time of a local one, "
        f"{remote[2] / local[2]:.2f}x its CPU (lead + served agent), "
        f"+{remote[0] - local[0]:.1f} ms"
    )
    print(
        f"load average: {' '.join(f'{x:.1f}' for x in load)} -> "
        f"{' '.join(f'{x:.1f}' for x in after)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

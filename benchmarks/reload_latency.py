"""Hot-reload latency: time from writing a SKILL.md to the watcher's on_change callback,
and to the harness's resources_update event. Prints the median of 20 (and p90, max).

    python benchmarks/reload_latency.py [--runs 20] [--debounce-ms 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.providers.scripted import ScriptedProvider
from harnessc.runtime.resources import ResourceWatcher, load_resources


def _skill(i: int) -> str:
    return f"---\nname: bench\ndescription: revision {i}\n---\nBody {i}.\n"


def _summary(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    return (
        f"{label:<34} median {statistics.median(ordered):7.1f} ms   "
        f"p90 {p90:7.1f} ms   max {ordered[-1]:7.1f} ms   (n={len(ordered)})"
    )


async def _settle() -> None:
    # let the watcher finish its start-up tick so it is watching when we write
    await asyncio.sleep(0.4)


async def bench_watcher(root: Path, runs: int, debounce_ms: int) -> list[float]:
    skill_file = root / "bench" / "SKILL.md"
    skill_file.parent.mkdir(parents=True, exist_ok=True)
    skill_file.write_text(_skill(0))
    queue: asyncio.Queue[float] = asyncio.Queue()
    watcher = ResourceWatcher(
        [root], [], lambda r, d: queue.put_nowait(time.perf_counter()), debounce_ms=debounce_ms
    )
    await watcher.start()
    await _settle()
    samples: list[float] = []
    for i in range(1, runs + 1):
        started = time.perf_counter()
        skill_file.write_text(_skill(i))
        done = await asyncio.wait_for(queue.get(), 10)
        samples.append((done - started) * 1000)
        await asyncio.sleep(0.05)
        while not queue.empty():
            queue.get_nowait()
    await watcher.stop()
    return samples


async def bench_harness(root: Path, runs: int) -> list[float]:
    skill_file = root / "bench" / "SKILL.md"
    skill_file.parent.mkdir(parents=True, exist_ok=True)
    skill_file.write_text(_skill(0))
    harness = AgentHarness(
        AgentHarnessOptions(
            models={"main": Model(id="scripted", api="scripted")},
            provider=ScriptedProvider([]),
            resources=load_resources(skills=[root]),
        )
    )
    queue: asyncio.Queue[float] = asyncio.Queue()
    harness.on("resources_update", lambda event: queue.put_nowait(time.perf_counter()))
    await harness.watch_resources()
    await _settle()
    samples: list[float] = []
    for i in range(1, runs + 1):
        started = time.perf_counter()
        skill_file.write_text(_skill(i))
        done = await asyncio.wait_for(queue.get(), 10)
        samples.append((done - started) * 1000)
        await asyncio.sleep(0.05)
        while not queue.empty():
            queue.get_nowait()
    await harness.close()
    return samples


async def main_async(runs: int, debounce_ms: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        watcher_samples = await bench_watcher(Path(tmp) / "a", runs, debounce_ms)
        print(_summary(f"write -> on_change (debounce {debounce_ms} ms)", watcher_samples))
        harness_samples = await bench_harness(Path(tmp) / "b", runs)
        print(_summary("write -> resources_update event", harness_samples))
    target = 400.0
    worst = max(statistics.median(watcher_samples), statistics.median(harness_samples))
    print(f"target: median under {target:.0f} ms -> {'met' if worst < target else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--debounce-ms", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(main_async(args.runs, args.debounce_ms))


if __name__ == "__main__":
    main()

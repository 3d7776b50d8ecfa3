"""Session store benchmarks: append, open + context, index build, search.

Run: python benchmarks/sessions.py [--quick]
Targets: open + context of a 10,000-entry session under 150 ms; search under 20 ms;
search in a 30 MB session of large messages made of the searched word under 1 s.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from harnessc.runtime.session import JsonlSessionRepo, SessionIndex

WORDS = (
    "refactor parser cache session index query token model budget compaction summary "
    "branch python rust sqlite search thread lock file write read edit test failure "
    "network retry timeout stream event hook plugin config schema validate deploy build "
    "docker kubernetes latency memory profile benchmark regression module import package"
).split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def turn_messages(rng: random.Random, i: int) -> list:
    """A user prompt, a tool-calling reply, its result and a text reply (4 messages)."""
    usage = Usage(input=1200 + i, output=80, total_tokens=1280 + i)
    return [
        UserMessage(sentence(rng, 20)),
        AssistantMessage(
            content=[
                TextContent(sentence(rng, 12)),
                ToolCall(id=f"call_{i}", name="read", arguments={"path": f"src/m{i % 50}.py"}),
            ],
            api="openai-completions",
            provider="openai",
            model="gpt-4o",
            usage=usage,
            stop_reason="toolUse",
        ),
        ToolResultMessage(
            tool_call_id=f"call_{i}",
            tool_name="read",
            content=[TextContent(sentence(rng, 60))],
        ),
        AssistantMessage(
            content=[TextContent(sentence(rng, 30))],
            api="openai-completions",
            provider="openai",
            model="gpt-4o",
            usage=usage,
        ),
    ]


def bench_append(root: Path, n: int) -> str:
    rng = random.Random(1)
    repo = JsonlSessionRepo(root / "append")
    messages = [m for i in range(n // 4 + 1) for m in turn_messages(rng, i)][:n]
    session = repo.create(cwd="/bench/append")
    start = time.perf_counter()
    for message in messages:
        session.append_message(message)
    session.sync()
    elapsed = time.perf_counter() - start
    session.close()
    print(f"append {n:,} entries: {n / elapsed:,.0f} entries/s ({elapsed * 1000:.0f} ms)")
    assert session.path is not None
    return session.path


def bench_open(root: Path, path: str, n: int, repeat: int = 7) -> None:
    repo = JsonlSessionRepo(root / "append")
    times = []
    cpu = []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        session = repo.open(path)
        ctx = session.context()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        session.close()
        assert len(ctx.messages) == n
        del session, ctx  # free outside the timed part
    size = Path(path).stat().st_size / 1e6
    print(
        f"open + context of {n:,} entries ({size:.1f} MB): median {statistics.median(times) * 1000:.1f} ms"
        f", best {min(times) * 1000:.1f} ms, CPU median {statistics.median(cpu) * 1000:.1f} ms"
        " (target < 150 ms)"
    )


def bench_index(root: Path, sessions: int, per_session: int) -> SessionIndex:
    rng = random.Random(2)
    repo = JsonlSessionRepo(root / "many")
    for s in range(sessions):
        session = repo.create(cwd=f"/bench/project{s % 10}")
        for i in range(per_session // 4):
            for message in turn_messages(rng, i):
                session.append_message(message)
        for message in turn_messages(rng, 0)[: per_session % 4]:
            session.append_message(message)
        session.close()
    index = SessionIndex(root / "many")
    start = time.perf_counter()
    stats = index.refresh()
    elapsed = time.perf_counter() - start
    print(
        f"index {sessions:,} sessions x {per_session} messages: {elapsed:.2f} s "
        f"({stats.messages_added:,} user/assistant messages indexed)"
    )
    start = time.perf_counter()
    index.refresh()
    print(f"refresh with nothing changed: {(time.perf_counter() - start) * 1000:.1f} ms")
    return index


def bench_search(index: SessionIndex, queries: int = 100) -> None:
    rng = random.Random(3)
    forms = [
        lambda: rng.choice(WORDS),
        lambda: f"{rng.choice(WORDS)} {rng.choice(WORDS)}",
        lambda: f'"{rng.choice(WORDS)} {rng.choice(WORDS)}"',
        lambda: f"{rng.choice(WORDS)[:4]}*",
        lambda: f"{rng.choice(WORDS)} OR {rng.choice(WORDS)}",
    ]
    times = []
    cpu = []
    hits = 0
    for i in range(queries):
        query = forms[i % len(forms)]()
        start, start_cpu = time.perf_counter(), time.process_time()
        found = index.search(query, limit=10)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        hits += len(found)
    print(
        f"search ({queries} queries, limit 10): median {statistics.median(times) * 1000:.2f} ms, "
        f"p95 {sorted(times)[int(queries * 0.95)] * 1000:.2f} ms, "
        f"CPU median {statistics.median(cpu) * 1000:.2f} ms, {hits / queries:.1f} hits/query "
        "(target < 20 ms)"
    )


def bench_large_search(root: Path, megabytes: int) -> None:
    """Messages of 1 MB each of one repeated word, the worst case for FTS5's snippet()."""
    repo = JsonlSessionRepo(root / "large")
    session = repo.create(cwd="/bench/large")
    for i in range(megabytes):
        session.append_message(UserMessage(f"prompt{i} " + "word " * 200_000))
    session.close()
    index = SessionIndex(root / "large")
    start = time.perf_counter()
    index.refresh()
    indexed = time.perf_counter() - start
    times = {}
    for query in ("word", f"prompt{megabytes - 1}", '"word word"', "word*", "word OR prompt3"):
        start = time.perf_counter()
        found = index.search(query, limit=10)
        times[query] = time.perf_counter() - start
        assert found, query
    index.close()
    each = ", ".join(f"{query}: {seconds * 1000:.0f} ms" for query, seconds in times.items())
    print(
        f"search a {megabytes} MB session of {megabytes} messages of one repeated word "
        f"(indexed in {indexed:.1f} s): {each} (target < 1 s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    entries = 2_000 if args.quick else 10_000
    sessions = 100 if args.quick else 1_000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = bench_append(root, entries)
        bench_open(root, path, entries)
        index = bench_index(root, sessions, 50)
        bench_search(index)
        index.close()
        bench_large_search(root, 5 if args.quick else 30)


if __name__ == "__main__":
    main()

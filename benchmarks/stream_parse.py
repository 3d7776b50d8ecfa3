"""Stream-parsing throughput of each wire protocol, in deltas per second.

Builds a recorded 20,000-delta SSE stream per protocol in memory (the vendors'
framing, from harnessc.testing.streams), cuts it into network-sized chunks and feeds
it through the providers' own parsing path (SSEParser + the protocol's StreamState
+ MessageBuilder), without sockets. ``--http`` also streams each recording through
the real provider from the local protocol server, end to end.

``--long-line MB`` times one ``data:`` line of that size fed in 16 KiB chunks (the
decoder is linear; before it was quadratic: 25 MB took 12.6 s), with the line cap
raised so the line is parsed whole.

    python benchmarks/stream_parse.py [--deltas 20000] [--repeat 5] [--http] [--long-line 25]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable

from harnessc.runtime.core.messages import AssistantMessage, UserMessage
from harnessc.runtime.core.options import AgentHarnessStreamOptions, Model
from harnessc.runtime.providers.anthropic_messages import (
    AnthropicMessagesProvider,
    AnthropicStreamState,
)
from harnessc.runtime.providers.base import Context, ProviderRequest
from harnessc.runtime.providers.builder import MessageBuilder
from harnessc.runtime.providers.google_generative_ai import (
    GoogleGenerativeAIProvider,
    GoogleStreamState,
)
from harnessc.runtime.providers.http import HttpProvider, StreamState
from harnessc.runtime.providers.openai_completions import (
    OpenAICompletionsProvider,
    OpenAIStreamState,
)
from harnessc.runtime.providers.sse import SSEParser
from harnessc.testing import (
    AnthropicBlock,
    ProtocolServer,
    ScriptedResponse,
    anthropic_events,
    google_events,
    openai_events,
    openai_tool_call_events,
)

CHUNK_BYTES = 16 * 1024
WORDS = ["the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog. "]


def words(count: int) -> list[str]:
    return [WORDS[i % len(WORDS)] for i in range(count)]


def openai_recording(deltas: int) -> bytes:
    """90% text deltas, then two tool calls sharing the rest as argument fragments."""
    text = deltas * 9 // 10
    per_call = (deltas - text) // 2
    args = json.dumps({"path": "x" * (per_call * 3)})
    calls = [("call_1", "read", args), ("call_2", "read", args)]
    head = openai_events(words(text), done=False, usage=None)[:-1]  # drop the finish chunk
    tail = openai_tool_call_events(calls, pieces=per_call)[1:]  # drop its role chunk
    return b"".join(head + tail)


def anthropic_recording(deltas: int) -> bytes:
    """Thinking, text and a tool call in one message (20% / 70% / 10% of the deltas)."""
    thinking = deltas // 5
    tool = deltas // 10
    text = deltas - thinking - tool
    fragments = ['{"path": "'] + ["ab"] * (tool - 2) + ['"}']
    blocks = [
        AnthropicBlock("thinking", words(thinking), signature="c2ln"),
        AnthropicBlock("text", words(text)),
        AnthropicBlock("tool_use", fragments, id="toolu_1", name="read"),
    ]
    return b"".join(anthropic_events(blocks, stop_reason="tool_use"))


def google_recording(deltas: int) -> bytes:
    return b"".join(google_events(words(deltas)))


PROTOCOLS: dict[str, tuple[Callable[[int], bytes], Callable[[MessageBuilder], StreamState]]] = {
    "openai-completions": (openai_recording, OpenAIStreamState),
    "anthropic-messages": (anthropic_recording, AnthropicStreamState),
    "google-generative-ai": (google_recording, GoogleStreamState),
}


def parse_once(
    data: bytes, make_state: Callable[[MessageBuilder], StreamState]
) -> tuple[int, float, float]:
    """Feed ``data`` through the parsing path; returns (delta events, wall s, CPU s)."""
    chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)]
    started = time.perf_counter()
    cpu_started = time.process_time()
    builder = MessageBuilder(AssistantMessage())
    state = make_state(builder)
    parser = SSEParser()
    out = builder.out
    deltas = 0
    for chunk in chunks:
        for event, payload in parser.feed(chunk):
            state.handle(event, payload)
        for ev in out:
            if ev.type.endswith("_delta"):
                deltas += 1
        out.clear()
    for event, payload in parser.flush():
        state.handle(event, payload)
    state.end()
    builder.finish()
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    assert state.done, "the recording did not finish"
    return deltas, elapsed, cpu


def bench_parse(count: int, repeat: int) -> None:
    print(f"parse only (no sockets), {count} deltas per recording, best of {repeat}:")
    for api, (record, make_state) in PROTOCOLS.items():
        data = record(count)
        best = best_cpu = float("inf")
        deltas = 0
        for _ in range(repeat):
            deltas, elapsed, cpu = parse_once(data, make_state)
            best = min(best, elapsed)
            best_cpu = min(best_cpu, cpu)
        print(
            f"  {api:22s} {deltas:7d} deltas  {len(data) / 1e6:6.2f} MB  "
            f"{best * 1000:8.1f} ms  {deltas / best:12,.0f} deltas/s  "
            f"(CPU time: {deltas / max(best_cpu, 1e-9):,.0f} deltas/s)"
        )


PROVIDERS: dict[str, Callable[[], HttpProvider]] = {
    "openai-completions": OpenAICompletionsProvider,
    "anthropic-messages": AnthropicMessagesProvider,
    "google-generative-ai": GoogleGenerativeAIProvider,
}


def bench_http(count: int, repeat: int) -> None:
    print(f"end to end over HTTP (local protocol server), best of {repeat}:")
    with ProtocolServer() as server:
        for api, (record, _) in PROTOCOLS.items():
            data = record(count)
            chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)]
            server.set_handler(lambda _request, c=chunks: ScriptedResponse(chunks=list(c)))
            base = server.url + ("/v1" if api == "openai-completions" else "")
            model = Model(id="bench", api=api, base_url=base)
            provider = PROVIDERS[api]()

            async def run(
                provider: HttpProvider = provider, model: Model = model
            ) -> tuple[int, float]:
                best, deltas = float("inf"), 0
                for _ in range(repeat):
                    request = ProviderRequest(
                        model=model,
                        context=Context("", [UserMessage("go")]),
                        stream_options=AgentHarnessStreamOptions(max_retries=0),
                    )
                    started = time.perf_counter()
                    deltas = 0
                    final = ""
                    async for event in provider.stream(request):
                        if event.type.endswith("_delta"):
                            deltas += 1
                        final = event.type
                    assert final == "done", final
                    best = min(best, time.perf_counter() - started)
                await provider.aclose()
                return deltas, best

            deltas, best = asyncio.run(run())
            print(
                f"  {api:22s} {deltas:7d} deltas  {best * 1000:8.1f} ms  {deltas / best:12,.0f} deltas/s"
            )


def bench_long_line(megabytes: int) -> None:
    data = b"data: " + b"x" * (megabytes * 1_000_000) + b"\n\n"
    chunks = [data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES)]
    parser = SSEParser(max_line=len(data), max_event=len(data))
    started, cpu_started = time.perf_counter(), time.process_time()
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert len(events) == 1
    print(f"one {megabytes} MB data line in 16 KiB chunks: {elapsed:.3f} s ({cpu:.3f} s CPU)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--http", action="store_true", help="also measure end to end over HTTP")
    parser.add_argument("--long-line", type=int, default=0, metavar="MB")
    args = parser.parse_args()
    if args.long_line:
        bench_long_line(args.long_line)
    bench_parse(args.deltas, args.repeat)
    if args.http:
        bench_http(args.deltas, args.repeat)


if __name__ == "__main__":
    main()

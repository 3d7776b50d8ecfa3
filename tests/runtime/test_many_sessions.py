"""Many harnesses in one process, on one event loop, against the real local server.

Every session talks HTTP to the protocol server through one shared HttpClientPool,
runs a real python tool and writes its own session file; one of them is aborted while
its model call is in flight, and every other one still finishes with its own messages.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path
from typing import Any

from harnessc.runtime import AgentHarness, AgentHarnessOptions, Model
from harnessc.runtime.providers.transport import HttpClientPool
from harnessc.runtime.session import JsonlSessionRepo
from harnessc.runtime.tools import python_tool
from harnessc.testing import ProtocolServer, ScriptedResponse
from harnessc.testing.streams import openai_events, openai_tool_call_events

N = 200
STEPS = 2  # tool steps per session before the final answer
SLOW = 7  # the session that is aborted mid-call
_TAG = re.compile(r"session-(\d+)\b")


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


class Script:
    """Answers each session from its own history: STEPS calls to add, then a final text."""

    def __init__(self) -> None:
        self.release = threading.Event()  # the slow session's call waits on it
        self.slow_arrived = threading.Event()

    def __call__(self, request: Any) -> ScriptedResponse:
        body = request.json
        messages = body["messages"]
        user = next(m for m in messages if m["role"] == "user")
        text = user["content"] if isinstance(user["content"], str) else json.dumps(user)
        match = _TAG.search(text)
        assert match is not None, text
        tag = int(match.group(1))
        if tag == SLOW:
            self.slow_arrived.set()
            self.release.wait(10)  # held until the test has aborted the run
        done = [m for m in messages if m["role"] == "tool"]
        if len(done) < STEPS:
            args = json.dumps({"a": tag, "b": len(done)})
            events = openai_tool_call_events([(f"call_{tag}_{len(done)}", "add", args)])
        else:
            results = ",".join(str(m["content"]) for m in done)
            events = openai_events([f"session-{tag} results {results}"])
        return ScriptedResponse.sse(events)


def _options(server: ProtocolServer, clients: HttpClientPool, session: Any) -> Any:
    return AgentHarnessOptions(
        session=session,
        models={
            "main": Model(
                id="bench-model",
                api="openai-completions",
                provider="openai",
                base_url=f"{server.url}/v1",
            )
        },
        model="main",
        tools=[python_tool(add)],
        system_prompt="You add numbers.",
        http_clients=clients,
    )


def test_200_concurrent_sessions_are_separate_and_an_abort_touches_only_its_own(
    tmp_path: Path,
) -> None:
    script = Script()
    repo = JsonlSessionRepo(tmp_path / "sessions")

    async def main() -> tuple[list[Any], list[AgentHarness]]:
        clients = HttpClientPool(max_concurrent=32)
        harnesses = [
            AgentHarness(_options(server, clients, repo.create(cwd=str(tmp_path))))
            for _ in range(N)
        ]

        async def abort_slow() -> None:
            while not script.slow_arrived.is_set():
                await asyncio.sleep(0.01)
            harnesses[SLOW].abort("stop this one")
            script.release.set()

        aborter = asyncio.create_task(abort_slow())
        results = await asyncio.gather(
            *(h.prompt(f"Add for session-{i} please.") for i, h in enumerate(harnesses)),
            return_exceptions=True,
        )
        await aborter
        for harness in harnesses:
            await harness.close()  # never closes the shared clients
        assert not clients.connection_pool(server.url).closed  # still open
        await clients.aclose()
        return results, harnesses

    with ProtocolServer() as server:
        server.set_handler(script)
        results, harnesses = asyncio.run(main())
        requests = server.requests

    assert not [r for r in results if isinstance(r, BaseException)]
    assert results[SLOW].status == "aborted"
    for i, result in enumerate(results):
        if i == SLOW:
            continue
        assert result.status == "done", (i, result.status, result.reason)
        assert result.text == f"session-{i} results {i},{i + 1}"
        # Its own messages only: every tag in its context is its own.
        context = json.dumps([m.to_dict() for m in harnesses[i].messages])
        assert set(_TAG.findall(context)) == {str(i)}
    # One model call per step plus the final answer, and the slow session's one call.
    assert len(requests) == (N - 1) * (STEPS + 1) + 1
    # One shared pool: at most its 32 connections for all 200 sessions, reused (and one
    # more for the aborted call's, which closes with it and may be replaced).
    assert len({r.client_port for r in requests}) <= 32 + 1
    files = sorted((tmp_path / "sessions").rglob("*.jsonl"))
    assert len(files) == N
    assert {h.session.path for h in harnesses} == {str(path) for path in files}
    for i, harness in enumerate(harnesses):
        on_disk = repo.open(harness.session.path, read_only=True)
        assert on_disk.id == harness.session.id
        tags = set(_TAG.findall(json.dumps([e.to_dict() for e in on_disk.entries()])))
        assert tags == {str(i)}  # a session's file holds its own run only


def test_a_closed_harness_is_freed_at_once_not_by_the_cyclic_collector(tmp_path: Path) -> None:
    """Before: the hooks, the bus and the loop's steps held the harness, which held them,
    so a service's finished sessions stayed in memory until a full collection."""
    import gc
    import weakref

    repo = JsonlSessionRepo(tmp_path / "sessions")

    async def one(clients: HttpClientPool, index: int) -> tuple[Any, Any, str, int]:
        harness = AgentHarness(_options(server, clients, repo.create(cwd=str(tmp_path))))
        status = "not run"
        if index:  # the first one never runs
            status = (await harness.prompt(f"Add for session-{index} please.")).status
        await harness.close()
        count = len(harness.messages)  # still readable once closed
        return weakref.ref(harness), weakref.ref(harness.session), status, count

    async def main() -> list[tuple[bool, str, int]]:
        clients = HttpClientPool(max_concurrent=4)
        freed = []
        for index in range(3):
            harness, session, status, count = await one(clients, index)
            for _ in range(100):  # the fsync's worker thread lets go of the session soon after
                if harness() is None and session() is None:
                    break
                await asyncio.sleep(0.01)
            freed.append((harness() is None and session() is None, status, count))
        await clients.aclose()
        return freed

    with ProtocolServer() as server:
        server.set_handler(Script())
        gc.collect()
        gc.disable()
        try:
            freed = asyncio.run(main())
        finally:
            gc.enable()
    assert freed == [(True, "not run", 0), (True, "done", 6), (True, "done", 6)]


def test_an_idle_harness_makes_its_queues_and_its_sessions_leaf_maps_on_first_use() -> None:
    """A process holds a thousand mostly idle harnesses: the containers most never use
    are made when first needed, and the session keeps no instance dictionary."""
    import random

    from harnessc.runtime import Session

    harness = AgentHarness(
        AgentHarnessOptions(models={"main": Model(id="m", api="openai-completions")})
    )
    agent, session = harness._agent, harness.session
    assert not hasattr(session, "__dict__")
    assert (agent.steering, agent.follow_up) == (None, None)
    assert (session._leaf_ids, session._markers) == (None, None)

    harness.steer("left")
    harness.follow_up("then")
    assert [m.content for m in agent.steering or ()] == ["left"]
    assert [m.content for m in harness.clear_queues()] == ["left", "then"]
    assert (agent.steering, agent.follow_up) == (None, None)

    # Entry ids come from the process's own generator: seeding ``random`` repeats none.
    ids = []
    for _ in range(2):
        random.seed(7)
        ids.append(Session().append("session_info", name="x").id)
    assert ids[0] != ids[1]


def test_an_idle_harness_holds_no_hook_command_or_listener_container_of_its_own() -> None:
    """Harnesses without hooks, commands or subscribers (most of a service's) share the
    empty ones; the first handler, command or subscriber makes the harness its own."""
    options = {"models": {"main": Model(id="m", api="openai-completions")}}
    one, two = (
        AgentHarness(AgentHarnessOptions(**options)),
        AgentHarness(AgentHarnessOptions(**options)),
    )
    assert one._agent.hooks.handlers is two._agent.hooks.handlers == {}
    assert one.commands._commands is two.commands._commands == {}
    assert one._agent.bus.listeners == two._agent.bus.listeners == ()

    seen: list[str] = []
    unsubscribe = one.subscribe(lambda event: seen.append(event.type))
    one.on("turn_start", lambda event: None)
    one.commands.register("hi", "says hi", lambda args: "hi")
    assert two._agent.hooks.handlers == {} and "hi" not in two.commands
    assert two._agent.bus.listeners == () and len(one._agent.bus.listeners) == 1
    asyncio.run(one.notice("test", "hello"))
    unsubscribe()
    asyncio.run(one.notice("test", "again"))
    assert seen == ["notice"] and one._agent.bus.listeners == ()


def test_a_reply_that_spent_nothing_shares_the_empty_cost() -> None:
    from harnessc.runtime.core.messages import NO_COST, Usage
    from harnessc.runtime.core.options import ModelCost
    from harnessc.runtime.providers.builder import finalize_usage

    free, priced = Usage(input=10, output=5), Usage(input=10, output=5)
    finalize_usage(free, Model(id="m", api="openai-completions"))
    finalize_usage(priced, Model(id="m", api="x", cost=ModelCost(input=2.0, output=4.0)))
    assert free.cost is NO_COST and NO_COST.total == 0.0
    assert priced.cost is not NO_COST and priced.cost.total == (10 * 2.0 + 5 * 4.0) / 1e6
    assert NO_COST.total == 0.0  # the priced reply did not write into the shared one
    assert Usage.from_dict(free.to_dict()).cost is NO_COST
    assert Usage.from_dict(priced.to_dict()).cost == priced.cost


def test_the_scripted_server_queues_a_burst_of_connections() -> None:
    """Many clients connecting at once (a benchmark's thousand sessions) wait in the
    scripted server's accept queue instead of losing their SYNs to a full one: its
    listening socket's backlog is 4096, or the kernel's cap (``somaxconn``) below it.
    Linux reports a listener's backlog in ``tcp_info``'s ``tcpi_sacked``."""
    import socket
    import struct

    cap = int(Path("/proc/sys/net/core/somaxconn").read_text())
    with ProtocolServer() as server:
        listener = server._server
        assert listener is not None
        info = listener.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 32)
        backlog = struct.unpack_from("I", info, 28)[0]
    assert backlog == min(4096, cap), backlog

"""Starting a server: ``--serve`` of a generated agent and ``harnessc serve``.

The checks come first (the extra installed, a token for a non-loopback address, the
agent buildable with its model's key): a failure exits 2 with one line saying why.
SIGTERM or Ctrl-C drains: new runs get 429, working runs pause at their next turn
end (recorded in their sessions, so a restart resumes them), then the server stops; a
second signal stops it at once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TextIO

from harnessc.runtime.serve.config import (
    ServeConfig,
    ServeSetupError,
    check_config,
    check_extra,
    check_mcp,
    read_token,
)

if TYPE_CHECKING:
    from harnessc.runtime.runs.agent import AgentSource

__all__ = ["serve_agent"]

EXIT_DONE = 0
EXIT_USAGE = 2


def serve_agent(source: AgentSource, args: Any, err: TextIO, prog: str) -> int:
    """Serve ``source``'s agent with the flags ``args`` holds (--host, --port,
    --token-env, --max-runs, --mcp: MCP over stdin and stdout); the process's exit code."""
    stdio = bool(getattr(args, "mcp", False))
    try:
        if stdio:
            check_mcp()
        else:
            check_extra()
        config = ServeConfig(
            host=args.host,
            port=args.port,
            token=read_token(args.token_env),
            max_runs=args.max_runs,
            header_timeout_s=args.header_timeout,
            body_timeout_s=args.body_timeout,
            max_connections=args.max_connections,
        )
        check_config(config)
    except ServeSetupError as exc:
        err.write(f"{prog}: error: {exc}\n")
        return EXIT_USAGE
    if stdio:
        return asyncio.run(_serve_stdio(source, config, err, prog))
    return asyncio.run(_serve(source, config, err, prog))


async def _serve_stdio(source: AgentSource, config: ServeConfig, err: TextIO, prog: str) -> int:
    """MCP over stdin and stdout (the client started this process: no token)."""
    from harnessc.runtime.serve.mcp_server import serve_stdio

    made = await _runs(source, config, err, prog)
    if made is None:
        return EXIT_USAGE
    state, clients = made
    err.write(f"serving {source.agent_name} over MCP on stdin and stdout\n")
    err.flush()
    try:
        await serve_stdio(state)
    finally:
        await clients.aclose()
    return EXIT_DONE


async def _runs(source: AgentSource, config: ServeConfig, err: TextIO, prog: str) -> Any:
    """(the server's state, the shared HTTP clients), or None when the agent cannot be
    built (said on ``err``)."""
    from harnessc.runtime.providers.clients import HttpClientPool
    from harnessc.runtime.runs.errors import SetupError
    from harnessc.runtime.runs.plain import PlainRuns
    from harnessc.runtime.serve.state import ServeState

    clients = HttpClientPool(max_concurrent=None)  # the cap follows the loop
    source.clients = clients
    source.mcp_pauses = True  # a served run's MCP login or question is a pause
    durable = source.durable_config()
    runs: Any
    try:
        # the workers run a durable agent's model: this server needs no key for it
        await source.check(model=durable is None)
        runs = (
            PlainRuns(source, max_runs=config.max_runs, kept_runs=config.kept_runs)
            if durable is None
            else await _durable_runs(source, durable, config)
        )
    except SetupError as exc:
        err.write(f"{prog}: error: {exc}\n")
        await clients.aclose()
        return None
    except Exception as exc:
        err.write(f"{prog}: error: cannot build the agent: {type(exc).__name__}: {exc}\n")
        await clients.aclose()
        return None
    return ServeState(config=config, runs=runs), clients


async def _serve(source: AgentSource, config: ServeConfig, err: TextIO, prog: str) -> int:
    import uvicorn

    from harnessc.runtime.serve.app import build_app
    from harnessc.runtime.serve.connections import (
        ConnectionLimits,
        guarded_protocol,
        usable_connections,
    )

    made = await _runs(source, config, err, prog)
    if made is None:
        return EXIT_USAGE
    state, clients = made
    app = build_app(state, clients)
    limits = ConnectionLimits(
        header_timeout_s=config.header_timeout_s,
        body_timeout_s=config.body_timeout_s,
        max_connections=usable_connections(config.max_connections),
    )
    server = _DrainingServer(
        uvicorn.Config(
            app,
            host=config.host,
            port=config.port,
            http=guarded_protocol(limits),
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
        ),
        state.runs,
        config.drain_s,
    )
    announce = asyncio.create_task(_announce(server, state, err, limits))
    try:
        await server.serve()
    finally:
        announce.cancel()
        limits.report()
    return EXIT_DONE


async def _durable_runs(source: AgentSource, durable: Any, config: ServeConfig) -> Any:
    """The run control of a durable agent: a DBOS client on its database (made, with its
    queue, if it is new, as ``--submit`` makes it)."""
    from harnessc.runtime.durable.config import DurableError
    from harnessc.runtime.runs.errors import SetupError

    try:
        from harnessc.runtime.durable.clients import DurableRuns
        from harnessc.runtime.durable.control import DurableRunControl

        client = await asyncio.to_thread(DurableRuns, durable(), source.cwd, create=True)
    except DurableError as exc:
        raise SetupError(str(exc)) from None
    from harnessc.runtime.durable.engine import taking_runs

    runs = DurableRunControl(source, client, kept_runs=config.kept_runs)
    runs.worker_id = taking_runs()  # --serve --worker: this process is a worker too
    return runs


async def _announce(server: Any, state: Any, err: TextIO, limits: Any) -> None:
    while not server.started:
        await asyncio.sleep(0.02)
    host, port = server.servers[0].sockets[0].getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    state.base_url = f"http://{shown}:{port}"
    store = "stored sessions" if state.source.stored else "sessions in memory"
    if state.runs.durable:
        worker = getattr(state.runs, "worker_id", None)
        who = f"this process (worker {worker}) and" if worker else "the agent's"
        store = f"durable runs: {who} --worker processes run them; {store}"
    guard = "token required" if state.config.token else "no token (loopback only)"
    if limits.max_connections < state.config.max_connections:
        guard += f"; at most {limits.max_connections} connections (the open-file limit)"
    err.write(
        f"serving {state.source.agent_name} at {state.base_url} ({store}, {guard}); "
        "Ctrl-C or SIGTERM stops it\n"
    )
    err.flush()


def _draining_server_class() -> type:
    import uvicorn

    class DrainingServer(uvicorn.Server):
        """Drains the runs before uvicorn closes its connections; a second signal stops
        at once. Signals are not raised again after the shutdown (the exit code is 0)."""

        def __init__(self, config: Any, runs: Any, grace_s: float) -> None:
            super().__init__(config)
            self.runs = runs
            self.grace_s = grace_s
            self.draining: asyncio.Task[None] | None = None
            self.loop: asyncio.AbstractEventLoop | None = None

        async def startup(self, sockets: Any = None) -> None:
            self.loop = asyncio.get_running_loop()
            await super().startup(sockets)
            if self.started:
                from harnessc.runtime.support.collector import settle_server

                settle_server()

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.draining is not None or self.loop is None:
                self.should_exit = True
                self.force_exit = self.draining is not None
                return
            self.loop.call_soon_threadsafe(self._start_drain)

        def _start_drain(self) -> None:
            if self.draining is None:
                self.draining = asyncio.get_running_loop().create_task(self._drain())

        async def _drain(self) -> None:
            try:
                await self.runs.drain(self.grace_s)
            finally:
                self.should_exit = True

    return DrainingServer


def _DrainingServer(config: Any, runs: Any, grace_s: float) -> Any:  # noqa: N802
    return _draining_server_class()(config, runs, grace_s)

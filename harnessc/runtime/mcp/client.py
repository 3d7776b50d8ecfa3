"""One live MCP server connection on the MCP loop, over the SDK (imported here only).

``ServerConnection.start()`` spawns the child (stdio) or opens the HTTP session,
initializes it and lists its tools and prompts, within the server's ``timeout_s``.
One owner task holds the SDK's context managers for the connection's whole life (anyio
needs them entered and left in one task); ``close()`` ends it, which for stdio closes
the child's stdin, then SIGTERM, then SIGKILL on its process group (``stdio.py``). The read stream is
watched, so a server that died between two calls is noticed before the next one is
sent: that call restarts it once and goes through; a call in flight when the server
dies may have reached it, so it is not repeated.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import methods as _methods
from pydantic import ValidationError

from harnessc.runtime.mcp.config import McpServerConfig
from harnessc.runtime.mcp.env import child_env
from harnessc.runtime.mcp.serverlog import ServerLog
from harnessc.runtime.mcp.stdio import discard, stdio_transport

__all__ = ["CallOutcome", "McpStartError", "ServerConnection"]


# The SDK logs a server's misbehaviour with tracebacks; without a handler of the
# application's, Python's last-resort handler would print them on the agent's terminal.
# What matters reaches the agent as errors and notices (and the server's log).
logging.getLogger("mcp").addHandler(logging.NullHandler())


_MAX_PAGES = 1000


class McpStartError(RuntimeError):
    """A server that could not be started, initialized or listed."""


class CallOutcome:
    """What a call produced: the SDK result, or an error text for the model."""

    __slots__ = ("error", "result")

    def __init__(self, result: Any = None, error: str | None = None) -> None:
        self.result = result
        self.error = error


def _describe(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return exc.error.message
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _raw_request(session: ClientSession, request: Any) -> dict[str, Any]:
    """``request`` sent as ``send_request`` sends it, its result returned unvalidated."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    session._stamp(data, opts)  # type: ignore[arg-type]
    if session._session_read_timeout_seconds is not None:
        opts["timeout"] = session._session_read_timeout_seconds
    raw = await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)  # type: ignore[arg-type]
    if not isinstance(raw, dict):
        raise McpStartError(f"{data['method']} answered {type(raw).__name__}, not an object")
    return raw


def _invalid(exc: BaseException) -> str:
    """One line for a tool the protocol's schema rejects."""
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        return f"{where + ': ' if where else ''}{first.get('msg', 'invalid')}{more}"
    return _describe(exc).splitlines()[0]


class ServerConnection:
    """A server's session; every method runs on the MCP loop."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        environ: Mapping[str, str],
        log_dir: Path,
        process: Any = None,
        sandbox: Any = None,
        workspace: str | None = None,
    ) -> None:
        """``process``: the stdio child, already started by ``stdio.spawn`` (the first
        start uses it; it is stopped if no start does). ``sandbox``: the SandboxPolicy a
        stdio server runs in (for ``workspace``)."""
        self.config = config
        self.sandbox = sandbox
        self.workspace = workspace
        self.environ = dict(environ)
        self.log_path = log_dir / f"mcp-{config.name}.log"
        self.tools: list[Any] = []
        self.skipped: list[tuple[str, str]] = []  # (tool name, why) of invalid tools
        self.prompts: list[Any] = []
        self.tools_changed = False
        self.prompts_changed = False
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._closed = True
        self._lock: asyncio.Lock | None = None
        self._spawned = process

    @property
    def alive(self) -> bool:
        return self._session is not None and not self._closed

    # -- life cycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, initialize and list, within ``timeout_s``; raises McpStartError."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.alive:
                return
            await self._stop_owner()
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._owner = asyncio.create_task(self._own(ready, self._stop))
            timeout = self.config.timeout_s
            try:
                await asyncio.wait_for(asyncio.shield(ready), timeout)
            except asyncio.CancelledError:
                await self._stop_owner()  # no child outlives a cancelled start
                raise
            except TimeoutError:
                await self._stop_owner()
                raise McpStartError(
                    f"mcp server {self.config.name!r} did not answer start-up within "
                    f"{timeout:g} s{self._log_hint()}"
                ) from None
            except McpStartError:
                await self._stop_owner()
                raise

    def _log_hint(self) -> str:
        return f" (its stderr is in {self.log_path})" if self.config.command is not None else ""

    async def close(self) -> None:
        await self._stop_owner()
        await self._discard_spawned()

    async def _stop_owner(self) -> None:
        owner, self._owner = self._owner, None
        if owner is None:
            return
        if self._stop is not None and self.alive:
            self._stop.set()  # a clean exit of the session and the transport
            try:
                await asyncio.wait_for(asyncio.shield(owner), 8.0)
            except (TimeoutError, Exception):
                owner.cancel()
        else:
            owner.cancel()  # still starting: the transport's shutdown is shielded
        with contextlib.suppress(BaseException):
            await owner
        self._session = None
        self._closed = True
        await self._discard_spawned()

    async def _discard_spawned(self) -> None:
        """Stop the child started ahead that no transport took over (a start
        cancelled before its transport opened)."""
        process, self._spawned = self._spawned, None
        if process is not None:
            await discard(process)

    async def _own(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                watched = await self._watch(stack, read)
                session = await stack.enter_async_context(
                    ClientSession(
                        watched,
                        write,
                        read_timeout_seconds=self.config.timeout_s,  # every request's deadline
                        message_handler=self._on_message,
                    )
                )
                await session.initialize()
                self._session = session
                self._closed = False
                await self._list(session)
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(
                    McpStartError(
                        f"mcp server {self.config.name!r} failed to start: {_describe(exc)}"
                        f"{self._log_hint()}"
                    )
                )
        finally:
            self._session = None
            self._closed = True

    async def _transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        config = self.config
        if config.command is not None:
            log = ServerLog(self.log_path)
            log.open()
            stack.callback(log.close)
            log.note(f"starting {config.command}")
            process, self._spawned = self._spawned, None
            command = config.resolved_command()
            assert command is not None
            streams = await stack.enter_async_context(
                stdio_transport(
                    command,
                    config.resolved_args(),
                    env=child_env(config, self.environ),
                    cwd=config.resolved_cwd(),
                    log=log,
                    process=process,
                    sandbox=self.sandbox,
                    workspace=self.workspace,
                )
            )
        else:
            assert config.url is not None
            client = create_mcp_http_client(headers=dict(config.headers) or None)
            await stack.enter_async_context(client)
            streams = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=client)
            )
        return streams[0], streams[1]

    async def _watch(self, stack: contextlib.AsyncExitStack, read: Any) -> Any:
        """A read stream that marks the connection closed the moment the server's ends."""
        send, receive = anyio.create_memory_object_stream[Any](0)
        group = await stack.enter_async_context(anyio.create_task_group())

        async def forward() -> None:
            try:
                async with send:
                    async for item in read:
                        await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                self._closed = True

        group.start_soon(forward)
        stack.callback(group.cancel_scope.cancel)
        return receive

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed = True
        elif isinstance(message, types.PromptListChangedNotification):
            self.prompts_changed = True

    async def _list(self, session: ClientSession) -> None:
        tools, skipped = await self._list_tools(session)
        caps = session.server_capabilities
        prompts: list[Any] = []
        if caps is not None and caps.prompts is not None:
            with contextlib.suppress(MCPError, ValidationError):
                prompts = list((await session.list_prompts()).prompts)
        self.tools, self.skipped = tools, skipped
        self.prompts = prompts
        self.tools_changed = self.prompts_changed = False

    async def _list_tools(self, session: ClientSession) -> tuple[list[Any], list[tuple[str, str]]]:
        """Every page of ``tools/list``, each tool validated on its own: one bad tool
        is skipped (with the reason), not the whole list. The SDK's typed call rejects
        the entire result for one tool, so the request is sent raw."""
        raw_tools: list[Any] = []
        cursor: str | None = None
        cursors: set[str] = set()
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await _raw_request(session, types.ListToolsRequest(params=params))
            listed = page.get("tools")
            if not isinstance(listed, list):
                raise McpStartError(f"mcp server {self.config.name!r}: tools/list has no tool list")
            raw_tools += listed
            next_cursor = page.get("nextCursor")
            cursor = next_cursor if isinstance(next_cursor, str) and next_cursor else None
            if cursor is None:
                break
            if cursor in cursors or len(cursors) >= _MAX_PAGES:
                raise McpStartError(
                    f"mcp server {self.config.name!r}: tools/list pages do not end "
                    f"(cursor {cursor[:40]!r} again, or over {_MAX_PAGES} pages)"
                )
            cursors.add(cursor)
        version = session.protocol_version or types.LATEST_PROTOCOL_VERSION
        tools: list[Any] = []
        skipped: list[tuple[str, str]] = []
        for item in raw_tools:
            name = item.get("name") if isinstance(item, dict) else None
            label = name if isinstance(name, str) else repr(name)[:80]
            try:
                with contextlib.suppress(KeyError):  # a method or version the SDK lacks
                    _methods.validate_server_result("tools/list", version, {"tools": [item]})
                tools.append(types.Tool.model_validate(item, by_name=False))
            except (ValidationError, ValueError, TypeError) as exc:
                skipped.append((label, _invalid(exc)))
        absorb = getattr(session, "_absorb_tool_listing", None)
        if absorb is not None:  # the SDK keeps the output schemas to check results with
            absorb(types.ListToolsResult(tools=tools), complete=True)
        return tools, skipped

    async def refresh(self) -> bool:
        """Re-list after a list_changed notification; True when something changed.

        A listing that fails or times out keeps the last lists (and raises)."""
        if not (self.tools_changed or self.prompts_changed) or not self.alive:
            return False
        assert self._session is not None
        self.tools_changed = self.prompts_changed = False
        await asyncio.wait_for(self._list(self._session), self.config.timeout_s + 1.0)
        return True

    # -- calls -----------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> CallOutcome:
        name = self.config.name
        if not self.alive:
            # dead before this call was sent: restart once and go on
            try:
                await self.start()
            except McpStartError as exc:
                return CallOutcome(error=f"{exc}; the call was not made")
        session = self._session
        assert session is not None
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.error.code == types.REQUEST_TIMEOUT:
                return CallOutcome(
                    error=f"mcp server {name!r}: {tool} timed out after {timeout_s:g} s"
                )
            if exc.error.code == types.CONNECTION_CLOSED or self._closed:
                return CallOutcome(
                    error=f"mcp server {name!r} exited during the call to {tool}; the call "
                    "may have run, so it is not repeated (the server restarts on the next call)"
                )
            return CallOutcome(error=f"mcp server {name!r}: {tool} failed: {exc.error.message}")
        except Exception as exc:
            return CallOutcome(error=f"mcp server {name!r}: {tool} failed: {_describe(exc)}")
        return CallOutcome(result=result)

    async def get_prompt(self, prompt: str, arguments: dict[str, str]) -> Any:
        if not self.alive:
            await self.start()
        assert self._session is not None
        return await self._session.get_prompt(prompt, arguments)

"""One live MCP server connection on the MCP loop, over the SDK (imported here only).

``ServerConnection.start()`` spawns the child (stdio) or opens the HTTP connection,
agrees on a protocol revision (the SDK's ``Client``: ``server/discover`` for the
stateless 2026-07-28 revision, else the ``initialize`` handshake; or the server's
``protocol_version``) and lists its tools and prompts, within the server's
``timeout_s``. One owner task holds the SDK's context managers for the connection's
whole life (anyio needs them entered and left in one task); ``close()`` ends it, which
for stdio closes the child's stdin, then SIGTERM, then SIGKILL on its process group
(``stdio.py``). The read stream is watched, so a server that died between two calls is
noticed before the next one is sent: that call restarts it once and goes through; a
call in flight when the server dies may have reached it, so it is not repeated.

The client declares what it can do for a server: elicitation (form and URL modes; the
question goes to the toolset's ``McpUser``), roots (the agent's working folder). A
call's progress notifications reach the tool's updates; a cancelled call is cancelled
at the server too (the SDK's ``notifications/cancelled``, or the aborted request of the
stateless revision). A call's time limit stops while a person is asked something.

An HTTP server that answers 401 gets the OAuth login of ``oauth.py`` (unless the
spec turned it off); its tokens stay per user. A refused request is reported with its
HTTP status and ``WWW-Authenticate``, and a login that fails fails that call only: the
connection stays up and the next call tries again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import anyio
import httpx2
import mcp_types as types
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from mcp.shared.exceptions import MCPError
from mcp_types import methods as _methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from harnessc import __version__
from harnessc.runtime.mcp.calls import CURRENT, CallState, Clock, UserWaits, current
from harnessc.runtime.mcp.config import McpServerConfig
from harnessc.runtime.mcp.env import child_env
from harnessc.runtime.mcp.results import redact_secrets
from harnessc.runtime.mcp.serverlog import ServerLog
from harnessc.runtime.mcp.stdio import discard, stdio_transport
from harnessc.runtime.mcp.user_bridge import UserBridge, fill_answer
from harnessc.runtime.mcp.user_types import ElicitationRequest, UserNeeded

__all__ = ["CallOutcome", "McpStartError", "ServerConnection", "Progress"]

# A call's progress: (progress, total, message), called on the MCP loop.
Progress = Callable[[float, float | None, str | None], Awaitable[None] | None]


# The SDK logs a server's misbehaviour with tracebacks; without a handler of the
# application's, Python's last-resort handler would print them on the agent's terminal.
# What matters reaches the agent as errors and notices (and the server's log).
logging.getLogger("mcp").addHandler(logging.NullHandler())


_MAX_PAGES = 1000
_RELISTENS = 5  # a listen stream lost this often is not opened again
_BARE_HTTP_ERROR = "Server returned an error response"
_CLIENT_INFO = types.Implementation(name="harnessc", version=__version__)


class McpStartError(RuntimeError):
    """A server that could not be started, initialized or listed."""


class CallOutcome:
    """What a call produced: the SDK result, or an error text for the model."""

    __slots__ = ("error", "result")

    def __init__(self, result: Any = None, error: str | None = None) -> None:
        self.result = result
        self.error = error


def _describe(exc: BaseException, state: CallState | None = None) -> str:
    """One line for ``exc``; an HTTP-level refusal as what the operation recorded (its
    login failure, or the status with its ``WWW-Authenticate``)."""
    if isinstance(exc, MCPError):
        if state is not None and exc.error.message == _BARE_HTTP_ERROR:
            if state.auth_failure is not None:
                return state.auth_failure
            http = state.http_error()
            if http is not None:
                return f"the server refused the request: {http}"
        return exc.error.message
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e, state) for e in exc.exceptions)
    if isinstance(exc, UserNeeded):
        return str(exc)
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
        user: UserBridge | None = None,
        roots: Callable[[], list[str]] | None = None,
        problem: Callable[[str], None] | None = None,
        sandbox: Any = None,
        workspace: str | None = None,
    ) -> None:
        """``process``: the stdio child, already started by ``stdio.spawn`` (the first
        start uses it; it is stopped if no start does). ``user``: who answers a login
        or a question (default: ``default_user()`` when one comes). ``roots``: the
        folders offered to the server (default: the working directory). ``problem``:
        told about a token file that is not used. ``sandbox``: the SandboxPolicy a
        stdio server runs in (for ``workspace``)."""
        self.config = config
        self.sandbox = sandbox
        self.workspace = workspace
        self.environ = dict(environ)
        self.user = user if user is not None else UserBridge()
        self.roots = roots
        self.problem = problem
        self.waits = UserWaits()
        self.protocol_version: str | None = None
        self._in_flight: list[CallState] = []
        self._auth: Any = None  # the OAuth provider: kept across restarts (its state, its lock)
        self.log_path = log_dir / f"mcp-{config.name}.log"
        self.tools: list[Any] = []
        self.skipped: list[tuple[str, str]] = []  # (tool name, why) of invalid tools
        self.prompts: list[Any] = []
        self.tools_changed = False
        self.prompts_changed = False
        self._session: ClientSession | None = None
        self._client: Client | None = None
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
            state = CallState()
            self._owner = asyncio.create_task(self._own(ready, self._stop, state))
            timeout = self.config.timeout_s
            try:
                # a login made meanwhile does not count against the time limit
                await Clock(timeout, self.waits).run(asyncio.shield(ready))
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
        self._client = None
        self._closed = True
        await self._discard_spawned()

    async def _discard_spawned(self) -> None:
        """Stop the child started ahead that no transport took over (a start
        cancelled before its transport opened)."""
        process, self._spawned = self._spawned, None
        if process is not None:
            await discard(process)

    async def _own(
        self, ready: asyncio.Future[None], stop: asyncio.Event, state: CallState
    ) -> None:
        CURRENT.set(state)  # the start-up's requests (and their auth flow) record here
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = Client(
                    self._streams(stack),
                    mode=_mode(self.config.protocol_version),
                    read_timeout_seconds=self.config.timeout_s,  # every request's deadline
                    elicitation_callback=self._on_elicit,
                    list_roots_callback=self._on_roots,
                    message_handler=self._on_message,
                    client_info=_CLIENT_INFO,
                    cache=None,  # a changed list is listed again (list_changed)
                )
                await stack.enter_async_context(client)
                session = client.session
                self._client = client
                self._session = session
                self.protocol_version = session.protocol_version
                self._closed = False
                await self._list(session)
                if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    group = await stack.enter_async_context(anyio.create_task_group())
                    stack.callback(group.cancel_scope.cancel)
                    group.start_soon(self._listen, client)
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(
                    McpStartError(
                        f"mcp server {self.config.name!r} failed to start: "
                        f"{_describe(exc, state)}{self._log_hint()}"
                    )
                )
        finally:
            self._session = None
            self._client = None
            self._closed = True

    @contextlib.asynccontextmanager
    async def _streams(self, stack: contextlib.AsyncExitStack) -> AsyncIterator[tuple[Any, Any]]:
        """The transport's streams, the read stream watched (the SDK's ``Transport``)."""
        read, write = await self._transport(stack)
        watched = await self._watch(stack, read)
        yield watched, write

    def _http_client(self) -> httpx2.AsyncClient:
        """The HTTP client of the server's requests: the spec's headers, the OAuth login
        (``oauth.py``) unless turned off, and a hook that records a refusal."""
        config = self.config
        auth: Any = None
        oauth = config.oauth()
        if oauth is not None:
            if self._auth is None:
                from harnessc.runtime.mcp.oauth import build_auth

                self._auth = build_auth(
                    config, oauth, bridge=self.user, waits=self.waits, problem=self.problem
                )
            auth = self._auth
        url = config.url

        async def record(response: httpx2.Response) -> None:
            state = current()
            if state is None or response.status_code < 400:
                return
            if str(response.request.url).split("?")[0] != (url or "").split("?")[0]:
                return
            state.http_status = response.status_code
            state.http_reason = response.reason_phrase
            state.www_authenticate = response.headers.get("www-authenticate")

        return httpx2.AsyncClient(
            headers=dict(config.headers) or None,
            timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
            auth=auth,
            event_hooks={"response": [record]},
        )

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
            client = self._http_client()
            await stack.enter_async_context(client)
            streams = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=client)
            )
        return streams[0], streams[1]

    async def _watch(self, stack: contextlib.AsyncExitStack, read: Any) -> Any:
        """A read stream that marks the connection closed the moment the server's ends.

        A result without ``resultType`` is a complete one (2026-07-28: "clients MUST
        assume complete"); the SDK's validation wants the field, so it is filled in."""
        send, receive = anyio.create_memory_object_stream[Any](0)
        group = await stack.enter_async_context(anyio.create_task_group())

        async def forward() -> None:
            try:
                async with send:
                    async for item in read:
                        result = getattr(getattr(item, "message", None), "result", None)
                        if isinstance(result, dict) and "resultType" not in result:
                            result["resultType"] = "complete"
                        await send.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                self._closed = True

        group.start_soon(forward)
        stack.callback(group.cancel_scope.cancel)
        return receive

    async def _listen(self, client: Client) -> None:
        """The stateless revision's change notifications: a ``subscriptions/listen``
        stream for the lists the server says may change (its events also reach
        ``_on_message``). A lost stream is opened again and the lists fetched again."""
        from mcp.client.subscriptions import (
            PromptsListChanged,
            SubscriptionLost,
            ToolsListChanged,
        )

        caps = client.session.server_capabilities
        tools = bool(caps and caps.tools and caps.tools.list_changed)
        prompts = bool(caps and caps.prompts and caps.prompts.list_changed)
        if not (tools or prompts):
            return
        for _ in range(_RELISTENS):
            try:
                async with client.listen(
                    tools_list_changed=tools, prompts_list_changed=prompts
                ) as subscription:
                    async for event in subscription:
                        if isinstance(event, ToolsListChanged):
                            self.tools_changed = True
                        elif isinstance(event, PromptsListChanged):
                            self.prompts_changed = True
                return  # the server ended the stream
            except SubscriptionLost:
                self.tools_changed, self.prompts_changed = tools, prompts
                await anyio.sleep(1.0)
            except Exception:
                return  # the server does not keep such a stream: its lists stay as listed

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
        envelope: dict[str, Any] = {}  # a page's other fields (2026-07-28: resultType, ttlMs)
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await _raw_request(session, types.ListToolsRequest(params=params))
            envelope = {k: v for k, v in page.items() if k not in ("tools", "nextCursor")}
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
                    _methods.validate_server_result(
                        "tools/list", version, {**envelope, "tools": [item]}
                    )
                tool = types.Tool.model_validate(item, by_name=False)
            except (ValidationError, ValueError, TypeError) as exc:
                skipped.append((label, _invalid(exc)))
                continue
            header = _bad_header(tool, version)
            if header is not None:  # 2026-07-28: a client MUST leave such a tool out
                skipped.append((label, f"its input schema has an invalid x-mcp-header: {header}"))
                continue
            tools.append(tool)
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

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout_s: float,
        *,
        call_id: str | None = None,
        progress: Progress | None = None,
    ) -> CallOutcome:
        """Call ``tool``; its result, or an error text for the model. ``timeout_s`` does
        not count the time a person is asked something (a login, a question)."""
        state = CallState(call_id)
        CURRENT.set(state)
        self._in_flight.append(state)
        try:
            outcome = await self._call(tool, arguments, timeout_s, state, progress)
        finally:
            self._in_flight.remove(state)
        if outcome.error is not None:
            outcome.error = str(redact_secrets(outcome.error))
        return outcome

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        timeout_s: float,
        state: CallState,
        progress: Progress | None,
    ) -> CallOutcome:
        name = self.config.name
        if not self.alive:
            # dead before this call was sent: restart once and go on
            try:
                await self.start()
            except McpStartError as exc:
                return CallOutcome(error=f"{exc}; the call was not made")
        client = self._client
        assert client is not None

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            if progress is not None:
                done = progress(value, total, message)
                if done is not None:
                    await done

        async def send() -> Any:
            return await client.call_tool(
                tool,
                arguments,
                read_timeout_seconds=math.inf,
                progress_callback=on_progress,  # type: ignore[arg-type]
            )

        clock = Clock(timeout_s, self.waits)
        try:
            try:
                result = await clock.run(send())
            except MCPError as exc:
                if exc.error.code != types.URL_ELICITATION_REQUIRED:
                    raise
                await self._open_urls(exc, state)  # the pages the server needs seen first
                result = await clock.run(send())
        except TimeoutError:
            return CallOutcome(error=f"mcp server {name!r}: {tool} timed out after {timeout_s:g} s")
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
            return CallOutcome(error=f"mcp server {name!r}: {tool} failed: {_describe(exc, state)}")
        except UserNeeded as exc:
            return CallOutcome(error=str(exc))
        except Exception as exc:
            return CallOutcome(error=f"mcp server {name!r}: {tool} failed: {_describe(exc, state)}")
        if state.auth_failure is not None and getattr(result, "is_error", False):
            return CallOutcome(error=state.auth_failure)  # a question no one could answer
        return CallOutcome(result=result)

    # -- what the client does for the server ---------------------------------------

    def _asking(self) -> CallState | None:
        """The operation a server's question belongs to: the one it came in (the
        stateless revision), else the latest call in flight."""
        state = current()
        if state is not None and state in self._in_flight:
            return state
        return self._in_flight[-1] if self._in_flight else state

    async def _on_elicit(self, context: Any, params: Any) -> Any:
        state = self._asking()
        mode: Literal["form", "url"] = "url" if getattr(params, "mode", "form") == "url" else "form"
        schema: Any = getattr(params, "requested_schema", None)
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        request = ElicitationRequest(
            server=self.config.name,
            call_id=state.call_id if state is not None else None,
            mode=mode,
            message=str(getattr(params, "message", "")),
            schema=schema,
            url=getattr(params, "url", None),
            elicitation_id=getattr(params, "elicitation_id", None),
        )
        try:
            answer = await self.user.elicit(request, self.waits)
        except UserNeeded as exc:
            if state is not None:
                state.auth_failure = str(exc)
            return types.ErrorData(code=types.INVALID_REQUEST, message=str(exc))
        content = None
        if answer.action == "accept" and mode == "form":
            try:
                content = fill_answer(request.schema, answer.content)
            except ValueError as exc:
                return types.ErrorData(
                    code=types.INVALID_PARAMS,
                    message=f"the answer does not match the requested schema: {exc}",
                )
        return types.ElicitResult(action=answer.action, content=content)

    async def _open_urls(self, exc: MCPError, state: CallState) -> None:
        """A -32042 (URL elicitation required): each page goes to the user as a URL
        question; a page the user declines ends the call."""
        data = exc.error.data if isinstance(exc.error.data, dict) else {}
        for item in data.get("elicitations") or ():
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            request = ElicitationRequest(
                server=self.config.name,
                call_id=state.call_id,
                mode="url",
                message=str(item.get("message") or ""),
                url=item["url"],
                elicitation_id=item.get("elicitationId"),
            )
            answer = await self.user.elicit(request, self.waits)
            if answer.action != "accept":
                raise exc

    async def _on_roots(self, context: Any) -> Any:
        folders = self.roots() if self.roots is not None else [os.getcwd()]
        return types.ListRootsResult(
            roots=[
                types.Root(
                    uri=Path(folder).resolve().as_uri(),  # type: ignore[arg-type]
                    name=Path(folder).name or None,
                )
                for folder in folders
            ]
        )

    async def get_prompt(self, prompt: str, arguments: dict[str, str]) -> Any:
        if not self.alive:
            await self.start()
        assert self._client is not None
        return await self._client.get_prompt(prompt, arguments)


def _bad_header(tool: Any, version: str) -> str | None:
    """Why the tool's ``x-mcp-header`` annotations are invalid (the 2026-07-28 revision
    mirrors them into HTTP headers), or None."""
    if version not in MODERN_PROTOCOL_VERSIONS:
        return None
    from mcp.shared.inbound import find_invalid_x_mcp_header

    return find_invalid_x_mcp_header(tool.input_schema)


def _mode(protocol_version: str) -> str:
    """The SDK client's ``mode`` for a server's ``protocol_version``."""
    if protocol_version == "auto":
        return "auto"
    if protocol_version in MODERN_PROTOCOL_VERSIONS:
        return protocol_version
    return "legacy"

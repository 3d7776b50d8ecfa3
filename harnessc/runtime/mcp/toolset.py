"""MCP servers as a toolset: an extension that adds each server's tools and prompts.

``McpToolset(servers)`` is installed like any extension. Nothing starts at import or
at install: when the first run starts (the ``before_agent_start`` moment, a resumed
run's ``agent_resume``, or else the first model call) every server starts concurrently on the MCP loop
(``loop.py``), their tool lists become tools named ``mcp__<server>__<tool>`` (or the
server's ``prefix``) and their prompts ``/mcp__<server>__<prompt>`` commands (such a
command before the first run starts the servers to find its prompt). Before
each model call, servers that sent ``tools/list_changed`` are listed again.

A required server that fails to start ends the run with an error naming it (fail
closed); ``required: false`` makes it a warning and the run goes on without it.

With a ``PausingUser`` (a served or durable run), a login met while a server's tools
are listed does not fail its start: the start waits for the answer (on the MCP loop)
and the run pauses before its next model request (``PauseRun`` at the ``context``
moment, the reason naming the server and the URL); the resume finds the same start
waiting, which the answer (the redirect) lets finish, and the model is asked with the
tools. The answer ``done`` (a login made elsewhere) makes the start afresh.

``user`` is who answers a server's login or question (``user.py``): by default the
terminal when there is one, else no one (the call fails saying what to do); a door
sets its own (``toolset.user = ...``). Its methods run on the agent's loop.
``roots``: the folders offered to servers that ask (default: the working directory).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnessc.runtime.core.commands import CommandOutcome
from harnessc.runtime.core.hooks import FailRun, PauseRun
from harnessc.runtime.core.messages import TextContent
from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.mcp.config import McpConfigError, McpServerConfig, load_mcp_json
from harnessc.runtime.mcp.env import child_env, child_environ
from harnessc.runtime.mcp.loop import mcp_loop, run_in_mcp_loop
from harnessc.runtime.mcp.pausing_user import PausingUser, start_key
from harnessc.runtime.mcp.user_bridge import UserBridge
from harnessc.runtime.mcp.user_types import McpUser
from harnessc.runtime.options.harness_context import HarnessContext
from harnessc.runtime.support.data_folder import DataFolder, resolve_folder
from harnessc.runtime.tools.base import (
    HoldCall,
    Tool,
    ToolResult,
    ToolUpdate,
    error_result,
)

__all__ = ["INSTALL_HINT", "McpTool", "McpToolset", "McpUnavailableError", "sdk_available"]

INSTALL_HINT = "pip install 'harnessc[mcp]'"


class McpUnavailableError(RuntimeError):
    """A spec declares MCP servers but the MCP SDK is not installed."""


def sdk_available() -> bool:
    return importlib.util.find_spec("mcp") is not None


class McpToolset:
    """The MCP servers of one agent (an extension: ``install(harness)``)."""

    name = "mcp"

    def __init__(
        self,
        servers: Sequence[McpServerConfig] = (),
        *,
        from_file: str | os.PathLike[str] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        activate: bool = True,
        user: McpUser | None = None,
        roots: Sequence[str | os.PathLike[str]] | None = None,
    ) -> None:
        """``activate=False`` when the spec lists ``active_tools`` (they name the MCP tools)."""
        if not sdk_available():
            raise McpUnavailableError(
                f"this agent declares MCP servers but the MCP SDK is not installed: {INSTALL_HINT}"
            )
        declared = list(servers)
        if from_file is not None:
            names = {s.name for s in declared}
            declared += [s for s in load_mcp_json(from_file) if s.name not in names]
        seen: set[str] = set()
        for server in declared:
            server.validate()
            if server.name in seen:
                raise McpConfigError(f"mcp server {server.name!r} is declared twice")
            seen.add(server.name)
        self.servers = declared
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.problems: list[str] = []
        self._connections: dict[str, Any] = {}
        self.activate = activate
        self._harness: HarnessContext | None = None
        self._tools: dict[str, Tool] = {}
        self._started = False
        self._unregister: list[Any] = []
        self._registered: dict[str, set[str]] = {}
        self._owners: dict[str, tuple[str, str]] = {}  # agent tool name -> (server, tool)
        self._said_down: set[str] = set()
        self._bridge = UserBridge(user)
        # Calls held for a login or a question (PausingUser), open at the server, by the
        # tool call id: the held call's next run waits on it.
        self._parked: dict[str, concurrent.futures.Future[Any]] = {}
        # The start waiting on a login met while listing (PausingUser): the run's resume
        # waits on it again.
        self._starting: concurrent.futures.Future[dict[str, str]] | None = None
        self.roots = [os.fspath(r) for r in roots] if roots is not None else None
        self._remove_closer = mcp_loop().on_shutdown(self._close_all)

    @property
    def user(self) -> McpUser | None:
        """Who answers the servers' logins and questions (None: the default, chosen at
        the first one)."""
        return self._bridge.user

    @user.setter
    def user(self, user: McpUser | None) -> None:
        self._bridge.user = user

    def _roots(self) -> list[str]:
        return list(self.roots) if self.roots is not None else [os.getcwd()]

    def _problem(self, message: str) -> None:
        """A note from the MCP loop (a token file not used): said on the agent's loop."""
        if message in self.problems:
            return
        self.problems.append(message)
        loop = self._bridge.agent_loop
        if loop is not None and loop.is_running():
            asyncio.run_coroutine_threadsafe(self._notice(message), loop)

    @property
    def command_names(self) -> tuple[str, ...]:
        return ()  # prompts are known only once the servers run

    def install(self, harness: HarnessContext) -> None:
        self._harness = harness
        harness.on("before_agent_start", self._on_start)
        harness.on("agent_resume", self._on_start)  # a continued run may start with a tool batch
        harness.on("context", self._on_context)
        harness.on_close(self.aclose)
        harness.commands.add_loader(self._load_command)

    # -- start -----------------------------------------------------------------------

    async def _on_start(self, event: Any) -> None:
        await self.start()

    async def _on_context(self, event: Any) -> None:
        await self.start(pause=True)
        await self.refresh()

    async def _load_command(self, name: str) -> None:
        """``/<prefix><prompt>`` before the first run: start the servers to learn it."""
        if self._started or not any(name.startswith(s.tool_name("")) for s in self.servers):
            return
        try:
            await self.start()
        except McpStartFailed as exc:  # the command stays unknown; say why
            await self._notice(str(exc))

    async def start(self, *, pause: bool = False) -> None:
        """Start the servers not running yet; report the ones that fail.

        A required server that fails, or a tool name taken twice, fails this run; the
        next run tries again (fail closed on every run until the server is up). A login
        met while listing, with a ``PausingUser``, leaves the start waiting for it:
        ``pause`` raises ``PauseRun`` naming it, else this returns (the next start, the
        one before the model request, pauses).
        """
        if self._started:
            return
        self._bridge.agent_loop = asyncio.get_running_loop()
        pausing = self._pausing()
        future = self._starting
        afresh = self._made_afresh(pausing) if future is not None and pausing else []
        if future is not None and afresh:
            future.cancel()  # a login made elsewhere: start again with its token
            future = self._starting = None
            await run_in_mcp_loop(self._forget(afresh))
        if future is None:
            starting = [
                s.name
                for s in self.servers
                if not getattr(self._connections.get(s.name), "alive", False)
            ]
            if starting and self._harness is not None:  # the terminal's status line
                await self._harness.notice(
                    "mcp", f"starting MCP servers: {', '.join(starting)}…", "progress"
                )
            future = self._starting = mcp_loop().submit(self._start_all())
        try:
            errors = await self._started_or_login(future, pausing)
        except BaseException:
            future.cancel()
            self._starting = None
            self._started = False  # cancelled (Ctrl-C): the next run tries again
            raise
        if isinstance(errors, str):  # a login waits: the start stays parked
            if pause:
                raise PauseRun(errors)
            return
        self._starting = None
        collisions: list[str] = []
        for server in self.servers:
            connection = self._connections.get(server.name)
            if connection is not None and connection.alive:
                collisions += await self._register(server)
        required = []
        for server in self.servers:
            message = errors.get(server.name)
            if message is None:
                continue
            if message not in self.problems:
                self.problems.append(message)
            if server.required:
                required.append(message)
            elif server.name not in self._said_down:
                self._said_down.add(server.name)
                await self._notice(f"{message}; going on without it (required: false)")
        if required or collisions:
            raise McpStartFailed("; ".join(required + collisions))
        self._started = True

    def _pausing(self) -> PausingUser | None:
        user = self._bridge.user
        return user if isinstance(user, PausingUser) else None

    def _made_afresh(self, pausing: PausingUser) -> list[str]:
        """The servers whose login met while listing was answered ``done`` (made
        elsewhere: their token is stored)."""
        return [s.name for s in self.servers if pausing.take_fresh(start_key(s.name))]

    async def _forget(self, names: list[str]) -> None:
        """Close and drop the connections of ``names``: their next start reads the
        stored token afresh (a connection keeps its login's state)."""
        for name in names:
            connection = self._connections.pop(name, None)
            if connection is not None:
                await connection.close()

    async def _started_or_login(
        self, future: concurrent.futures.Future[dict[str, str]], pausing: PausingUser | None
    ) -> dict[str, str] | str:
        """The start's errors by server once it ended, or the pause reason of a login
        it met while listing (a ``PausingUser``'s: it waits for the answer)."""
        loop = asyncio.get_running_loop()
        started = _watch(future, loop)
        wanted: list[asyncio.Future[str]] = []
        if pausing is not None:
            wanted = [asyncio.wrap_future(pausing.wanted(start_key(s.name))) for s in self.servers]
        try:
            done, _ = await asyncio.wait({started, *wanted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in wanted:
                if not waiting.done():
                    waiting.cancel()
        if started in done or not done:
            for server in self.servers if pausing is not None else ():
                pausing.drop(start_key(server.name))  # type: ignore[union-attr]
            return await started
        return next(w.result() for w in wanted if w in done and not w.cancelled())

    async def _start_all(self) -> dict[str, str]:
        from harnessc.runtime.mcp.stdio import discard

        environ = child_environ(os.environ)
        log_dir = resolve_folder(self.log_dir or DataFolder("logs"))
        new = [s for s in self.servers if s.name not in self._connections]
        sandbox, workspace = self._sandbox()
        spawned = await _spawn_ahead(new, environ, sandbox, workspace)
        try:
            # the SDK's import takes seconds: the stdio servers boot meanwhile
            from harnessc.runtime.mcp.client import ServerConnection
        except BaseException:
            await asyncio.gather(*(discard(p) for p in spawned.values()), return_exceptions=True)
            raise
        for server in new:  # kept even when they fail: shutdown reaches every child
            self._connections[server.name] = ServerConnection(
                server,
                environ=environ,
                log_dir=log_dir,
                process=spawned.get(server.name),
                user=self._bridge,
                roots=self._roots,
                problem=self._problem,
                sandbox=None if server.unsandboxed else sandbox,
                workspace=workspace,
            )
        waiting = [(n, c) for n, c in self._connections.items() if not c.alive]
        outcomes = await asyncio.gather(*(c.start() for _, c in waiting), return_exceptions=True)
        errors: dict[str, str] = {}
        for (name, connection), outcome in zip(waiting, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                errors[name] = str(outcome) or type(outcome).__name__
                await connection.close()
        return errors

    def _sandbox(self) -> tuple[Any, str]:
        """The agent's sandbox policy and workspace (its session's working directory)."""
        harness = self._harness
        options = getattr(harness, "options", None)
        session = getattr(harness, "session", None)
        cwd = getattr(session, "cwd", None) or os.getcwd()
        return getattr(options, "sandbox", None), os.path.abspath(cwd)

    async def refresh(self) -> None:
        """List again the servers that announced a changed tool or prompt list."""
        changed = []
        for name, connection in list(self._connections.items()):
            if connection.alive and (connection.tools_changed or connection.prompts_changed):
                try:
                    if await run_in_mcp_loop(connection.refresh()):
                        changed.append(name)
                except Exception as exc:
                    why = "it did not answer in time" if isinstance(exc, TimeoutError) else exc
                    await self._notice(
                        f"mcp server {name!r}: listing its tools again failed ({why}); "
                        "keeping its last tool list"
                    )
        for server in self.servers:
            if server.name in changed:
                for message in await self._register(server):
                    await self._notice(f"{message}; the tool is skipped")

    async def _notice(self, message: str) -> None:
        if self._harness is not None:
            await self._harness.notice("mcp", message, "warning")
        else:
            sys.stderr.write(f"warning: {message}\n")

    # -- tools and prompts -----------------------------------------------------------

    async def _register(self, server: McpServerConfig) -> list[str]:
        """Offer the server's tools (and prompts) to the agent; the name collisions.

        A tool whose name the agent or another server's tool already has is not added
        (it never replaces a tool); the returned messages name both sides. Invalid
        schemas and duplicate names are skipped with a warning.
        """
        from harnessc.runtime.mcp.names import agent_tool_name
        from harnessc.runtime.mcp.results import schema_problem

        connection = self._connections[server.name]
        harness = self._harness
        taken = set(harness.tools) - set(self._tools) if harness is not None else set()
        others = {n: o for n, o in self._owners.items() if o[0] != server.name}
        tools: list[Tool] = []
        owners: dict[str, tuple[str, str]] = {}
        collisions: list[str] = []
        warnings: list[str] = []
        where = f"mcp server {server.name!r}"
        for remote, why in connection.skipped:
            if server.wants(remote):
                warnings.append(f"{where}: tool {remote!r} skipped: {why}")
        for listed in connection.tools:
            remote = listed.name
            if not server.wants(remote):
                continue
            full = server.tool_name(remote)
            name = agent_tool_name(full)
            if name in owners:
                warnings.append(
                    f"{where}: tool {remote!r} skipped: it lists a second tool named "
                    f"{name!r} (after {owners[name][1]!r})"
                )
                continue
            if name in taken:
                collisions.append(
                    f"{where}: tool {remote!r} would be named {name!r}, the name of the "
                    "agent's own tool; give the server another prefix or exclude the tool"
                )
                continue
            if name in others:
                other, other_remote = others[name]
                collisions.append(
                    f"{where}: tool {remote!r} and mcp server {other!r}: tool "
                    f"{other_remote!r} would both be named {name!r}; give one server "
                    "another prefix or exclude one tool"
                )
                continue
            problem = schema_problem(listed.input_schema)
            if problem is not None:
                warnings.append(f"{where}: tool {remote!r} skipped: {problem}")
                continue
            if name != full:
                warnings.append(
                    f"{where}: tool {remote!r} is named {name!r} in the agent "
                    f"({full!r} is not a valid tool name for model providers)"
                )
            owners[name] = (server.name, remote)
            tools.append(self._tool(server, connection, listed, name))
        for message in warnings:
            if message not in self.problems:  # said once, not at every listing
                self.problems.append(message)
                await self._notice(message)
        if harness is None:
            return collisions
        offered = {t.name for t in tools}
        registered = self._registered.setdefault(server.name, set())
        stale = sorted(registered - offered)
        if stale:  # the server stopped offering these: the model no longer sees them
            harness.remove_tools(stale)
            registered.difference_update(stale)
            for name in stale:
                self._tools.pop(name, None)
                self._owners.pop(name, None)
        registered |= offered
        self._tools.update({t.name: t for t in tools})
        self._owners.update(owners)
        harness.add_tools(tools, activate=self.activate)
        self._register_prompts(server, connection)
        return collisions

    def _tool(self, server: McpServerConfig, connection: Any, listed: Any, name: str) -> Tool:
        from harnessc.runtime.mcp.results import to_tool_result

        remote = listed.name
        timeout = server.timeout_s
        bridge = self._bridge

        async def run(
            tool_call_id: str,
            params: dict[str, Any],
            signal: AbortSignal,
            on_update: ToolUpdate,
            context: Any,
        ) -> ToolResult:
            if signal.aborted:
                return error_result(f"{name} was not called: the run was aborted")
            loop = asyncio.get_running_loop()
            bridge.agent_loop = loop

            def progress(value: float, total: float | None, message: str | None) -> None:
                update = _progress_update(value, total, message, server.name, remote)
                loop.call_soon_threadsafe(on_update, update)

            pausing = bridge.user if isinstance(bridge.user, PausingUser) else None
            future = self._parked.pop(tool_call_id, None)
            if future is not None and pausing is not None and pausing.take_fresh(tool_call_id):
                future.cancel()  # a login made elsewhere: the call is made afresh
                future = None
            if future is None:
                future = mcp_loop().submit(
                    connection.call(
                        remote, dict(params), timeout, call_id=tool_call_id, progress=progress
                    )
                )
            call = _watch(future, loop)
            aborted = asyncio.ensure_future(signal.wait())
            waiting = {call, aborted}
            wanted = None
            if pausing is not None:
                wanted = asyncio.wrap_future(pausing.wanted(tool_call_id))
                waiting.add(wanted)
            try:
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                future.cancel()
                raise
            finally:
                aborted.cancel()
                if wanted is not None and not wanted.done():
                    wanted.cancel()
            if call not in done and wanted is not None and wanted in done:
                self._parked[tool_call_id] = future  # open at the server until the resume
                raise HoldCall(wanted.result())
            if pausing is not None:
                pausing.drop(tool_call_id)
            if call not in done:
                future.cancel()
                return error_result(f"{name} was cancelled: the run was aborted")
            outcome = call.result()
            if outcome.error is not None:
                return error_result(outcome.error, {"server": server.name, "tool": remote})
            return to_tool_result(outcome.result, server=server.name, tool=remote)

        description = (
            listed.description or getattr(listed, "title", None) or f"{remote} ({server.name})"
        )
        return McpTool(
            name=name,
            description=description,
            parameters=dict(listed.input_schema),
            run=run,
            label=f"{server.name}: {remote}",
            # the server's own deadline ends a call first; it stops while a person is asked
            # (a login, a question), which the loop's limit allows for
            timeout_s=server.timeout_s + 5.0 + _PERSON_S,
            annotations=_hints(listed),
        )

    def _register_prompts(self, server: McpServerConfig, connection: Any) -> None:
        if self._harness is None:
            return
        commands = self._harness.commands
        for listed in connection.prompts:
            command = f"{server.tool_name('')}{listed.name}"
            if command in commands:
                continue
            arguments = [a.name for a in (listed.arguments or ())]
            handler = _prompt_handler(connection, listed.name, arguments)
            try:
                self._unregister.append(
                    commands.register(
                        command, listed.description or "", handler, source=f"mcp:{server.name}"
                    )
                )
            except ValueError as exc:
                self.problems.append(
                    f"mcp server {server.name!r}: prompt {listed.name} skipped: {exc}"
                )

    # -- shutdown --------------------------------------------------------------------

    async def _close_all(self) -> None:
        """Stop every server; the connections stay (a later call or run starts them)."""
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.cancel()
        parked, self._parked = list(self._parked.values()), {}
        for future in parked:
            future.cancel()
        connections = list(self._connections.values())
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)

    async def aclose(self) -> None:
        """Stop every server now (they are also stopped at interpreter exit)."""
        await run_in_mcp_loop(self._close_all())
        self._started = False

    def close(self) -> None:
        future = mcp_loop().submit(self._close_all())
        future.result(30)
        self._started = False


async def _spawn_ahead(
    servers: list[McpServerConfig], environ: dict[str, str], sandbox: Any, workspace: str
) -> dict[str, Any]:
    """The stdio children of ``servers``, started before the SDK is imported (a child
    that cannot be started is left to its connection, which reports why), each in
    ``sandbox`` unless the spec let it out (``unsandboxed``)."""
    from harnessc.runtime.mcp.stdio import discard, spawn
    from harnessc.runtime.sandbox.spawn import SandboxUnavailable

    spawned: dict[str, Any] = {}
    for server in servers:
        command = server.resolved_command()
        if command is None:
            continue
        try:
            spawned[server.name] = await spawn(
                command,
                server.resolved_args(),
                env=child_env(server, environ),
                cwd=server.resolved_cwd(),
                sandbox=None if server.unsandboxed else sandbox,
                workspace=workspace,
            )
        except (OSError, SandboxUnavailable):
            continue
        except BaseException:
            await asyncio.gather(*(discard(p) for p in spawned.values()), return_exceptions=True)
            raise
    return spawned


_PERSON_S = 900.0  # how long the loop lets a call wait on a person's answer


def _watch(
    future: concurrent.futures.Future[Any], loop: asyncio.AbstractEventLoop
) -> asyncio.Future[Any]:
    """A future of ``loop`` done when ``future`` is; unlike ``asyncio.wrap_future`` it
    does not cancel ``future`` when cancelled, and is left alone once ``loop`` closed
    (a held call outlives the run's loop)."""
    mirror: asyncio.Future[Any] = loop.create_future()

    def copy(done: concurrent.futures.Future[Any]) -> None:
        if mirror.done():
            return
        if done.cancelled():
            mirror.cancel()
        elif done.exception() is not None:
            mirror.set_exception(done.exception())  # type: ignore[arg-type]
        else:
            mirror.set_result(done.result())

    def arrived(done: concurrent.futures.Future[Any]) -> None:
        if not loop.is_closed():
            try:
                loop.call_soon_threadsafe(copy, done)
            except RuntimeError:  # closed meanwhile
                pass

    future.add_done_callback(arrived)
    return mirror


def _progress_update(
    value: float, total: float | None, message: str | None, server: str, tool: str
) -> ToolResult:
    """A progress notification of a call as a partial result of the tool."""
    amount = f"{value:g}/{total:g}" if total else f"{value:g}"
    text = f"{amount} {message}" if message else amount
    details = {"server": server, "tool": tool, "progress": value, "total": total}
    return ToolResult(content=[TextContent(text)], details=details)


class McpStartFailed(FailRun):
    """A required server did not start: the run ends with this error (fail closed)."""


def _prompt_handler(connection: Any, prompt: str, arguments: list[str]) -> Any:
    async def handler(text: str) -> str | CommandOutcome:
        values: dict[str, str] = {}
        words = shlex.split(text) if text else []
        if len(arguments) == 1 and words and not all("=" in w for w in words):
            values[arguments[0]] = text
        else:
            for word in words:
                key, sep, value = word.partition("=")
                if not sep:
                    return f"usage: /{prompt} " + " ".join(f"{a}=..." for a in arguments)
                values[key] = value
        result = await run_in_mcp_loop(connection.get_prompt(prompt, values))
        parts = []
        for message in result.messages:
            content = message.content
            parts.append(str(getattr(content, "text", "") or f"[{getattr(content, 'type', '?')}]"))
        return CommandOutcome("prompt", "\n\n".join(parts))  # sent to the model

    return handler


class McpTool(Tool):
    """An MCP server's tool: a ``Tool`` with what the server says about it
    (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``, ``openWorldHint``,
    ``title``), shown when a call of it is asked about."""

    annotations: dict[str, Any] | None = None


_HINTS = {
    "title": "title",
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


def _hints(listed: Any) -> dict[str, Any] | None:
    """The server's annotations of a listed tool, by their MCP names (None: none given)."""
    annotations = getattr(listed, "annotations", None)
    if annotations is None:
        return None
    out = {
        wire: value
        for attr, wire in _HINTS.items()
        if isinstance(value := getattr(annotations, attr, None), str | bool)
    }
    return out or None

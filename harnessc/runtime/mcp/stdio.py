"""The stdio transport of an MCP server: a child in its own process group.

The child runs under the child supervisor (``children.py``): the supervisor leads a
new process group (its pid is the group id), passes stdin, stdout and stderr through
unchanged, and SIGKILLs the group when the agent dies, even by SIGKILL; the server
cannot read the agent's memory either. A command that cannot be found fails at once
with ``FileNotFoundError``, before anything is spawned. Its stdout is read
line by line: JSON-RPC messages go to the client session; any other line (a start-up
banner, a stray print) goes to the server's log as one line, never to the terminal.
Its stderr goes to the server's log (``serverlog.py``: capped, rotated, private).

Leaving the transport closes the child's stdin, waits 2 s for it to exit, then sends
SIGTERM and after 2 s SIGKILL to its process group; and whatever the way the server
ended (it exited on stdin close, it crashed, it was killed), what is left of its group
(the children it started) gets SIGTERM, then SIGKILL. When the server exits while the
agent runs, its group is cleaned up the same way at once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from harnessc.runtime.mcp.serverlog import ServerLog
from harnessc.runtime.processes.children import supervised
from harnessc.runtime.sandbox.spawn import sandboxed

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

    from harnessc.runtime.sandbox.policy import SandboxPolicy

__all__ = ["MAX_LINE_BYTES", "discard", "find_program", "spawn", "stdio_transport"]

MAX_LINE_BYTES = 64 * 1024 * 1024  # one JSON-RPC message; a longer line is dropped
_EXIT_GRACE_S = 2.0
_TERM_GRACE_S = 2.0
_POLL_S = 0.01
_GROUP_POLL_S = 0.05


@contextlib.asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str],
    cwd: str | None,
    log: ServerLog,
    process: anyio.abc.Process | None = None,
    sandbox: SandboxPolicy | None = None,
    workspace: str | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` of a client session talking to the child.

    ``process``: the child, when :func:`spawn` started it already (with these
    arguments); the transport owns it from here (it stops it on the way out)."""
    from mcp.shared.message import SessionMessage

    if process is None:
        process = await spawn(command, args, env=env, cwd=cwd, sandbox=sandbox, workspace=workspace)
    group = process.pid
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdout() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        dropping = False
        try:
            async with read_send:
                async for chunk in process.stdout:
                    buffer += chunk
                    while (end := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        if dropping:
                            dropping = False
                            continue
                        message = _parse(line, log)
                        if message is not None:
                            await read_send.send(message)
                    if len(buffer) > MAX_LINE_BYTES:
                        log.note(f"stdout: a line over {MAX_LINE_BYTES} bytes was dropped")
                        buffer.clear()
                        dropping = True
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        # the server closed its stdout: it exited (or will); clean up its group
        await _reap(process, group, _EXIT_GRACE_S, kill_leader=False)

    async def read_stderr() -> None:
        assert process.stderr is not None
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in process.stderr:
                log.write(chunk)

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_receive:
                async for item in write_receive:
                    data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the session sees the connection end

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_stdout)
        tasks.start_soon(read_stderr)
        tasks.start_soon(write_stdin)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await write_send.aclose()
                await read_receive.aclose()
                with contextlib.suppress(OSError, anyio.BrokenResourceError):
                    await process.stdin.aclose()  # type: ignore[union-attr]
                await _reap(process, group, _EXIT_GRACE_S, kill_leader=True)
            tasks.cancel_scope.cancel()
    _close_transport(process)


async def spawn(
    command: str,
    args: list[str],
    *,
    env: dict[str, str],
    cwd: str | None,
    sandbox: SandboxPolicy | None = None,
    workspace: str | None = None,
) -> anyio.abc.Process:
    """Start the server under the supervisor, its three standard streams piped, inside
    ``sandbox`` (for ``workspace``, default ``cwd``; ``SandboxUnavailable`` when it is
    required and cannot be enforced).

    Needs neither the MCP SDK nor its import time: a caller may start the child first
    and import the SDK while the server boots. Raises ``FileNotFoundError`` when
    ``command`` is not found."""
    program = find_program(command, env=env, cwd=cwd)
    if program is None:
        raise FileNotFoundError(errno.ENOENT, "no such program (not on PATH)", command)
    named = [p for p in (program, *args) if p and os.path.isabs(p) and os.path.exists(p)]
    argv, boxed_env = sandboxed(
        [command, *args],
        sandbox,
        workspace=workspace or cwd or os.getcwd(),
        cwd=cwd,
        env=env,
        # the spec's program and the files its arguments name, wherever they are
        readable=tuple(os.path.dirname(p) if os.path.isfile(p) else p for p in named),
    )
    env = boxed_env if boxed_env is not None else env
    return await anyio.open_process(
        supervised(argv, env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,  # the supervisor leads this session's group
    )


async def discard(process: anyio.abc.Process) -> None:
    """Stop a child :func:`spawn` started that no transport took over: its group
    gets SIGTERM, then SIGKILL."""
    with contextlib.suppress(OSError, anyio.BrokenResourceError):
        if process.stdin is not None:
            await process.stdin.aclose()
    await _reap(process, process.pid, 0.0, kill_leader=True)
    _close_transport(process)


def find_program(command: str, *, env: dict[str, str], cwd: str | None) -> str | None:
    """The executable ``command`` names, as ``execvp`` in ``cwd`` would find it; None
    when there is none. A name with a slash is a path (relative to ``cwd``); a bare
    name is looked up on the ``PATH`` of ``env``."""
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        path = os.path.join(cwd, command) if cwd is not None else command
        return command if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(command, path=env.get("PATH", os.defpath))


def _parse(line: bytes, log: ServerLog) -> SessionMessage | None:
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    if not line.strip():
        return None
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        text = line[:200].decode("utf-8", "replace")
        more = f" ({len(line)} bytes)" if len(line) > 200 else ""
        log.note(f"stdout, not JSON-RPC, ignored: {text!r}{more}")
        return None


async def _exited(process: anyio.abc.Process, timeout: float) -> bool:
    """Whether the child exited within ``timeout`` (its returncode, not its pipes)."""
    deadline = time.monotonic() + timeout
    while process.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await anyio.sleep(_POLL_S)
    return True


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to the group; False when nothing is left in it."""
    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


def _group_alive(group: int) -> bool:
    """Whether a process of ``group`` still runs; zombies (a parent that does not reap
    them) do not count. Linux reads /proc; elsewhere a signal 0 answers."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return _signal_group(group, 0)
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                fields = file.read().rpartition(b")")[2].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[0] not in (b"Z", b"X") and int(fields[2]) == group:
            return True
    return False


async def _group_gone(group: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while _group_alive(group):
        if time.monotonic() >= deadline:
            return False
        await anyio.sleep(_GROUP_POLL_S)
    return True


async def _reap(process: anyio.abc.Process, group: int, grace: float, *, kill_leader: bool) -> None:
    """The leader: ``grace`` to exit, then SIGTERM and SIGKILL (``kill_leader``); then
    what is left of its group, SIGTERM and SIGKILL."""
    with anyio.CancelScope(shield=True):
        if not await _exited(process, grace):
            if not kill_leader:
                return  # stdout closed but the server runs on: the shutdown stops it
            _signal_group(group, signal.SIGTERM)
            if not await _exited(process, _TERM_GRACE_S):
                _signal_group(group, signal.SIGKILL)
                await _exited(process, _TERM_GRACE_S)
        if _group_alive(group) and _signal_group(group, signal.SIGTERM):  # its children
            if not await _group_gone(group, _TERM_GRACE_S):
                _signal_group(group, signal.SIGKILL)
                await _group_gone(group, _TERM_GRACE_S)


def _close_transport(process: anyio.abc.Process) -> None:
    """Close asyncio's subprocess transport now (a survivor may hold a pipe open)."""
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError, OSError):
            close()

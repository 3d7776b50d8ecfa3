"""The ``bash`` tool: one command in its own process group, output streamed and capped.

The command runs with stdin from /dev/null under the supervisor of ``children.py``, in
the sandbox of the run it serves (``sandbox.spawn``: the policy the loop binds around
the call, which nothing in the call can change; a required sandbox this machine cannot
enforce refuses the command), in its own process group that dies with the agent; on timeout, abort or task cancellation
the whole group gets SIGTERM, then SIGKILL after a grace period. Output is never held
whole in memory: once it passes the caps it is streamed to a temp file and only a
bounded tail is kept for the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal as _signals
import time
from collections.abc import Mapping
from typing import IO, Any

from harnessc.runtime.core.signal import AbortSignal
from harnessc.runtime.processes.children import supervised
from harnessc.runtime.sandbox.spawn import SandboxUnavailable, current_policy, sandboxed
from harnessc.runtime.support.readable import allow_read
from harnessc.runtime.support.secrets import scrubbed_environ
from harnessc.runtime.tools.base import Tool, ToolResult, ToolUpdate, error_result, text_result
from harnessc.runtime.tools.outputlog import OutputLogs, output_logs
from harnessc.runtime.tools.paths import context_value, tool_env
from harnessc.runtime.tools.truncate import MAX_BYTES, MAX_LINES, format_size, truncate_tail

__all__ = ["OutputSink", "create_bash_tool", "kill_process_group", "wait_exit"]

_CHUNK = 64 * 1024
_TAIL_KEEP = 2 * MAX_BYTES
_UPDATE_EVERY_S = 0.25
_DRAIN_IDLE_S = 0.2  # after exit: keep reading while output still arrives
# An abort (or a cancelled task) is the user waiting: SIGKILL sooner than after a timeout.
_ABORT_GRACE_S = 0.2


class OutputSink:
    """Collects a byte stream: a bounded tail in memory, everything in a log once big.

    The log (see ``outputlog.py``) holds at most ``logs.max_log_bytes``; past that the
    output is still counted and its tail kept, but no longer stored.
    """

    def __init__(
        self,
        *,
        max_bytes: int = MAX_BYTES,
        max_lines: int = MAX_LINES,
        logs: OutputLogs | None = None,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_lines = max_lines
        self.tail = bytearray()
        self.total_bytes = 0
        self.newlines = 0
        self.full_path: str | None = None
        self.log_bytes = 0
        self.log_cut = False
        self._logs = logs
        self._file: IO[bytes] | None = None

    def _store(self, data: bytes) -> None:
        assert self._file is not None and self._logs is not None
        room = self._logs.max_log_bytes - self.log_bytes
        if len(data) > room:
            data = data[: max(room, 0)]
            self.log_cut = True
        if data:
            self._file.write(data)
            self.log_bytes += len(data)

    def write(self, chunk: bytes) -> None:
        self.total_bytes += len(chunk)
        self.newlines += chunk.count(b"\n")
        if (
            self._file is None
            and self.full_path is None
            and (self.total_bytes > self.max_bytes or self.newlines > self.max_lines)
        ):
            if self._logs is None:
                self._logs = output_logs()
            try:
                fd, self.full_path = self._logs.create()
            except OSError:  # no room for a log: the model still gets the tail
                self.full_path = ""
            else:
                allow_read(self.full_path)  # the notice sends the model there
                self._file = os.fdopen(fd, "wb")
                self._store(bytes(self.tail))  # everything so far: nothing was dropped yet
        if self._file is not None and not self.log_cut:
            self._store(chunk)
        self.tail.extend(chunk)
        extra = len(self.tail) - max(_TAIL_KEEP, 2 * self.max_bytes)
        if extra > 0:
            del self.tail[:extra]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            if self._logs is not None and self.full_path:
                self._logs.closed(self.full_path)

    def text(self) -> tuple[str, bool]:
        """The tail for the model, and whether anything was cut."""
        data = bytes(self.tail)
        dropped = self.total_bytes > len(data)
        if dropped:  # the first kept line is partial: start at the next one
            cut = data.find(b"\n")
            data = data[cut + 1 :] if cut >= 0 else data
        text = data.decode("utf-8", "replace")
        if text.endswith("\n"):
            text = text[:-1]
        cut_tail = truncate_tail(text, self.max_lines, self.max_bytes)
        return cut_tail.content, dropped or cut_tail.truncated

    def total_lines(self) -> int:
        ends_open = bool(self.tail) and not self.tail.endswith(b"\n")
        return self.newlines + (1 if ends_open else 0)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def wait_exit(process: asyncio.subprocess.Process, poll_s: float = 0.01) -> int:
    """Wait for the process itself to exit.

    ``Process.wait()`` also waits for its pipes to close, which a background child
    holding stdout can delay forever; the return code is set as soon as the process ends.
    """
    while process.returncode is None:
        await asyncio.sleep(poll_s)
    return process.returncode


async def kill_process_group(process: asyncio.subprocess.Process, grace_s: float = 1.0) -> None:
    """SIGTERM the process group, SIGKILL whatever is left after ``grace_s``, reap."""
    pgid = process.pid
    _signal_group(pgid, _signals.SIGTERM)
    try:
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if process.returncode is not None and not _group_alive(pgid):
                break
            await asyncio.sleep(0.02)
        _signal_group(pgid, _signals.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wait_exit(process), timeout=5.0)
    except asyncio.CancelledError:
        _signal_group(pgid, _signals.SIGKILL)
        raise


async def _pump(stream: asyncio.StreamReader, sink: OutputSink, on_update: ToolUpdate) -> None:
    last = time.monotonic()
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return
        sink.write(chunk)
        now = time.monotonic()
        if now - last >= _UPDATE_EVERY_S:
            last = now
            with contextlib.suppress(Exception):
                on_update(text_result(sink.text()[0], {"partial": True}))


def _finish_text(sink: OutputSink, footer: str) -> tuple[str, dict[str, Any]]:
    body, truncated = sink.text()
    details: dict[str, Any] = {"total_bytes": sink.total_bytes, "truncated": truncated}
    if not body:
        body = "(no output)"
    if truncated:
        total = sink.total_lines()
        shown = body.count("\n") + 1
        if sink.full_path:
            saved = (
                "Full output" if not sink.log_cut else f"Its first {format_size(sink.log_bytes)}"
            )
            where = (
                f" {saved} saved to {sink.full_path} (kept while this agent runs); "
                "read it with the read tool (offset/limit) or grep."
            )
            details["full_output_path"] = sink.full_path
        else:
            where = " The full output could not be saved."
        body += (
            f"\n\n[Output truncated: showing the last {shown} of {total} lines "
            f"({format_size(sink.total_bytes)} in all).{where}]"
        )
    if footer:
        body += f"\n\n{footer}"
    return body, details


def _names(value: Any) -> list[str]:
    """``tool_context.env_passthrough``: a list of names, or one comma-separated string."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list | tuple):
        return [str(item) for item in value]
    return []


_LOOP_MARGIN_S = 5.0  # the loop's limit of a call past bash's own timeout


def create_bash_tool(timeout_s: float | None = None, *, kill_grace_s: float = 1.0) -> Tool:
    """The ``bash`` built-in; ``timeout_s`` is the default when a call gives none."""

    description = (
        "Run a bash command in the workspace (stdin is empty). Returns stdout and stderr "
        f"together; long output keeps its last {MAX_LINES} lines or {MAX_BYTES // 1024} KB "
        "and the full output is saved to a file whose path is given. Optional timeout in "
        "seconds; on timeout the command and its children are killed."
    )
    if timeout_s:
        description += f" Default timeout: {timeout_s:g} s."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command to run."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "description": "Timeout in seconds.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    async def run(
        tool_call_id: str,
        params: dict[str, Any],
        signal: AbortSignal,
        on_update: ToolUpdate,
        context: Any,
    ) -> ToolResult:
        command = params.get("command")
        if not isinstance(command, str) or not command.strip():
            return error_result("bash needs a non-empty command")
        timeout = params.get("timeout")
        if timeout is None:
            timeout = timeout_s
        elif not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            return error_result(f"timeout must be a positive number of seconds (got {timeout!r})")
        if signal.aborted:
            return error_result("Command not run: the run was aborted")
        cwd = tool_env(context).base
        if not cwd.is_dir():
            return error_result(f"Working directory {cwd} does not exist")
        env = scrubbed_environ(passthrough=_names(context_value(context, "env_passthrough")))
        extra_env = context_value(context, "env")
        if isinstance(extra_env, Mapping):
            env.update({str(k): str(v) for k, v in extra_env.items()})
        shell = shutil.which("bash") or "/bin/sh"
        workspace = tool_env(context).workspace or cwd
        try:  # the run's sandbox (the loop binds it): nothing in the call changes it
            argv, boxed_env = sandboxed(
                [shell, "-c", command], current_policy(), workspace=str(workspace), env=env
            )
        except SandboxUnavailable as exc:
            return error_result(f"Command not run: {exc}")
        return await _run_command(
            argv, str(cwd), boxed_env or env, timeout, kill_grace_s, signal, on_update
        )

    # The loop's limit of a call leaves bash its own timeout and the kill's grace first.
    limit = timeout_s + kill_grace_s + _LOOP_MARGIN_S if timeout_s else None
    return Tool(
        name="bash",
        label="Bash",
        description=description,
        parameters=parameters,
        run=run,
        timeout_s=limit,
    )


async def _run_command(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    timeout: float | None,
    grace_s: float,
    signal: AbortSignal,
    on_update: ToolUpdate,
) -> ToolResult:
    started = time.monotonic()
    try:
        process = await asyncio.create_subprocess_exec(
            *supervised(argv, env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return error_result(f"Could not start {argv[0]}: {exc}")
    assert process.stdout is not None
    sink = OutputSink()
    reader = asyncio.create_task(_pump(process.stdout, sink, on_update))
    waiter = asyncio.create_task(wait_exit(process))
    aborter = asyncio.create_task(signal.wait())
    outcome = "exited"
    try:
        done, _ = await asyncio.wait(
            {waiter, aborter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            outcome = "aborted" if aborter in done else "timeout"
            await kill_process_group(
                process, min(grace_s, _ABORT_GRACE_S) if outcome == "aborted" else grace_s
            )
        # Keep reading while output still arrives; a background child may hold the pipe.
        seen = -1
        while not reader.done() and seen != sink.total_bytes:
            seen = sink.total_bytes
            await asyncio.wait({reader}, timeout=_DRAIN_IDLE_S)
    except asyncio.CancelledError:
        await kill_process_group(process, min(grace_s, _ABORT_GRACE_S))
        raise
    finally:
        for task in (reader, waiter, aborter):
            task.cancel()
        await asyncio.gather(reader, waiter, aborter, return_exceptions=True)
        sink.close()
        transport = getattr(process, "_transport", None)  # frees the pipe a child may hold
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.close()
    elapsed = time.monotonic() - started
    code = process.returncode
    if outcome == "timeout":
        footer = f"Command timed out after {timeout:g} s; it and its child processes were killed."
    elif outcome == "aborted":
        footer = "Command aborted; it and its child processes were killed."
    elif code:
        footer = f"Command exited with code {code}."
    else:
        footer = ""
    text, details = _finish_text(sink, footer)
    details.update({"exit_code": code, "outcome": outcome, "elapsed_s": round(elapsed, 3)})
    result = text_result(text, details)
    result.is_error = outcome != "exited" or bool(code)
    return result

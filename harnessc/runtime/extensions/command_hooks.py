"""``command: <shell command>`` hooks, with the protocol of Claude Code hooks.

The command runs through the shell in its own process group with the event JSON on
stdin (see ``protocol.hook_payload``). Its exit code decides:

- 0: no decision, or the JSON decision printed on stdout (``protocol.decision_result``).
  Plain text on stdout is ignored, except at ``before_agent_start`` where it is added
  to the prompt as context. Output starting with ``{`` or ``[`` that is not a JSON
  object is malformed: an error event, and the call is blocked at ``tool_call``.
- 2: block, with stderr as the reason (what "block" means per moment: ``protocol``).
- anything else: a non-blocking error; reported as an error event, the run goes on.

After ``timeout_s`` (default 60) the whole process group is killed and the hook counts
as failed: an error event, and at ``tool_call`` the call is blocked (fail closed). At
most 1 MB of stdout and of stderr is kept; the rest is read and dropped.
Environment: the caller's, plus ``HARNESSC_HOOK_EVENT`` (the moment),
``HARNESSC_SESSION_ID``, ``HARNESSC_PROJECT_DIR`` and ``CLAUDE_PROJECT_DIR`` (both
the session's working directory).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessc.runtime.events import ErrorEvent, NoticeEvent
from harnessc.runtime.extensions.protocol import (
    HookProtocolError,
    HookTimeoutError,
    block_result,
    decision_result,
    hook_payload,
)
from harnessc.runtime.hooks import BeforeAgentStartResult, HookSpec, canonical_hook_name
from harnessc.runtime.messages import UserMessage
from harnessc.runtime.secrets import scrubbed_environ

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT_S",
    "MAX_OUTPUT_BYTES",
    "CommandHook",
    "CommandRun",
    "command_hook",
    "run_hook_command",
]

DEFAULT_COMMAND_TIMEOUT_S = 60.0
MAX_OUTPUT_BYTES = 1024 * 1024
_CHUNK = 64 * 1024


@dataclass(slots=True)
class CommandRun:
    returncode: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool = False
    stderr_truncated: bool = False


def _kill_group(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - not POSIX
            process.kill()
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            process.kill()


async def _collect(stream: asyncio.StreamReader | None, limit: int) -> tuple[bytes, bool]:
    if stream is None:
        return b"", False
    kept = bytearray()
    truncated = False
    while chunk := await stream.read(_CHUNK):
        room = limit - len(kept)
        if room > 0:
            kept.extend(chunk[:room])
        if len(chunk) > room:
            truncated = True
    return bytes(kept), truncated


async def _feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    if stream is None:
        return
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command does not read its stdin: fine
    finally:
        with contextlib.suppress(Exception):
            stream.close()


async def run_hook_command(
    command: str,
    stdin: bytes,
    *,
    cwd: str | None,
    timeout_s: float,
    env: dict[str, str] | None = None,
    max_output: int = MAX_OUTPUT_BYTES,
) -> CommandRun:
    """Run ``command`` via the shell; HookTimeoutError (group killed) after ``timeout_s``."""
    process = await asyncio.create_subprocess_shell(
        command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(timeout_s):
            _, (out, out_cut), (err, err_cut), code = await asyncio.gather(
                _feed(process.stdin, stdin),
                _collect(process.stdout, max_output),
                _collect(process.stderr, max_output),
                process.wait(),
            )
    except TimeoutError:
        _kill_group(process)
        await process.wait()
        raise HookTimeoutError(
            f"command did not finish within {timeout_s:g} s and was killed"
        ) from None
    except BaseException:
        _kill_group(process)
        with contextlib.suppress(BaseException):
            await asyncio.shield(process.wait())
        raise
    return CommandRun(code, out, err, out_cut, err_cut)


def _decode(data: bytes, truncated: bool) -> str:
    text = data.decode("utf-8", errors="replace")
    return text + "\n[output cut at 1 MB]" if truncated else text


class CommandHook:
    """The handler behind ``command_hook``."""

    def __init__(self, moment: str, command: str, timeout_s: float, cwd: str | None) -> None:
        self.moment = canonical_hook_name(moment)
        self.command = command
        self.timeout_s = timeout_s
        self.cwd = cwd
        short = command if len(command) <= 60 else command[:57] + "..."
        self.label = f"command hook {short!r}"

    def __repr__(self) -> str:
        return f"CommandHook({self.moment!r}, {self.command!r}, timeout_s={self.timeout_s})"

    def _env(self, payload: dict[str, Any]) -> dict[str, str]:
        env = scrubbed_environ()  # no API keys or other credentials (runtime/secrets.py)
        env["HARNESSC_HOOK_EVENT"] = self.moment
        env["HARNESSC_SESSION_ID"] = str(payload.get("session_id") or "")
        env["HARNESSC_PROJECT_DIR"] = str(payload.get("cwd") or "")
        env.setdefault("CLAUDE_PROJECT_DIR", str(payload.get("cwd") or ""))
        return env

    async def __call__(self, event: Any, harness: Any) -> Any:
        payload = hook_payload(self.moment, event, harness)
        data = json.dumps(payload, ensure_ascii=False, default=repr).encode("utf-8")
        try:
            run = await run_hook_command(
                self.command,
                data,
                cwd=self.cwd,
                timeout_s=self.timeout_s,
                env=self._env(payload),
            )
        except HookTimeoutError as exc:
            raise HookTimeoutError(f"{self.label}: {exc}") from None
        except OSError as exc:
            raise HookProtocolError(f"{self.label} could not start: {exc}") from exc
        stdout = _decode(run.stdout, run.stdout_truncated)
        stderr = _decode(run.stderr, run.stderr_truncated)
        if run.returncode == 2:
            return block_result(self.moment, stderr, event, self.label)
        if run.returncode != 0:
            detail = stderr.strip() or stdout.strip() or "no output"
            await _emit(
                harness,
                ErrorEvent(
                    source=f"hook:{self.moment}",
                    message=f"{self.label} exited with code {run.returncode} "
                    f"(non-blocking): {detail[:2000]}",
                ),
            )
            return None
        return await self._interpret(stdout, event, harness)

    async def _interpret(self, stdout: str, event: Any, harness: Any) -> Any:
        text = stdout.strip()
        if not text:
            return None
        if not text.startswith(("{", "[")):
            if self.moment == "before_agent_start":
                return BeforeAgentStartResult(messages=[UserMessage(text)])
            return None
        try:
            decision = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HookProtocolError(
                f"{self.label} printed malformed JSON on stdout ({exc.msg} at line {exc.lineno} "
                f"column {exc.colno}): {text[:200]!r}"
            ) from None
        result, notice = decision_result(self.moment, decision, event, self.label)
        if notice:
            await _emit(
                harness,
                NoticeEvent(source=f"hook:{self.moment}", level="warning", message=notice),
            )
        return result


async def _emit(harness: Any, event: Any) -> None:
    emit = getattr(harness, "emit", None)
    if emit is not None:
        await emit(event)


def command_hook(
    moment: str,
    command: str,
    *,
    matcher: str | None = None,
    timeout_s: float | None = DEFAULT_COMMAND_TIMEOUT_S,
    cwd: str | Path | None = None,
) -> HookSpec:
    """A HookSpec running ``command`` at ``moment`` (Claude Code hook protocol).

    ``matcher`` is a regex over the whole tool name (``"write|edit"``; ``"*"`` or ``""``
    match every tool); ``cwd`` is where the command runs (default: the current folder).
    """
    if not isinstance(command, str) or not command.strip():
        raise ValueError("a command hook needs a non-empty command")
    timeout = DEFAULT_COMMAND_TIMEOUT_S if timeout_s is None else float(timeout_s)
    if timeout <= 0:
        raise ValueError(f"command hook timeout_s must be positive (got {timeout_s})")
    if matcher in ("*", ""):
        matcher = None
    handler = CommandHook(moment, command, timeout, os.fspath(cwd) if cwd is not None else None)
    return HookSpec(moment=moment, handler=handler, matcher=matcher, name=f"command:{command}")

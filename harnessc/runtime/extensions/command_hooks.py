"""``command: <shell command>`` hooks, speaking Claude Code's command-hook protocol.

The command runs through the shell in its own process group, in the agent's working
directory (the session's cwd), with the event JSON on stdin as Claude Code sends it
(``claude_events``: event names, fields, tool names and inputs). What its exit code and
output mean per event: ``claude_output``. A relative program path (``hooks/guard.sh``)
is found in the spec's folder.

The hook's result is its shell's exit: output still arriving is read for
``OUTPUT_GRACE_S`` more, then the process group is killed, so a child left in the
background neither holds the run up nor outlives it. After ``timeout_s`` (default 60)
the group is killed and the hook counts as failed: an error event, and at ``tool_call``
the call is blocked (fail closed), as it is when the command cannot start or the
program is missing or not executable (exit 127 / 126), and when its answer cannot be
read (malformed JSON, or JSON not in Claude Code's shape: an unknown or mistyped field);
an unreadable answer at UserPromptSubmit drops the prompt. At most 1 MB of stdout and of
stderr is kept; the rest is read and dropped.

Environment: the caller's, plus ``CLAUDE_PROJECT_DIR`` and ``HARNESSC_PROJECT_DIR``
(the agent's working directory), ``HARNESSC_SPEC_DIR`` (the spec's folder),
``HARNESSC_HOOK_EVENT`` (the harnessc moment) and ``HARNESSC_SESSION_ID``; at
SessionStart also ``CLAUDE_ENV_FILE``, whose ``export`` lines reach the session's bash
tool (``session_env``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import signal
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harnessc.runtime.core.events import ErrorEvent, NoticeEvent
from harnessc.runtime.core.hooks import HookSpec, asks_for_approval, canonical_hook_name
from harnessc.runtime.extensions.claude_events import (
    claude_event_name,
    claude_payload,
    compile_matcher,
    session_cwd,
    tool_base,
)
from harnessc.runtime.extensions.claude_output import (
    HookCall,
    HookOutcome,
    PromptBlocked,
    interpret_exit,
    interpret_json,
    interpret_text,
)
from harnessc.runtime.extensions.protocol import HookProtocolError, HookTimeoutError
from harnessc.runtime.extensions.session_env import (
    ENV_FILE_VARIABLE,
    EnvFile,
    EnvFileExports,
    apply_session_env,
    session_env,
)
from harnessc.runtime.processes.children import supervised
from harnessc.runtime.sandbox.spawn import SandboxUnavailable, sandboxed
from harnessc.runtime.support.secrets import scrubbed_environ

if TYPE_CHECKING:
    from harnessc.runtime.options.harness_context import HarnessContext
    from harnessc.runtime.sandbox.policy import SandboxPolicy

__all__ = [
    "DEFAULT_COMMAND_TIMEOUT_S",
    "MAX_OUTPUT_BYTES",
    "CommandHook",
    "CommandRun",
    "command_hook",
    "resolve_program",
    "run_hook_command",
]

DEFAULT_COMMAND_TIMEOUT_S = 60.0
MAX_OUTPUT_BYTES = 1024 * 1024
_CHUNK = 64 * 1024
OUTPUT_GRACE_S = 0.25  # output read after the shell exits, then the group is killed
_POLL_S = 0.02
_REAP_S = 2.0
_FIRST_WORD = re.compile(r"(\s*)(\S+)")


@dataclass(slots=True)
class CommandRun:
    returncode: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool = False
    stderr_truncated: bool = False


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the hook's whole process group, the shell itself gone or not: children it
    left in the background die with it."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(process.pid, signal.SIGKILL)
        elif process.returncode is None:  # pragma: no cover - not POSIX
            process.kill()
    except (ProcessLookupError, PermissionError):
        if process.returncode is None:
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


async def _exited(process: asyncio.subprocess.Process) -> int:
    """The shell's exit code, as soon as it exits.

    Not ``process.wait()``: that also waits for every holder of the stdout and stderr
    pipes, and a child the hook left in the background holds them for as long as it runs.
    """
    delay = 0.002
    while process.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, _POLL_S)
    return process.returncode


async def _reap(process: asyncio.subprocess.Process, tasks: list[asyncio.Task[Any]]) -> None:
    """Kill what is left of the group, let the readers reach end of file, wait for the
    transport to close (no transport outlives the loop: no "Event loop is closed")."""
    _kill_group(process)
    _, pending = await asyncio.wait(tasks, timeout=_REAP_S)
    for task in pending:  # a grandchild that left the group still holds a pipe
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    if not pending:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.wait(), _REAP_S)


async def run_hook_command(
    command: str,
    stdin: bytes,
    *,
    cwd: str | None,
    timeout_s: float,
    env: dict[str, str] | None = None,
    max_output: int = MAX_OUTPUT_BYTES,
    sandbox: SandboxPolicy | None = None,
    workspace: str | None = None,
    writable: tuple[str, ...] = (),
    readable: tuple[str, ...] = (),
) -> CommandRun:
    """Run ``command`` via the shell in a new process group, inside ``sandbox`` (for
    ``workspace``, default ``cwd``; ``writable``: paths this run may also write,
    ``readable``: paths it must see, such as the spec's folder).

    The result is the shell's exit: output still arriving is read for a short grace
    period (``OUTPUT_GRACE_S``), then the group is killed, background children
    included. HookTimeoutError (group killed) when the shell runs past ``timeout_s``.
    """
    argv, boxed_env = sandboxed(
        ["/bin/sh", "-c", command],
        sandbox,
        workspace=workspace or cwd or os.getcwd(),
        cwd=cwd,
        env=env,
        writable=writable,
        readable=readable,
    )
    env = boxed_env if boxed_env is not None else env
    process = await asyncio.create_subprocess_exec(
        *supervised(argv, env),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )
    feed = asyncio.ensure_future(_feed(process.stdin, stdin))
    out = asyncio.ensure_future(_collect(process.stdout, max_output))
    err = asyncio.ensure_future(_collect(process.stderr, max_output))
    try:
        try:
            async with asyncio.timeout(timeout_s):
                code = await _exited(process)
        except TimeoutError:
            raise HookTimeoutError(
                f"command did not finish within {timeout_s:g} s and was killed"
            ) from None
        await asyncio.wait([out, err], timeout=OUTPUT_GRACE_S)
    finally:
        await asyncio.shield(_reap(process, [feed, out, err]))
    (stdout, out_cut), (stderr, err_cut) = _done(out), _done(err)
    return CommandRun(code, stdout, stderr, out_cut, err_cut)


def _done(task: asyncio.Task[tuple[bytes, bool]]) -> tuple[bytes, bool]:
    if task.cancelled() or task.exception() is not None:
        return b"", False
    return task.result()


def _decode(data: bytes, truncated: bool) -> str:
    text = data.decode("utf-8", errors="replace")
    return text + "\n[output cut at 1 MB]" if truncated else text


def resolve_program(command: str, spec_dir: str | None) -> str:
    """``hooks/guard.sh --strict`` -> ``/abs/spec/dir/hooks/guard.sh --strict``.

    A first word that is a relative path (it has a ``/``) names a program in the spec's
    folder, wherever the hook runs; bare names (``python3``) go through PATH and
    ``$VAR/...`` paths are left to the shell.
    """
    if spec_dir is None:
        return command
    match = _FIRST_WORD.match(command)
    if match is None:
        return command
    word = match.group(2)
    if "/" not in word or word.startswith(("/", "~")) or any(c in word for c in "$`'\\\"*?["):
        return command
    program = os.path.normpath(os.path.join(spec_dir, word))
    return match.group(1) + shlex.quote(program) + command[match.end(2) :]


class CommandHook:
    """The handler behind ``command_hook``: one shell command, Claude Code's protocol."""

    def __init__(
        self,
        moment: str,
        command: str,
        timeout_s: float,
        cwd: str | None,
        *,
        spec_dir: str | None = None,
        event_name: str | None = None,
        matcher: str | None = None,
    ) -> None:
        self.moment = canonical_hook_name(moment)
        self.command = command
        self.program = resolve_program(command, spec_dir)
        self.timeout_s = timeout_s
        self.cwd = cwd
        self.spec_dir = spec_dir
        self.event_name = event_name
        self.matcher = matcher
        self._matches = compile_matcher(matcher)
        self._started: weakref.WeakSet[Any] = weakref.WeakSet()  # SessionStart: once each
        short = command if len(command) <= 60 else "..." + command[-57:]  # the script name
        self.label = f"command hook {short!r}"

    def __repr__(self) -> str:
        return f"CommandHook({self.moment!r}, {self.command!r}, timeout_s={self.timeout_s})"

    def _env(self, payload: dict[str, Any], cwd: str) -> dict[str, str]:
        env = scrubbed_environ()  # no API keys or other credentials (runtime/support/secrets.py)
        env["HARNESSC_HOOK_EVENT"] = self.moment
        env["HARNESSC_SESSION_ID"] = str(payload.get("session_id") or "")
        env["HARNESSC_PROJECT_DIR"] = cwd
        env["HARNESSC_SPEC_DIR"] = self.spec_dir or ""
        env["CLAUDE_PROJECT_DIR"] = cwd
        return env

    def _applies(self, event: Any, harness: HarnessContext, name: str) -> bool:
        if self.moment == "tool_result" and name != claude_event_name(self.moment, event):
            return False  # a PostToolUse hook on a failed call, or the reverse
        if name == "SessionStart":
            try:
                if harness in self._started:
                    return False
                self._started.add(harness)
            except TypeError:
                pass
        if self._matches is None:
            return True
        value = _match_value(name, event, harness)
        return value is None or self._matches(value)

    async def __call__(self, event: Any, harness: HarnessContext) -> Any:
        name = self.event_name or claude_event_name(self.moment, event)
        if not self._applies(event, harness, name):
            return None
        base = None
        if self.moment in ("tool_call", "tool_result"):
            base = await tool_base(harness, session_cwd(harness))
        payload = await claude_payload(self.moment, event, harness, event_name=name, base=base)
        cwd = self.cwd or payload["cwd"]
        data = json.dumps(payload, ensure_ascii=False, default=repr).encode("utf-8", "replace")
        env = self._env(payload, cwd)
        env_file = EnvFile() if name == "SessionStart" else None
        if env_file is not None:
            env[ENV_FILE_VARIABLE] = env_file.path
        try:
            run = await run_hook_command(
                self.program,
                data,
                cwd=cwd,
                timeout_s=self.timeout_s,
                env=env,
                sandbox=getattr(getattr(harness, "options", None), "sandbox", None),
                workspace=payload["cwd"],
                writable=(os.path.dirname(env_file.path),) if env_file is not None else (),
                readable=tuple(p for p in (self.spec_dir, self.cwd) if p),
            )
        except SandboxUnavailable as exc:  # fail closed: as a hook that could not start
            raise HookProtocolError(f"{self.label} could not start: {exc}") from None
        except HookTimeoutError as exc:
            raise HookTimeoutError(f"{self.label}: {exc}") from None
        except OSError as exc:
            raise HookProtocolError(f"{self.label} could not start: {exc}") from exc
        finally:
            exports = None
            if env_file is not None:
                exports = env_file.read({**scrubbed_environ(), **session_env(harness)})
        if exports is not None:
            await self._apply_env(harness, exports)
        stdout = _decode(run.stdout, run.stdout_truncated)
        stderr = _decode(run.stderr, run.stderr_truncated)
        call = HookCall(name, self.moment, event, harness, self.label, tool_base=base)
        try:
            if run.returncode != 0:
                outcome = interpret_exit(call, run.returncode, stdout, stderr)
            else:
                outcome = self._interpret(call, stdout)
        except HookProtocolError as exc:
            if name != "UserPromptSubmit":
                raise  # reported by the harness; at tool_call the call is blocked
            # a prompt guard whose answer cannot be read drops the prompt (fail closed)
            outcome = HookOutcome(errors=[str(exc)], blocked_prompt="its answer could not be read")
        return await _deliver(outcome, harness, self.moment, self.label)

    async def _apply_env(self, harness: HarnessContext, exports: EnvFileExports) -> None:
        """The SessionStart hook's ``CLAUDE_ENV_FILE`` exports, into the session's bash."""
        warnings = [f"{self.label}: {ENV_FILE_VARIABLE} {text}" for text in exports.warnings]
        if not apply_session_env(harness, exports.values):
            warnings.append(
                f"{self.label}: {ENV_FILE_VARIABLE} exports not applied: the tool context "
                "is not a mapping"
            )
        for text in warnings:
            await _emit(
                harness, NoticeEvent(source="hook:SessionStart", level="warning", message=text)
            )

    def _interpret(self, call: HookCall, stdout: str) -> HookOutcome:
        text = stdout.strip()
        if not text.startswith(("{", "[")):
            return interpret_text(call, text)
        try:
            decision = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HookProtocolError(
                f"{self.label} printed malformed JSON on stdout ({exc.msg} at line {exc.lineno} "
                f"column {exc.colno}): {text[:200]!r}"
            ) from None
        return interpret_json(call, decision)


def _match_value(name: str, event: Any, harness: HarnessContext) -> str | None:
    """What a matcher is tested against at each event (None: the event has no matcher)."""
    if name in ("PreToolUse", "PostToolUse", "PostToolUseFailure"):
        return str(getattr(event, "tool_name", ""))
    if name == "SessionStart":
        return "resume" if getattr(harness, "messages", None) else "startup"
    if name == "PreCompact":
        return "manual" if getattr(event, "custom_instructions", None) is not None else "auto"
    if name == "Notification":
        reason = str(getattr(event, "reason", "") or "")
        return "permission_prompt" if asks_for_approval(reason) else "idle_prompt"
    return None


async def _deliver(outcome: HookOutcome, harness: HarnessContext, moment: str, label: str) -> Any:
    source = f"hook:{moment}"
    for text in outcome.warnings:
        await _emit(harness, NoticeEvent(source=source, level="warning", message=text))
    for text in outcome.errors:
        await _emit(harness, ErrorEvent(source=source, message=text))
    if outcome.blocked_prompt is not None:
        message = f"prompt blocked by {label}: {outcome.blocked_prompt}"
        await _emit(harness, NoticeEvent(source=source, level="error", message=message))
        raise PromptBlocked(message)
    return outcome.result


async def _emit(harness: HarnessContext, event: Any) -> None:
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
    spec_dir: str | os.PathLike[str] | None = None,
    event_name: str | None = None,
) -> HookSpec:
    """A HookSpec running ``command`` at ``moment`` (Claude Code hook protocol).

    ``matcher`` selects tools as Claude Code does, under either name (``Bash`` or
    ``bash``; ``Edit|Write``; a regex; ``*`` or ``""`` for all). The command runs in
    ``cwd`` if given, else in the agent's working directory (the session's cwd);
    ``spec_dir`` is where a relative program path (``hooks/guard.sh``) is found.
    ``event_name`` pins the Claude Code event (hooks from a settings file).
    """
    if not isinstance(command, str) or not command.strip():
        raise ValueError("a command hook needs a non-empty command")
    timeout = DEFAULT_COMMAND_TIMEOUT_S if timeout_s is None else float(timeout_s)
    if timeout <= 0:
        raise ValueError(f"command hook timeout_s must be positive (got {timeout_s})")
    handler = CommandHook(
        moment,
        command,
        timeout,
        os.fspath(cwd) if cwd is not None else None,
        spec_dir=os.fspath(spec_dir) if spec_dir is not None else None,
        event_name=event_name,
        matcher=matcher,
    )
    # the handler matches tools itself (both names); the harness's own matcher is a regex
    # over harnessc's names only
    return HookSpec(moment=moment, handler=handler, matcher=None, name=f"command:{command}")

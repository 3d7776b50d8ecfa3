"""Where a program the agent starts meets the sandbox: :func:`sandboxed`.

The bash tool, command hooks and stdio MCP servers pass their command line through
:func:`sandboxed` before the child supervisor wraps it (``processes.children``); the
supervisor stays outside, so it still sees the agent die and kills the sandbox with it.

The bash tool finds the policy of the run it serves with :func:`current_policy` (the
loop binds it with :func:`using` around each tool call); hooks and MCP servers read the
harness's options. Nothing a program or the model does reaches the policy.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextvars import ContextVar

from harnessc.runtime.sandbox.policy import SandboxPolicy
from harnessc.runtime.sandbox.probe import probe

__all__ = [
    "SandboxUnavailable",
    "check_at_start",
    "current_policy",
    "require",
    "sandboxed",
    "using",
]


class SandboxUnavailable(RuntimeError):
    """The policy asks for a sandbox this machine cannot enforce (the reason says why)."""


_CURRENT: ContextVar[SandboxPolicy | None] = ContextVar("harnessc_sandbox", default=None)


def current_policy() -> SandboxPolicy | None:
    """The policy of the run this code serves (None: outside any run that has one)."""
    return _CURRENT.get()


@contextlib.contextmanager
def using(policy: SandboxPolicy | None) -> Iterator[None]:
    """Bind ``policy`` for the code inside (a tool call of a run)."""
    token = _CURRENT.set(policy)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def require(policy: SandboxPolicy | None) -> str | None:
    """Checked when an agent starts: SandboxUnavailable when ``policy`` requires a
    sandbox this machine cannot enforce; for ``auto`` on such a machine, the warning to
    show (its programs run unsandboxed); else None."""
    if policy is None or not policy.enabled:
        return None
    found = probe()
    if found.available:
        return None
    if policy.mode == "on":
        raise SandboxUnavailable(
            f"the spec requires a sandbox and this machine cannot enforce it: {found.reason}. "
            "Run with --sandbox off (or write `sandbox: off` in the spec) to run without one"
        )
    return (
        f"programs run WITHOUT a sandbox: {found.reason} "
        "(write `sandbox: on` to refuse to start without one, `sandbox: off` to silence this)"
    )


_WARNED: set[str] = set()


def check_at_start(policy: SandboxPolicy | None) -> None:
    """An agent starting (its harness is made): SandboxUnavailable when its policy
    requires what this machine cannot enforce; for ``auto`` there, a warning on stderr
    (once per process)."""
    warning = require(policy)
    if warning is not None and warning not in _WARNED:
        import sys

        _WARNED.add(warning)
        sys.stderr.write(f"[warning] sandbox: {warning}\n")


def sandboxed(
    argv: Sequence[str],
    policy: SandboxPolicy | None,
    *,
    workspace: str,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    writable: Sequence[str] = (),
    readable: Sequence[str] = (),
) -> tuple[list[str], dict[str, str] | None]:
    """``argv`` run inside ``policy``'s sandbox for ``workspace``, and the environment
    to start it with (``env`` plus the proxy's variables when hosts are allowed; None
    stays None); ``writable``: paths harnessc itself gives this one process (a hook's
    ``CLAUDE_ENV_FILE`` folder); ``readable``: paths it must see wherever they are (a
    hook's or MCP server's program and folder; harnessc's and Python's own are added).
    Unchanged when there is no policy, it is off, or it is ``auto`` on a machine that
    cannot enforce it; SandboxUnavailable when it is ``on`` there, or when
    its unreadable paths cannot be resolved (fail closed)."""
    out_env = dict(env) if env is not None else None
    if policy is None or not policy.enabled:
        return list(argv), out_env
    found = probe()
    if not found.available or found.program is None:
        if policy.mode == "auto":
            check_at_start(policy)  # its warning, if the agent's start did not show it
            return list(argv), out_env
        raise SandboxUnavailable(f"this machine cannot enforce the sandbox: {found.reason}")
    # loaded with the first sandboxed program, not when an agent starts
    from harnessc.runtime.sandbox.bwrap import bwrap_argv, proxy_environment
    from harnessc.runtime.sandbox.layout import SandboxLayoutError, resolve_layout

    try:
        if writable:
            policy = SandboxPolicy(
                policy.mode, (*policy.writable, *writable), policy.unreadable, policy.network
            )
        layout = resolve_layout(policy, workspace, cwd, (*_own_files(), *readable))
    except SandboxLayoutError as exc:
        raise SandboxUnavailable(str(exc)) from None
    folder = _runtime_folder()
    socket_path = None
    if layout.hosts:
        from harnessc.runtime.sandbox.proxy import host_proxy

        socket_path = host_proxy(layout.hosts, folder).path
        extra = proxy_environment(layout.hosts)
        out_env = {**(out_env if out_env is not None else os.environ), **extra}
    wrapped = bwrap_argv(
        found.program,
        layout,
        argv,
        denied_file=os.path.join(folder, "denied"),
        denied_dir=os.path.join(folder, "denied.d"),
        proxy_socket=socket_path,
    )
    return wrapped, out_env


def _own_files() -> tuple[str, ...]:
    """harnessc's package and the Python running it (the bridge runs there), and the
    operator's PYTHONPATH: read-only in the sandbox even when they lie in /tmp."""
    import sys
    from pathlib import Path

    found = [str(Path(__file__).resolve().parents[3]), sys.prefix, sys.base_prefix]
    found.append(os.path.dirname(os.path.realpath(sys.executable or "/")))
    found += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return tuple(found)


_FOLDER: str | None = None
_FOLDER_LOCK = threading.Lock()


def _sweep(parent: str) -> None:
    """Remove the runtime folders of processes that are gone (killed: no atexit ran)."""
    import shutil

    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name.removeprefix("harnessc-sandbox-").partition("-")[0]
        if name.startswith("harnessc-sandbox-") and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _runtime_folder() -> str:
    """This process's private folder (mode 700): the empty mode-000 file and folder the
    masks are made of, and the proxies' sockets; removed when the process exits."""
    global _FOLDER
    import atexit
    import shutil
    import tempfile

    with _FOLDER_LOCK:
        if _FOLDER is None or not os.path.isdir(_FOLDER):
            _sweep(tempfile.gettempdir())
            folder = tempfile.mkdtemp(prefix=f"harnessc-sandbox-{os.getpid()}-")
            denied = os.path.join(folder, "denied")
            with open(denied, "wb"):
                pass
            os.chmod(denied, 0)
            os.mkdir(os.path.join(folder, "denied.d"), 0)
            os.chmod(os.path.join(folder, "denied.d"), 0)
            atexit.register(shutil.rmtree, folder, True)
            _FOLDER = folder
        return _FOLDER

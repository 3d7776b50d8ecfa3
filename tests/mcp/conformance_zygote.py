"""A fork server for the MCP conformance suite's client runs.

The suite starts its client command once per scenario; harnessc's client
(``harnessc.testing.mcp_conformance_client``) spends most of its CPU time importing the MCP
SDK. ``Zygote`` starts one process that imports the client with everything it needs, and
``command()`` is a launcher (the standard library only) that the suite runs instead: it
hands the zygote its arguments, environment, working folder and standard streams, the
zygote forks, and the fork runs the client's ``main`` in that environment, with those
streams; the launcher exits with its exit status. So each scenario still gets a process
of its own, which runs the same client code as ``python -m
harnessc.testing.mcp_conformance_client``, without paying for the imports again. A launcher
the suite stops (its timeout) takes its fork with it.

``python conformance_zygote.py serve SOCKET``: the zygote; ``python conformance_zygote.py
launch SOCKET ARGS...``: the launcher.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

__all__ = ["Zygote"]

_READY = "ready"
# What the client imports as it runs (harnessc's MCP client imports the SDK lazily).
_WARM = (
    "httpx",
    "mcp",
    "mcp.client.auth",
    "mcp.client.auth.extensions.client_credentials",
    "mcp.client.auth.utils",
    "mcp.client.streamable_http",
    "mcp.client.subscriptions",
    "mcp.shared._httpx_utils",
    "mcp.shared.auth",
    "mcp.shared.exceptions",
    "mcp.shared.inbound",
    "mcp.shared.message",
    "mcp_types",
)


def _serve(path: str) -> int:
    import importlib
    import pkgutil

    import harnessc.runtime.mcp
    from harnessc.testing import mcp_conformance_client as client

    for module in pkgutil.iter_modules(harnessc.runtime.mcp.__path__, "harnessc.runtime.mcp."):
        importlib.import_module(module.name)
    for name in _WARM:
        importlib.import_module(name)
    if threading.active_count() != 1:  # a fork copies no thread: none may exist here
        print(f"the zygote has {threading.active_count()} threads", file=sys.stderr)
        return 1
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the forks are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print(_READY, flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os._exit(_run(conn, client.main))
        conn.close()


def _run(conn: socket.socket, main: object) -> int:
    """In the fork: take the launcher's request and streams, run the client, answer."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    request = json.loads(data)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = ["harnessc.testing.mcp_conformance_client", *request["args"]]

    def watch() -> None:  # the launcher stopped (the suite's timeout): stop too
        if not conn.recv(1):
            os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()
    try:
        code = int(main(request["args"]))  # type: ignore[operator]
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # what the interpreter would print, then exit 1
        import traceback

        traceback.print_exception(exc)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    conn.sendall(str(code).encode())
    return code


def _launch(path: str, args: list[str]) -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"args": args, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    answer = conn.recv(16)
    if not answer:
        print(
            "conformance zygote: the client's process ended without an exit status", file=sys.stderr
        )
        return 1
    return int(answer)


class Zygote:
    """The fork server, running until ``stop()``; ``command()`` is the client command."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="mcp-zygote-")
        self.socket = str(Path(self._folder.name) / "zygote.sock")
        self._log = open(Path(self._folder.name) / "zygote.log", "w+")  # noqa: SIM115
        self._proc = subprocess.Popen(
            [sys.executable, __file__, "serve", self.socket],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if line != _READY:
            self.stop()
            raise RuntimeError(f"the conformance zygote did not start: {self.log()}")

    def command(self) -> list[str]:
        # -I -S: the launcher imports only the standard library, and starts in milliseconds
        return [sys.executable, "-I", "-S", __file__, "launch", self.socket]

    def log(self) -> str:
        self._log.seek(0)
        return self._log.read()

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(timeout=30)
        assert self._proc.stdout is not None
        self._proc.stdout.close()
        self._log.close()
        self._folder.cleanup()

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        raise SystemExit(_serve(sys.argv[2]))
    raise SystemExit(_launch(sys.argv[2], sys.argv[3:]))

"""The command line that runs a program in a sandbox: bubblewrap's options for a layout.

The view it builds, in this order (a later mount covers an earlier one):

- the whole filesystem read-only; a fresh ``/dev`` (null, zero, random, tty, pts, shm)
  and ``/proc`` (of the sandbox's own PID namespace: no other process is visible);
- empty private ``/tmp`` and ``/run`` (writable, gone when the process ends: the host's
  unix sockets there, a database's, a terminal multiplexer's, are out of reach); what
  the process needs from them (harnessc's and Python's own files, a hook's or an MCP
  server's program and folder, as harnessc names them, never as a command line does)
  shown read-only;
- the workspace and the writable paths, read-write;
- every unreadable file covered by an empty file of mode 000, every unreadable folder by
  an empty folder of mode 000 (with no capability left, not even root opens them; a mount
  point cannot be renamed, removed or hard-linked);
- new user (where needed), PID, IPC, UTS, cgroup and network namespaces: the network is
  the sandbox's own loopback, nothing else; with hosts allowed, ``bridge.py`` runs first
  and the proxy's unix socket is mounted at ``/run/harnessc/proxy.sock``;
- every capability dropped (bwrap keeps them for root unless told), ``no_new_privs``,
  and the sandbox dies with the process that started it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from harnessc.runtime.sandbox.layout import Layout

__all__ = ["BRIDGE", "PROXY_PORT", "PROXY_SOCKET", "bwrap_argv", "proxy_environment"]

BRIDGE = str(Path(__file__).with_name("bridge.py"))
PROXY_SOCKET = "/run/harnessc/proxy.sock"  # inside the sandbox
PROXY_PORT = 3128  # on the sandbox's own loopback


def bwrap_argv(
    program: str,
    layout: Layout,
    argv: Sequence[str],
    *,
    denied_file: str,
    denied_dir: str,
    proxy_socket: str | None = None,
) -> list[str]:
    """bwrap's command line running ``argv`` in ``layout``."""
    out = [program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    out += ["--tmpfs", "/tmp"]
    if os.path.isdir("/run"):
        out += ["--tmpfs", "/run"]
    if os.path.isdir("/var/run") and not os.path.islink("/var/run"):
        out += ["--tmpfs", "/var/run"]
    for path in layout.readable:
        out += ["--ro-bind", path, path]
    for path in layout.writable:
        out += ["--bind", path, path]
    for path in layout.masked_dirs:
        out += ["--ro-bind", denied_dir, path]
    for path in layout.masked_files:
        out += ["--ro-bind", denied_file, path]
    command = list(argv)
    if proxy_socket is not None:
        out += ["--ro-bind", proxy_socket, PROXY_SOCKET]
        python = sys.executable or "python3"
        command = [python, "-I", "-S", BRIDGE, PROXY_SOCKET, str(PROXY_PORT), "--", *command]
    out += ["--unshare-all", "--cap-drop", "ALL", "--die-with-parent"]
    out += ["--chdir", layout.cwd, "--", *command]
    return out


def proxy_environment(hosts: Sequence[str]) -> dict[str, str]:
    """The variables that send a sandboxed program's HTTP(S) through the bridge. The
    loopback names stay the sandbox's own unless a host of the policy names one."""
    url = f"http://127.0.0.1:{PROXY_PORT}"
    loopback = ("localhost", "127.0.0.1", "::1")
    proxied = {h.rpartition(":")[0] if h.rpartition(":")[2].isdigit() else h for h in hosts}
    bypass = ",".join(name for name in loopback if name not in proxied)
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = bypass
    return env

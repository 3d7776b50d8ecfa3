"""What the sandbox costs, side by side in one sitting, and the mechanisms it was chosen
from:

1. one bash tool call (``true``) through harnessc: no sandbox, the sandbox (bubblewrap:
   read-only root, masks, private /tmp and /run, new namespaces, no network), and the
   sandbox with a network host (the bridge and the allow-listing proxy);
2. the mechanisms alone, one ``/bin/true`` each: a plain fork-exec, Landlock applied in
   the child (the write rules of the workspace, via ``preexec_fn``), bubblewrap with
   harnessc's options;
3. one stdio MCP server's start (spawn, initialize, tools/list of the SDK's notes server)
   with and without the sandbox;
4. resolving the policy for one spawn in a workspace of N files with a bare-name
   unreadable pattern (``*.pem``: a walk of the workspace) and with anchored ones only.

    python benchmarks/sandbox.py [--calls 60] [--files 5000]

Prints medians and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
SERVER = REPO / "tests" / "mcp" / "notes_server.py"


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


# -- 1. the bash tool -------------------------------------------------------------------


def bash_calls(workspace: str, policy: Any, calls: int) -> float:
    from harnessc.runtime.core.signal import AbortSignal
    from harnessc.runtime.sandbox import using
    from harnessc.runtime.tools.bash import create_bash_tool

    tool = create_bash_tool(timeout_s=30)
    context = {"workspace": workspace}

    async def run() -> list[float]:
        times = []
        with using(policy):
            for _ in range(calls):
                start = time.perf_counter()
                result = await tool.run(
                    "c", {"command": "true"}, AbortSignal(), lambda _: None, context
                )
                times.append(time.perf_counter() - start)
                assert not result.is_error, result.content
        return times

    return _median_ms(asyncio.run(run()))


# -- 2. the mechanisms alone ------------------------------------------------------------

_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_PR_SET_NO_NEW_PRIVS = 38
# write_file, remove_dir, remove_file, make_char, make_dir, make_reg, make_sock, make_fifo,
# make_block, make_sym, refer, truncate
_WRITES = sum(1 << bit for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14))


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_preexec(writable: list[str]) -> Callable[[], None] | None:
    """A ``preexec_fn`` restricting writes to ``writable`` (None: no Landlock here)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(_LANDLOCK_CREATE_RULESET, None, 0, 1) < 1:
        return None

    def apply() -> None:
        attr = _RulesetAttr(_WRITES)
        fd = libc.syscall(_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
        for path in writable:
            parent = os.open(path, os.O_PATH | os.O_CLOEXEC)
            rule = _PathBeneath(_WRITES, parent)
            libc.syscall(_LANDLOCK_ADD_RULE, fd, 1, ctypes.byref(rule), 0)
            os.close(parent)
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        libc.syscall(_LANDLOCK_RESTRICT_SELF, fd, 0)
        os.close(fd)

    return apply


def mechanisms(workspace: str, calls: int) -> dict[str, float]:
    from harnessc.runtime.sandbox import SandboxPolicy, sandboxed

    out: dict[str, float] = {}

    def timed(argv: list[str], **kwargs: Any) -> float:
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            subprocess.run(argv, check=True, cwd=workspace, **kwargs)
            times.append(time.perf_counter() - start)
        return _median_ms(times)

    out["plain fork-exec"] = timed(["/bin/true"])
    out["plain fork-exec, preexec_fn"] = timed(["/bin/true"], preexec_fn=lambda: None)
    apply = landlock_preexec([workspace, "/tmp", "/dev"])
    if apply is not None:
        out["Landlock (writes) in the child"] = timed(["/bin/true"], preexec_fn=apply)
    argv, _ = sandboxed(["/bin/true"], SandboxPolicy("on"), workspace=workspace)
    out["bubblewrap, harnessc's options"] = timed(argv)
    return out


# -- 3. an MCP server's start -----------------------------------------------------------


def mcp_start(workspace: str, policy: Any, runs: int) -> float:
    from harnessc.runtime.mcp.client import ServerConnection
    from harnessc.runtime.mcp.config import McpServerConfig
    from harnessc.runtime.mcp.loop import run_in_mcp_loop

    config = McpServerConfig(name="notes", command=sys.executable, args=[str(SERVER)])

    async def once() -> float:
        connection = ServerConnection(
            config,
            environ=dict(os.environ),
            log_dir=Path(workspace),
            sandbox=policy,
            workspace=workspace,
        )
        start = time.perf_counter()
        await connection.start()
        took = time.perf_counter() - start
        await connection.close()
        return took

    return _median_ms([asyncio.run(run_in_mcp_loop(once())) for _ in range(runs)])


# -- 4. resolving the policy ------------------------------------------------------------


def layout(workspace: str, patterns: list[str], runs: int) -> float:
    from harnessc.runtime.sandbox import SandboxPolicy
    from harnessc.runtime.sandbox.layout import resolve_layout

    policy = SandboxPolicy("on", unreadable=patterns)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        resolve_layout(policy, workspace)
        times.append(time.perf_counter() - start)
    return _median_ms(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--files", type=int, default=5000)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "")  # bytecode caching stays on

    from harnessc.runtime.sandbox import SandboxPolicy, probe

    found = probe()
    print(f"sandbox: {found.reason}")
    if not found.available:
        return
    with tempfile.TemporaryDirectory() as tmp:
        ws = os.path.join(tmp, "ws")
        os.mkdir(ws)
        Path(ws, ".env").write_text("KEY=x\n")
        off = SandboxPolicy("off")
        on = SandboxPolicy("on", unreadable=["./.env"])
        net = SandboxPolicy("on", unreadable=["./.env"], network=["127.0.0.1:9"])
        bash_calls(ws, on, 3)  # warm: the probe, the runtime folder, the proxy
        bash_calls(ws, net, 3)
        plain = bash_calls(ws, off, args.calls)
        boxed = bash_calls(ws, on, args.calls)
        proxied = bash_calls(ws, net, args.calls)
        print(f"\n1. one bash tool call (`true`), median of {args.calls}")
        print(f"   no sandbox                 {plain:7.1f} ms")
        print(
            f"   sandbox                    {boxed:7.1f} ms  ({boxed / plain:.2f}x, +{boxed - plain:.1f} ms)"
        )
        print(
            f"   sandbox + network host     {proxied:7.1f} ms  ({proxied / plain:.2f}x, +{proxied - plain:.1f} ms)"
        )
        print(f"\n2. the mechanisms alone (`/bin/true`), median of {args.calls}")
        rows = mechanisms(ws, args.calls)
        base = rows["plain fork-exec"]
        for name, ms in rows.items():
            print(f"   {name:<32} {ms:7.2f} ms  ({ms / base:.2f}x)")
        print("\n3. one stdio MCP server's start (spawn, initialize, tools/list), median of 5")
        mcp_plain = mcp_start(ws, off, 5)
        mcp_boxed = mcp_start(ws, on, 5)
        print(f"   no sandbox                 {mcp_plain:7.1f} ms")
        print(
            f"   sandbox                    {mcp_boxed:7.1f} ms  ({mcp_boxed / mcp_plain:.2f}x, +{mcp_boxed - mcp_plain:.1f} ms)"
        )
        big = os.path.join(tmp, "big")
        for i in range(args.files):
            folder = os.path.join(big, f"d{i // 100}")
            os.makedirs(folder, exist_ok=True)
            Path(folder, f"f{i}.txt").write_text("x")
        print(
            f"\n4. resolving the policy for one spawn, a workspace of {args.files} files, median of 20"
        )
        anchored = layout(big, ["./.env", "./secrets"], 20)
        walked = layout(big, ["*.pem"], 20)
        print(f"   anchored paths only        {anchored:7.2f} ms")
        print(f"   a bare name (*.pem)        {walked:7.2f} ms")


if __name__ == "__main__":
    main()

"""``harnessc doctor SPEC``, the MCP half: does each MCP server of an agent work? Checked
for real, as the agent would: every server is started (concurrently, with the agent's
child environment and log folder), must answer ``initialize`` and list its tools within
its ``timeout_s``, and is stopped again.

Per server one line: ``ok`` with the time it took and the number of tools the agent
would get, or ``error`` (a required server) / ``warning`` (``required: false``) with the
reason; then a ``warning`` line per tool the agent would skip, with why (invalid in the
protocol, a schema model APIs refuse, a second tool of the same name). Tools the spec
leaves out (``tools:`` / ``exclude:``) are counted, not listed.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from harnessc.doctor import Check
from harnessc.runtime.support.data_folder import DataFolder, resolve_folder

__all__ = ["check_mcp_servers", "doctor_mcp"]


def check_mcp_servers(extensions: Iterable[Any]) -> list[Check]:
    """The checks of every server of the ``McpToolset`` extensions among ``extensions``."""
    from harnessc.runtime.mcp import McpToolset

    toolsets = [e for e in extensions if isinstance(e, McpToolset)]
    if not toolsets:
        return []
    from harnessc.runtime.mcp.loop import mcp_loop

    checks: list[Check] = []
    for toolset in toolsets:
        checks += mcp_loop().submit(_check_toolset(toolset)).result()
    return checks


def doctor_mcp(extensions: Iterable[Any], echo: Callable[[str], None]) -> int:
    """Print the MCP servers' checks; 1 when one failed (a required server), else 0."""
    failed = False
    for check in check_mcp_servers(extensions):
        echo(f"{check.status:<7}  {check.text}")
        failed = failed or check.status == "error"
    return 1 if failed else 0


async def _check_toolset(toolset: Any) -> list[Check]:
    from harnessc.runtime.mcp.client import ServerConnection
    from harnessc.runtime.mcp.env import child_environ

    environ = child_environ(os.environ)
    log_dir = resolve_folder(toolset.log_dir or DataFolder("logs"))
    connections = [ServerConnection(s, environ=environ, log_dir=log_dir) for s in toolset.servers]
    try:
        outcomes = await asyncio.gather(
            *(_timed_start(c) for c in connections), return_exceptions=True
        )
        checks: list[Check] = []
        for connection, outcome in zip(connections, outcomes, strict=True):
            checks += _server_checks(connection, outcome)
        return checks
    finally:
        await asyncio.gather(*(c.close() for c in connections), return_exceptions=True)


async def _timed_start(connection: Any) -> float:
    started = time.monotonic()
    await connection.start()
    return time.monotonic() - started


def _server_checks(connection: Any, outcome: float | BaseException) -> list[Check]:
    from harnessc.runtime.mcp.names import agent_tool_name
    from harnessc.runtime.mcp.results import schema_problem

    server = connection.config
    label = f"mcp server {server.name!r}"
    if isinstance(outcome, BaseException):
        reason = str(outcome) or type(outcome).__name__
        if not reason.startswith(label):
            reason = f"{label}: {reason}"
        if server.required:
            return [Check("error", reason)]
        return [Check("warning", f"{reason} (required: false: the agent runs without it)")]
    skipped: list[str] = [
        f"{label}: tool {name!r} skipped: {why}"
        for name, why in connection.skipped
        if server.wants(name)
    ]
    offered: dict[str, str] = {}
    left_out = 0
    for listed in connection.tools:
        remote = listed.name
        if not server.wants(remote):
            left_out += 1
            continue
        name = agent_tool_name(server.tool_name(remote))
        if name in offered:
            skipped.append(
                f"{label}: tool {remote!r} skipped: it lists a second tool named {name!r} "
                f"(after {offered[name]!r})"
            )
            continue
        problem = schema_problem(listed.input_schema)
        if problem is not None:
            skipped.append(f"{label}: tool {remote!r} skipped: {problem}")
            continue
        offered[name] = remote
    counts = [f"{len(offered)} tool{'s' if len(offered) != 1 else ''}"]
    if skipped:
        counts.append(f"{len(skipped)} skipped")
    if left_out:
        counts.append(f"{left_out} left out by the spec")
    summary = (
        f"{label}: started, answered initialize and listed its tools in {outcome:.1f} s "
        f"(timeout {server.timeout_s:g} s): {', '.join(counts)}"
    )
    return [Check("ok", summary), *(Check("warning", line) for line in skipped)]

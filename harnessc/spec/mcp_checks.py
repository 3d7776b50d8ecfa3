"""Checks of the ``mcp:`` section on the raw YAML data (beside ``checks.py``).

Server names, a command that cannot be found, a ``from:`` file that cannot be read,
and the MCP extra not being installed. ``tool_prefixes`` gives the names an MCP tool
can have, so ``active_tools`` may list them.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harnessc.runtime.core import catalog
from harnessc.spec.diagnostics import Severity, did_you_mean
from harnessc.spec.yamlsource import KeyPath

__all__ = ["McpNames", "check_mcp"]

Report = Callable[..., None]
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class McpNames:
    """What the section declares: per server its tool prefix and allow-list."""

    def __init__(self) -> None:
        self.prefixes: dict[str, tuple[str, list[str] | None, list[str]]] = {}
        self.open_prefix = False  # a from: file: its servers are known only at run time

    def owner(self, tool_name: str) -> tuple[str, str, list[str] | None, list[str]] | None:
        for server, (prefix, allow, exclude) in self.prefixes.items():
            if prefix and tool_name.startswith(prefix):
                return server, tool_name[len(prefix) :], allow, exclude
        return None

    def accepts(self, tool_name: str) -> str | None:
        """None when ``tool_name`` may be an MCP tool; else why not ("" for not MCP)."""
        found = self.owner(tool_name)
        if found is None:
            return None if self.open_prefix and tool_name.startswith("mcp__") else ""
        server, tool, allow, exclude = found
        if allow is not None and tool not in allow:
            return f"{tool!r} is not in the tools allow-list of mcp server {server!r}"
        if tool in exclude:
            return f"mcp server {server!r} excludes {tool!r}"
        return None


def check_mcp(data: dict[str, Any], spec_dir: Path, report: Report) -> McpNames:
    names = McpNames()
    section = data.get("mcp")
    if not isinstance(section, dict):
        return names
    source = catalog.tool_source("mcp")
    if section and not source.available():
        report(
            ("mcp",),
            "error",
            f"MCP servers need the MCP SDK, which is not installed: {source.install_hint}",
            key=True,
        )
    for key, server in section.items():
        path: KeyPath = ("mcp", key)
        if key == "from":
            if isinstance(server, str) and server:
                _check_from(spec_dir, server, path, report)
                names.open_prefix = True
            continue
        if not isinstance(key, str) or not _SERVER_NAME.fullmatch(key) or "__" in key:
            report(
                path,
                "error",
                f"invalid MCP server name {key!r}: use letters, digits, '_' and '-' "
                "(no '__', at most 64 characters)",
                key=True,
            )
            continue
        if not isinstance(server, dict):
            if isinstance(server, str):
                hint = did_you_mean(key, ("from",))
                if hint:
                    report(path, "error", f"unknown key {key!r} in mcp{hint}", key=True)
            continue
        prefix = server.get("prefix")
        prefix = prefix if isinstance(prefix, str) else f"mcp__{key}__"
        allow = server.get("tools")
        exclude = server.get("exclude")
        names.prefixes[key] = (
            prefix,
            [t for t in allow if isinstance(t, str)] if isinstance(allow, list) else None,
            [t for t in exclude if isinstance(t, str)] if isinstance(exclude, list) else [],
        )
        command = server.get("command")
        if isinstance(command, str) and command.strip() and "${" not in command:
            severity: Severity = "warning" if server.get("required") is False else "error"
            _check_command(spec_dir, command, (*path, "command"), severity, report)
        cwd = server.get("cwd")
        if isinstance(cwd, str) and cwd and "${" not in cwd:
            folder = Path(os.path.expanduser(cwd))
            folder = folder if folder.is_absolute() else spec_dir / folder
            if not folder.is_dir():
                report((*path, "cwd"), "error", f"cwd {cwd!r} is not a folder")
    return names


def _check_command(
    spec_dir: Path, command: str, path: KeyPath, severity: Severity, report: Report
) -> None:
    """A relative path is part of the project: missing, it is an error for a required
    server. A name looked up on PATH, or an absolute path, depends on the machine the
    agent runs on, not the one that checks it: a warning (a required server that cannot
    start fails the run closed anyway)."""
    if "/" in command:
        program = Path(os.path.expanduser(command))
        if program.is_absolute():
            severity = "warning"
        else:
            program = spec_dir / program
        if not program.is_file():
            report(path, severity, f"command {command!r} does not exist")
        elif not os.access(program, os.X_OK):
            report(path, severity, f"command {command!r} is not executable (chmod +x)")
        return
    if shutil.which(command) is None:
        report(path, "warning", f"command {command!r} is not found on PATH")


def _check_from(spec_dir: Path, value: str, path: KeyPath, report: Report) -> None:
    from harnessc.runtime.mcp.config import McpConfigError, load_mcp_json

    file = Path(os.path.expanduser(value))
    file = file if file.is_absolute() else spec_dir / file
    if not file.is_file():
        report(path, "error", f"mcp.from: {value!r} does not exist in the spec's folder")
        return
    try:
        load_mcp_json(file)
    except McpConfigError as exc:
        report(path, "error", f"mcp.from: {exc}")

"""What a spec declares about an MCP server, as plain data (no SDK import here).

``McpServerConfig`` is one server: a child process over stdio (``command``) or a
streamable-HTTP endpoint (``url``). ``load_mcp_json`` reads the servers of a Claude
Code / Claude Desktop ``mcpServers`` file as they are. Environment values and headers
are kept out of ``repr`` so they never reach a log or a traceback.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessc.runtime.support.envref import expand_env

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "McpConfigError",
    "McpServerConfig",
    "expand_env",
    "load_mcp_json",
    "tool_prefix",
]

DEFAULT_TIMEOUT_S = 30.0
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class McpConfigError(ValueError):
    """A bad MCP server declaration (the message names the server and the key)."""


@dataclass(slots=True)
class McpServerConfig:
    """One MCP server. Exactly one of ``command`` (stdio) and ``url`` (streamable HTTP)."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    tools: list[str] | None = None
    exclude: list[str] = field(default_factory=list)
    prefix: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    required: bool = True
    # Why this stdio server runs outside the agent's sandbox (None: it runs inside).
    unsandboxed: str | None = None
    base_dir: str | os.PathLike[str] | None = None
    """The spec's folder: ``cwd``, a relative ``command`` path and relative paths in
    ``args`` resolve against it."""

    def validate(self) -> None:
        where = f"mcp server {self.name!r}"
        if not SERVER_NAME.fullmatch(self.name) or "__" in self.name:
            raise McpConfigError(
                f"bad mcp server name {self.name!r}: letters, digits, '_' and '-' "
                "(no '__', at most 64 characters)"
            )
        if (self.command is None) == (self.url is None):
            raise McpConfigError(f"{where}: give exactly one of 'command' (stdio) or 'url' (HTTP)")
        if self.url is not None and not re.match(r"^https?://[^/\s]+", self.url):
            raise McpConfigError(f"{where}: url {self.url!r} is not an http:// or https:// URL")
        if self.tools is not None and self.exclude:
            raise McpConfigError(f"{where}: give 'tools' or 'exclude', not both")
        if not self.timeout_s > 0:
            raise McpConfigError(f"{where}: timeout_s must be > 0")

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def tool_name(self, tool: str) -> str:
        return f"{tool_prefix(self.name, self.prefix)}{tool}"

    def wants(self, tool: str) -> bool:
        """The allow-list / exclude-list, over the server's own tool names."""
        if self.tools is not None:
            return tool in self.tools
        return tool not in self.exclude

    def resolved_cwd(self) -> str | None:
        base = Path(self.base_dir) if self.base_dir is not None else None
        if self.cwd is None:
            return str(base) if base is not None else None
        path = Path(os.path.expanduser(self.cwd))
        return str(base / path if base is not None and not path.is_absolute() else path)

    def resolved_command(self) -> str | None:
        """A path (a name with a slash) as ``harnessc check`` reads it: ``~`` expanded,
        and a relative one that exists beside the spec made absolute, whatever the
        server's ``cwd``; a bare name stays (it is looked up on PATH)."""
        command = self.command
        if command is None or "/" not in command:
            return command
        path = Path(os.path.expanduser(command))
        if not path.is_absolute() and self.base_dir is not None:
            beside = Path(self.base_dir) / path
            if beside.is_file():
                return str(beside)
        return str(path) if command.startswith("~") else command

    def resolved_args(self) -> list[str]:
        """Relative paths that exist beside the spec become absolute; flags stay."""
        if self.base_dir is None:
            return list(self.args)
        out = []
        for arg in self.args:
            candidate = Path(self.base_dir) / arg
            if (
                arg
                and not arg.startswith("-")
                and not Path(arg).is_absolute()
                and candidate.exists()
            ):
                out.append(str(candidate))
            else:
                out.append(arg)
        return out


def tool_prefix(server: str, prefix: str | None) -> str:
    """Claude Code's ``mcp__<server>__`` unless the spec gives its own prefix."""
    return prefix if prefix is not None else f"mcp__{server}__"


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpConfigError(f"{what} must be a list of strings")
    return list(value)


def _mapping(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise McpConfigError(f"{what} must map strings to strings")
    return {k: expand_env(v) for k, v in value.items()}


_JSON_KEYS = frozenset({"type", "command", "args", "env", "cwd", "url", "headers"})


def load_mcp_json(
    path: str | os.PathLike[str], *, base_dir: str | None = None
) -> list[McpServerConfig]:
    """The servers of an ``mcpServers`` file (Claude Code ``.mcp.json``, Claude Desktop).

    They are optional (``required=False``): as in Claude Code, a server of the file that
    cannot start is reported and the agent goes on without it."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise McpConfigError(f"cannot read {file}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise McpConfigError(f"{file} is not valid JSON: {exc}") from None
    except RecursionError:
        raise McpConfigError(f"{file} is not usable JSON: it is nested too deeply") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f"{file} has no 'mcpServers' object")
    out: list[McpServerConfig] = []
    for name, entry in servers.items():
        where = f"{file}: mcpServers.{name}"
        if not isinstance(entry, dict):
            raise McpConfigError(f"{where} must be an object")
        unknown = sorted(set(entry) - _JSON_KEYS)
        if unknown:
            raise McpConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
        kind = entry.get("type", "http" if "url" in entry else "stdio")
        if kind not in ("stdio", "http", "streamable-http"):
            raise McpConfigError(f"{where}: transport {kind!r} is not supported (stdio or http)")
        config = McpServerConfig(
            name=str(name),
            command=expand_env(entry["command"]) if isinstance(entry.get("command"), str) else None,
            args=[expand_env(a) for a in _strings(entry.get("args", []), f"{where}.args")],
            env=_mapping(entry.get("env", {}), f"{where}.env"),
            cwd=expand_env(entry["cwd"]) if isinstance(entry.get("cwd"), str) else None,
            url=expand_env(entry["url"]) if isinstance(entry.get("url"), str) else None,
            headers=_mapping(entry.get("headers", {}), f"{where}.headers"),
            base_dir=base_dir if base_dir is not None else str(file.parent),
            required=False,  # as Claude Code: one that cannot start is reported, not fatal
        )
        try:
            config.validate()
        except McpConfigError as exc:
            raise McpConfigError(f"{file}: {exc}") from None
        out.append(config)
    return out

"""What a spec declares about an MCP server, as plain data (no SDK import here).

``McpServerConfig`` is one server: a child process over stdio (``command``) or a
streamable-HTTP endpoint (``url``). ``McpOAuth`` is how an HTTP server's OAuth login
is made (the MCP authorization flow); by default an HTTP server that answers 401 gets
the default login (discovery, dynamic registration or a client ID metadata document,
PKCE), unless its ``headers`` carry an ``Authorization`` or ``auth`` is ``False``.
``load_mcp_json`` reads the servers of a Claude Code / Claude Desktop ``mcpServers``
file as they are, their ``oauth`` object included. Environment values, headers and
client secrets are kept out of ``repr`` so they never reach a log or a traceback.
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
    "GRANTS",
    "PROTOCOL_VERSIONS",
    "TOKEN_ENDPOINT_AUTH_METHODS",
    "McpConfigError",
    "McpOAuth",
    "McpServerConfig",
    "expand_env",
    "load_mcp_json",
    "tool_prefix",
]

DEFAULT_TIMEOUT_S = 30.0
SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
GRANTS = ("authorization_code", "client_credentials")
TOKEN_ENDPOINT_AUTH_METHODS = (
    "client_secret_basic",
    "client_secret_post",
    "none",
    "private_key_jwt",
)
# "auto": the newest revision both sides speak (server/discover, else initialize); a
# revision up to 2025-11-25: the initialize handshake; 2026-07-28: stateless requests.
PROTOCOL_VERSIONS = ("auto", "2025-11-25", "2026-07-28")


class McpConfigError(ValueError):
    """A bad MCP server declaration (the message names the server and the key)."""


@dataclass(slots=True)
class McpOAuth:
    """How harnessc logs in to an HTTP server (the MCP authorization specification).

    ``grant``: ``authorization_code`` (a person logs in in a browser; PKCE) or
    ``client_credentials`` (the agent's own credentials, no person). ``client_id`` /
    ``client_secret``: a client registered with the authorization server beforehand;
    without one, harnessc registers itself (dynamic client registration) or, where the
    server supports it, uses ``client_metadata_url`` as its client id (a client ID
    metadata document). ``scopes``: asked for on top of what the server's challenge
    names. ``callback_port``: the loopback port of the redirect
    (``http://localhost:PORT/callback``); default: one chosen at the first login, kept
    with the registration. ``private_key`` (PEM) signs a client assertion
    (``private_key_jwt``) instead of a secret. ``issuer``: the authorization server the
    client's credentials belong to (they are sent nowhere else).
    """

    grant: str = "authorization_code"
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scopes: list[str] | None = None
    callback_port: int | None = None
    client_metadata_url: str | None = None
    token_endpoint_auth_method: str | None = None
    private_key: str | None = field(default=None, repr=False)
    signing_algorithm: str | None = None
    issuer: str | None = None

    def validate(self, where: str) -> None:
        if self.grant not in GRANTS:
            raise McpConfigError(
                f"{where}: auth.grant {self.grant!r} is not one of {', '.join(GRANTS)}"
            )
        if self.grant == "client_credentials":
            if not self.client_id:
                raise McpConfigError(f"{where}: auth.grant client_credentials needs a client_id")
            if not self.client_secret and not self.private_key:
                raise McpConfigError(
                    f"{where}: auth.grant client_credentials needs a client_secret or a private_key"
                )
        elif self.private_key:
            raise McpConfigError(f"{where}: auth.private_key applies only to client_credentials")
        if self.client_secret is not None and not self.client_id:
            raise McpConfigError(f"{where}: auth.client_secret needs the client_id it belongs to")
        if self.callback_port is not None and not 0 < self.callback_port < 65536:
            raise McpConfigError(f"{where}: auth.callback_port must be a port (1 to 65535)")
        method = self.token_endpoint_auth_method
        if method is not None and method not in TOKEN_ENDPOINT_AUTH_METHODS:
            raise McpConfigError(
                f"{where}: auth.token_endpoint_auth_method {method!r} is not one of "
                f"{', '.join(TOKEN_ENDPOINT_AUTH_METHODS)}"
            )
        url = self.client_metadata_url
        if url is not None and not re.match(r"^https://[^/\s]+/[^\s]+$", url):
            raise McpConfigError(
                f"{where}: auth.client_metadata_url {url!r} must be an https:// URL with a "
                "path (the client ID metadata document)"
            )
        if self.scopes is not None and not all(s and " " not in s for s in self.scopes):
            raise McpConfigError(f"{where}: auth.scopes must be scope names without spaces")

    @property
    def scope(self) -> str | None:
        return " ".join(self.scopes) if self.scopes else None


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
    auth: McpOAuth | bool | None = None
    """None or True: an HTTP server that answers 401 gets the default OAuth login
    (none when ``headers`` carry an Authorization); False: never; ``McpOAuth``: this one."""
    protocol_version: str = "auto"
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
        if self.protocol_version not in PROTOCOL_VERSIONS:
            raise McpConfigError(
                f"{where}: protocol_version {self.protocol_version!r} is not one of "
                f"{', '.join(PROTOCOL_VERSIONS)}"
            )
        if isinstance(self.auth, McpOAuth):
            if self.url is None:
                raise McpConfigError(f"{where}: auth applies only to servers with 'url'")
            self.auth.validate(where)

    def oauth(self) -> McpOAuth | None:
        """The OAuth login this server gets, or None (stdio, ``auth: false``, or an
        ``Authorization`` header of the spec's own)."""
        if self.url is None or self.auth is False:
            return None
        if isinstance(self.auth, McpOAuth):
            return self.auth
        if any(key.lower() == "authorization" for key in self.headers):
            return None
        return McpOAuth()

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


_JSON_KEYS = frozenset({"type", "command", "args", "env", "cwd", "url", "headers", "oauth"})
# Claude Code's names in an ``oauth`` object, and harnessc's own (camelCase as the file).
_OAUTH_KEYS = {
    "clientId": "client_id",
    "clientSecret": "client_secret",
    "callbackPort": "callback_port",
    "scopes": "scopes",
    "grant": "grant",
    "clientMetadataUrl": "client_metadata_url",
    "tokenEndpointAuthMethod": "token_endpoint_auth_method",
    "privateKey": "private_key",
    "signingAlgorithm": "signing_algorithm",
    "issuer": "issuer",
}


def _oauth(value: Any, where: str) -> McpOAuth:
    """An ``oauth`` object of a ``.mcp.json`` server (string values may hold ${VAR})."""
    if not isinstance(value, dict):
        raise McpConfigError(f"{where}.oauth must be an object")
    if "authServerMetadataUrl" in value:
        raise McpConfigError(
            f"{where}.oauth.authServerMetadataUrl is not supported: harnessc finds the "
            "authorization server from the MCP server (its protected resource metadata)"
        )
    unknown = sorted(set(value) - set(_OAUTH_KEYS))
    if unknown:
        raise McpConfigError(
            f"{where}.oauth: unknown key(s) {', '.join(unknown)} (known: {', '.join(_OAUTH_KEYS)})"
        )
    fields: dict[str, Any] = {}
    for key, item in value.items():
        name = _OAUTH_KEYS[key]
        if name == "callback_port":
            if not isinstance(item, int) or isinstance(item, bool):
                raise McpConfigError(f"{where}.oauth.callbackPort must be a number")
            fields[name] = item
        elif name == "scopes":
            if isinstance(item, str):
                fields[name] = expand_env(item).split()
            else:
                fields[name] = [expand_env(s) for s in _strings(item, f"{where}.oauth.scopes")]
        elif not isinstance(item, str):
            raise McpConfigError(f"{where}.oauth.{key} must be a string")
        else:
            fields[name] = expand_env(item)
    return McpOAuth(**fields)


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
            auth=_oauth(entry["oauth"], where) if "oauth" in entry else None,
            base_dir=base_dir if base_dir is not None else str(file.parent),
            required=False,  # as Claude Code: one that cannot start is reported, not fatal
        )
        try:
            config.validate()
        except McpConfigError as exc:
            raise McpConfigError(f"{file}: {exc}") from None
        out.append(config)
    return out

"""What a server is started with: address, token, limits; checked before it binds."""

from __future__ import annotations

import importlib
import ipaddress
import os
from dataclasses import dataclass

__all__ = [
    "DEFAULT_TOKEN_ENV",
    "INSTALL_HINT",
    "ServeConfig",
    "ServeSetupError",
    "check_config",
    "check_extra",
    "check_mcp",
    "is_loopback",
    "read_token",
]

DEFAULT_TOKEN_ENV = "HARNESSC_SERVE_TOKEN"
INSTALL_HINT = "pip install 'harnessc[serve]'"
# The import names of the serve extra's packages, with the distribution each comes from.
_EXTRA = {
    "starlette": "starlette",
    "uvicorn": "uvicorn",
    "a2a": "a2a-sdk",
    "ag_ui": "ag-ui-protocol",
}


class ServeSetupError(Exception):
    """The server cannot start as configured (exit code 2); the message says why."""


@dataclass(slots=True)
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None  # the bearer token every endpoint but /healthz and the card needs
    max_runs: int = 64  # runs working at once; one more gets 429
    max_body_bytes: int = 1_000_000
    max_prompt_chars: int = 200_000
    max_json_depth: int = 32
    drain_s: float = 10.0  # SIGTERM: how long running runs get to reach a pause
    kept_runs: int = 1_000  # finished runs kept for their status and events
    # a request's head must arrive within header_timeout_s of the connection (or of the
    # previous response), its body within body_timeout_s of the head
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    max_connections: int = 1_024  # open at once (a request's head awaited, or served)


def check_extra() -> None:
    """ServeSetupError naming the install command when a package of the extra is missing."""
    missing = []
    for name, dist in _EXTRA.items():
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(dist)
    if missing:
        raise ServeSetupError(f"serving needs {', '.join(missing)}: {INSTALL_HINT}")


def check_mcp() -> None:
    """ServeSetupError naming the install command when the mcp SDK is missing."""
    try:
        importlib.import_module("mcp.server.lowlevel")
    except ImportError:
        raise ServeSetupError("serving over MCP needs mcp: pip install 'harnessc[mcp]'") from None


def read_token(token_env: str | None) -> str | None:
    """The token from ``token_env`` (which must then be set), else $HARNESSC_SERVE_TOKEN."""
    if token_env is not None:
        value = os.environ.get(token_env, "")
        if not value:
            raise ServeSetupError(f"--token-env {token_env}: the variable is not set or empty")
        return value
    return os.environ.get(DEFAULT_TOKEN_ENV) or None


def is_loopback(host: str) -> bool:
    """Whether ``host`` binds to this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_config(config: ServeConfig) -> None:
    if config.token is None and not is_loopback(config.host):
        raise ServeSetupError(
            f"binding {config.host} (not a loopback address) needs a token: set "
            f"{DEFAULT_TOKEN_ENV} or pass --token-env NAME"
        )
    if config.max_runs < 1:
        raise ServeSetupError(f"--max-runs must be at least 1 (got {config.max_runs})")
    for flag, seconds in (
        ("--header-timeout", config.header_timeout_s),
        ("--body-timeout", config.body_timeout_s),
    ):
        if not seconds > 0:
            raise ServeSetupError(f"{flag} must be more than 0 seconds (got {seconds:g})")
    if config.max_connections < 1:
        raise ServeSetupError(
            f"--max-connections must be at least 1 (got {config.max_connections})"
        )
    if not 0 <= config.port <= 65535:
        raise ServeSetupError(f"--port must be 0-65535 (got {config.port})")

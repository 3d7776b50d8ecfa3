"""The environment an MCP server child gets: the agent's, credentials removed, plus ``env:``.

A server declared in a spec is someone else's code; like bash it must not inherit the
API keys of the agent. The scrub is the one of every child process
(``harnessc.runtime.support.secrets.scrubbed_environ``: credential-like names, the models'
``api_key_env`` variables and copies of their values); exported shell functions
(values starting ``()``) are dropped too. A spec passes what a server needs in ``env:``.
"""

from __future__ import annotations

from collections.abc import Mapping

from harnessc.runtime.mcp.config import McpServerConfig
from harnessc.runtime.support.secrets import scrubbed_environ

__all__ = ["child_env", "child_environ"]


def child_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without credentials and without exported shell functions."""
    return {k: v for k, v in scrubbed_environ(environ).items() if not v.startswith("()")}


def child_env(config: McpServerConfig, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of ``config``'s child: ``environ`` (scrubbed) and its ``env:``."""
    return {**environ, **config.env}

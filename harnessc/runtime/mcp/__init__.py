"""MCP servers as toolsets (optional extra ``harnessc[mcp]``).

Importing this package is cheap and never imports the MCP SDK: the SDK is loaded when a
server starts, at the agent's first run. ``McpToolset`` is the extension a generated
module installs; ``McpServerConfig`` one declared server.
"""

from __future__ import annotations

from harnessc.runtime.mcp.config import (
    McpConfigError,
    McpServerConfig,
    expand_env,
    load_mcp_json,
    tool_prefix,
)
from harnessc.runtime.mcp.toolset import (
    INSTALL_HINT,
    McpToolset,
    McpUnavailableError,
    sdk_available,
)

__all__ = [
    "INSTALL_HINT",
    "McpConfigError",
    "McpServerConfig",
    "McpToolset",
    "McpUnavailableError",
    "expand_env",
    "load_mcp_json",
    "sdk_available",
    "tool_prefix",
]

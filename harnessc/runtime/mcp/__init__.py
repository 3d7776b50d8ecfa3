"""MCP servers as toolsets (optional extra ``harnessc[mcp]``).

Importing this package is cheap and never imports the MCP SDK: the SDK is loaded when a
server starts, at the agent's first run. ``McpToolset`` is the extension a generated
module installs; ``McpServerConfig`` one declared server, ``McpOAuth`` its login.
``McpUser`` is who answers a server's login or question (``user.py``): a door sets
its own on ``McpToolset.user``.
"""

from __future__ import annotations

from harnessc.runtime.mcp.config import (
    McpConfigError,
    McpOAuth,
    McpServerConfig,
    expand_env,
    load_mcp_json,
    tool_prefix,
)
from harnessc.runtime.mcp.pausing_user import PausingUser
from harnessc.runtime.mcp.toolset import (
    INSTALL_HINT,
    McpToolset,
    McpUnavailableError,
    sdk_available,
)
from harnessc.runtime.mcp.user import (
    ElicitationAnswer,
    ElicitationRequest,
    HeadlessUser,
    LoginAnswer,
    LoginRequest,
    McpUser,
    UserNeeded,
)
from harnessc.runtime.mcp.user_bridge import default_user

__all__ = [
    "INSTALL_HINT",
    "ElicitationAnswer",
    "ElicitationRequest",
    "HeadlessUser",
    "LoginAnswer",
    "LoginRequest",
    "McpConfigError",
    "McpOAuth",
    "McpServerConfig",
    "McpUser",
    "PausingUser",
    "UserNeeded",
    "default_user",
    "McpToolset",
    "McpUnavailableError",
    "expand_env",
    "load_mcp_json",
    "sdk_available",
    "tool_prefix",
]

"""Fixtures of the MCP tests (defined in mcpkit.py)."""

from .mcpkit import http_server, make_agent, model_server

__all__ = ["http_server", "make_agent", "model_server"]

"""Serving an agent over HTTP: the native run API, OpenAI-compatible chat completions,
AG-UI, A2A, MCP and a small dev page, behind an optional bearer token; or over MCP on
stdin and stdout. Every endpoint is a
translation of the run-control layer (``harnessc.runtime.runs``: plain runs, or a
durable agent's ``durable.control``).

config.py     flags, token, limits, checks   state.py     what every endpoint shares
images.py     a prompt's images, checked
bodies.py     JSON bodies and API errors     limits.py    every body bounded (size, depth)
auth.py       the bearer token               errors.py    failures as JSON errors
guard.py      Host / Origin (no token), JSON bodies only
connections.py  request deadlines, the connection bound, the count of those cut off
native.py     /healthz, /v1/runs, /v1/sessions  openapi.py  the OpenAPI document
openai_compat.py  /v1/chat/completions, /v1/models
agui.py       /agui (AG-UI events)           a2a.py       the A2A agent card and endpoint
mcp_server.py /mcp and --mcp (stdio): the agent as an MCP tool, its pauses as elicitation
devpage.py    the page at / (static/)        app.py       the ASGI application
launch.py     ``--serve`` and ``harnessc serve``: checks, uvicorn, SIGTERM drain

The web stack (the ``serve`` extra) is imported only when serving.
"""

from __future__ import annotations

from harnessc.runtime.serve.config import INSTALL_HINT, ServeConfig, ServeSetupError

__all__ = ["INSTALL_HINT", "ServeConfig", "ServeSetupError"]

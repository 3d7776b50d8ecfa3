"""A real stdio MCP server (the SDK's) with one tool whose side effect is a line in
``$TICKETS_LOG``: the durable tests count how often each ticket was created."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

app = MCPServer("tickets")


@app.tool()
def create(title: str) -> str:
    """Create a ticket."""
    with open(os.environ["TICKETS_LOG"], "a") as log:
        log.write(f"{os.getpid()} {title}\n")
    return f"created {title}"


if __name__ == "__main__":
    app.run()

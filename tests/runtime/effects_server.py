"""A real MCP server (the SDK's) whose one tool has a side effect: ``record`` appends
``mcp:<tag>`` to the file ``log``, one line per call. Over stdio by default, or
streamable HTTP on 127.0.0.1 with ``--http PORT``."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("effects")


@app.tool()
def record(tag: str, log: str) -> str:
    """Record a tag in a log file."""
    with open(log, "a", encoding="utf-8") as file:
        file.write(f"mcp:{tag}\n")
    return f"recorded {tag}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()

"""A real MCP server (the SDK's) whose one tool runs a shell command and returns what
it printed: the hostile battery run by a stdio MCP server, inside the agent's sandbox."""

from __future__ import annotations

import subprocess

from mcp.server.mcpserver import MCPServer

app = MCPServer("escape")


@app.tool()
def run(command: str) -> str:
    """Run a bash command; its output and exit code."""
    done = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    return f"{done.stdout}{done.stderr}\n(exit {done.returncode})"


if __name__ == "__main__":
    app.run()

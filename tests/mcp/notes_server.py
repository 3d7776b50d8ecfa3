"""A real MCP server for the tests, written with the SDK: stdio by default, or
streamable HTTP on 127.0.0.1 with ``--http PORT``.

It writes its pid to ``$MCP_PID_DIR/<name>-<pid>`` so the tests can check that no
server outlives the agent, hangs before answering when ``NOTES_HANG`` is set, and
starts a ``sleep 300`` grandchild, its pid written to the file ``$NOTES_CHILD``, when
that is set.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

name = os.environ.get("NOTES_NAME", "notes")
if __name__ == "__main__":  # before the SDK's slow import: the tests see every child
    folder = os.environ.get("MCP_PID_DIR")
    if folder:
        Path(folder, f"{name}-{os.getpid()}").write_text(str(os.getpid()))
    print(f"{name} server starting", file=sys.stderr, flush=True)
    if os.environ.get("NOTES_CHILD"):
        sleeper = subprocess.Popen(
            ["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        Path(os.environ["NOTES_CHILD"]).write_text(str(sleeper.pid))
    if os.environ.get("NOTES_HANG"):
        time.sleep(120)

from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.server.mcpserver.utilities.types import Image  # noqa: E402
from mcp_types import Tool as MCPTool  # noqa: E402
from mcp_types import ToolAnnotations  # noqa: E402

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


class NotesServer(MCPServer):
    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        # a tool whose input schema is not valid JSON Schema (a property that is no schema)
        tools.append(
            MCPTool(
                name="broken",
                description="Bad schema.",
                input_schema={"type": "object", "properties": {"x": {"type": "text"}}},
            )
        )
        return tools


app = NotesServer(name)


@app.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def search(query: str) -> str:
    """Search the notes for a query."""
    return f"found {query!r} in {os.environ.get('NOTES_DIR', '?')}"


@app.tool()
def secret() -> str:
    """A tool the spec hides."""
    return "the secret"


@app.tool()
def fail(reason: str = "the notes are locked") -> str:
    """Always fails."""
    raise ValueError(reason)


@app.tool()
def huge(lines: int = 5000) -> str:
    """A very long result."""
    return "\n".join(f"line {i}" for i in range(lines))


@app.tool()
def picture() -> Image:
    """A one-pixel image."""
    return Image(data=PNG, format="png")


@app.tool()
def env(variable: str) -> str:
    """One variable of the server's environment ('<unset>' when missing)."""
    return os.environ.get(variable, "<unset>")


@app.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@app.tool()
def exit_soon() -> str:
    """Answers, then the server exits (as if it crashed)."""
    threading.Timer(0.2, lambda: os._exit(3)).start()
    return "bye"


@app.tool()
def die() -> str:
    """The server exits in the middle of the call."""
    os._exit(5)


@app.tool()
async def slow(seconds: float = 30) -> str:
    """Sleeps."""
    await asyncio.sleep(seconds)
    return "slept"


@app.tool()
async def grow(ctx: Context) -> str:
    """Adds a tool 'extra' and tells the client its tool list changed."""

    def extra() -> str:
        """Added at run time."""
        return "extra!"

    app.add_tool(extra)
    await _tools_changed(ctx)
    return "grown"


@app.tool()
async def shrink(ctx: Context) -> str:
    """Removes the tool 'extra' again and tells the client its tool list changed."""
    app.remove_tool("extra")
    await _tools_changed(ctx)
    return "shrunk"


async def _tools_changed(ctx: Context) -> None:
    """Tell the client its tool list changed, in either protocol revision: a
    ``subscriptions/listen`` event (2026-07-28) and the session notification."""
    await ctx.notify_tools_changed()
    try:
        await ctx.session.send_tool_list_changed()
    except Exception:  # no session to notify in the stateless revision
        pass


@app.prompt()
def summarize(topic: str) -> str:
    """Summarize a topic from the notes."""
    return f"Summarize what the notes say about {topic}."


if __name__ == "__main__":
    args: list[Any] = sys.argv[1:]
    if args[:1] == ["--http"]:
        app.run("streamable-http", host="127.0.0.1", port=int(args[1]))
    else:
        app.run()

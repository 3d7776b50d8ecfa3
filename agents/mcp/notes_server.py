"""A small MCP server (written with the SDK) for the ``notes`` example agent.

Notes are the Markdown files of ``$NOTES_DIR``; run it by hand with
``python3 agents/mcp/notes_server.py`` (stdio).
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

app = MCPServer("notes")
ROOT = Path(os.environ.get("NOTES_DIR", "notes"))


@app.tool()
def search(query: str) -> list[str]:
    """Names of the notes whose text contains ``query`` (case-insensitive)."""
    needle = query.lower()
    return sorted(
        p.name for p in ROOT.glob("*.md") if needle in p.read_text(errors="replace").lower()
    )


@app.tool()
def read_note(name: str) -> str:
    """The text of one note, by name (``ideas.md``)."""
    path = (ROOT / name).resolve()
    if path.parent != ROOT.resolve() or not path.is_file():
        raise ValueError(f"no note named {name!r}")
    return path.read_text(errors="replace")


@app.tool()
def delete_note(name: str) -> str:
    """Deletes a note (the example spec leaves this tool out)."""
    raise ValueError("deleting is not allowed")


@app.prompt()
def summarize(topic: str) -> str:
    """Ask for a summary of what the notes say about a topic."""
    return f"Search the notes for {topic!r}, read the matches and summarise them."


if __name__ == "__main__":
    app.run()

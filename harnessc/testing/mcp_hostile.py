"""A hostile MCP server for tests: raw JSON-RPC over stdio, standard library only.

The MCP SDK's own server refuses to send what a hostile server sends (a tool list the
protocol's schema rejects), so this one writes the lines itself. Run it as a script
(``python3 .../mcp_hostile.py``); the environment picks what it does:

``HOSTILE_TOOLS``   a JSON list of raw tool objects, listed after ``echo`` and ``image``
``HOSTILE_BANNER``  a line printed on stdout before any JSON-RPC (a start-up banner)
``HOSTILE_STDERR_MB`` megabytes written to stderr at start, as fast as the pipe takes them
``HOSTILE_CHILD``   a file: a ``sleep 300`` grandchild is started and its pid written there
``HOSTILE_IMAGE``   a JSON object ``{"data": ..., "mimeType": ...}`` the ``image`` tool returns
                    (``"data": {"repeat": "A", "times": N}`` makes a long string)
``HOSTILE_PID_DIR`` a folder: the server writes its pid to ``hostile-<pid>``
``HOSTILE_ENDLESS_PAGES`` every ``tools/list`` page names the same next page

Tools: ``echo`` (returns its ``text``), ``image``, ``change`` (sends
``notifications/tools/list_changed``; every later ``tools/list`` is never answered),
and the raw ones of ``HOSTILE_TOOLS`` (they answer ``called <name>``). The server exits
when its stdin closes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

_OBJECT = {"type": "object"}


def _tools() -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = [
        {
            "name": "echo",
            "description": "Echo a text.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
        {"name": "image", "description": "An image.", "inputSchema": _OBJECT},
        {"name": "change", "description": "Announce a changed tool list.", "inputSchema": _OBJECT},
    ]
    tools += json.loads(os.environ.get("HOSTILE_TOOLS", "[]"))
    return tools


def _image() -> dict[str, Any]:
    spec = json.loads(os.environ.get("HOSTILE_IMAGE", "{}"))
    data = spec.get("data", "")
    if isinstance(data, dict):
        data = str(data["repeat"]) * int(data["times"])
    return {"type": "image", "data": data, "mimeType": spec.get("mimeType", "image/png")}


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _start() -> None:
    folder = os.environ.get("HOSTILE_PID_DIR")
    if folder:
        Path(folder, f"hostile-{os.getpid()}").write_text(str(os.getpid()))
    child = os.environ.get("HOSTILE_CHILD")
    if child:
        sleeper = subprocess.Popen(
            ["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        Path(child).write_text(str(sleeper.pid))
    megabytes = int(os.environ.get("HOSTILE_STDERR_MB", "0") or 0)
    if megabytes:
        line = ("noise " * 170 + "\n").encode()  # about 1 KiB
        for _ in range(megabytes * 1024):
            sys.stderr.buffer.write(line)
        sys.stderr.flush()
    banner = os.environ.get("HOSTILE_BANNER")
    if banner:
        sys.stdout.write(banner + "\n")
        sys.stdout.flush()


def _answer(method: str, params: dict[str, Any], state: dict[str, Any]) -> Any:
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    if method == "tools/list":
        if state["changed"]:
            return None  # silence: the client waits for an answer that never comes
        if os.environ.get("HOSTILE_ENDLESS_PAGES"):
            return {"tools": _tools(), "nextCursor": "again"}
        return {"tools": _tools()}
    if method == "tools/call":
        name = params.get("name")
        if name == "echo":
            text = str((params.get("arguments") or {}).get("text", ""))
            return {"content": [{"type": "text", "text": text}]}
        if name == "image":
            return {"content": [_image()]}
        if name == "change":
            state["changed"] = True
            _send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            return {"content": [{"type": "text", "text": "changed"}]}
        return {"content": [{"type": "text", "text": f"called {name}"}]}
    if method == "ping":
        return {}
    return {"__error__": f"method not found: {method}"}


def main() -> None:
    _start()
    state: dict[str, Any] = {"changed": False}
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue  # a notification
        result = _answer(str(message.get("method")), message.get("params") or {}, state)
        if result is None:
            continue
        if isinstance(result, dict) and "__error__" in result:
            error = {"code": -32601, "message": result["__error__"]}
            _send({"jsonrpc": "2.0", "id": message["id"], "error": error})
        else:
            _send({"jsonrpc": "2.0", "id": message["id"], "result": result})


if __name__ == "__main__":
    main()

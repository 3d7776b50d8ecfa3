"""A key-free demo model: an OpenAI-compatible server on this machine that answers by rule.

``harnessc serve-demo`` and ``python -m harnessc.testing`` start it, so a first agent runs
end to end, tools included, with no API key and no model download. It is the scripted
``ProtocolServer`` of the tests with a handler that plays a tiny model:

- "list the files" (or "ls", "what is here") -> calls ``ls``, then shows the listing;
- "read PATH" -> calls ``read`` on PATH; "grep WORD" / "find WORD" -> calls ``grep``;
- anything else -> a short reply saying what it can do.

It uses a tool only when the request offers one of that name, streams its replies as
chat-completions SSE, reports token usage and lists its models at ``GET /v1/models``.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import threading
from typing import Any

from harnessc.testing.protocol_server import ProtocolServer, RecordedRequest, ScriptedResponse
from harnessc.testing.streams import openai_events, openai_tool_call_events, split_text

__all__ = ["DEMO_MODELS", "DemoModel", "main", "serve"]

DEMO_MODELS = ("demo", "gpt-4.1-mini", "gpt-4.1", "llama3.2")
DEFAULT_PORT = 8765

_HELP = (
    "Hello from the harnessc demo model (a local stand-in, no API key needed). "
    'Try "list the files here", "read README.md" or "grep TODO".'
)


class DemoModel:
    """The handler: one scripted answer per request, from the last message of the chat."""

    def __init__(self) -> None:
        self._calls = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> ScriptedResponse:
        if request.method == "GET" and request.route.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": m, "object": "model"} for m in DEMO_MODELS]}
            return ScriptedResponse.json_body(200, body)
        payload = request.json
        if request.method != "POST" or not isinstance(payload, dict):
            return ScriptedResponse.json_body(404, {"error": {"message": "not found"}})
        messages = payload.get("messages") or []
        tools = {
            t.get("function", {}).get("name")
            for t in payload.get("tools") or []
            if isinstance(t, dict)
        }
        last = messages[-1] if messages else {}
        if last.get("role") == "tool":
            return self._text(_describe_result(messages, last))
        call = _plan(_text_of(last.get("content")), tools)
        if call is None:
            return self._text(_HELP)
        with self._lock:
            self._calls += 1
            call_id = f"demo_{self._calls}"
        name, arguments = call
        events = openai_tool_call_events([(call_id, name, json.dumps(arguments))])
        return ScriptedResponse.sse(events)

    def _text(self, text: str) -> ScriptedResponse:
        return ScriptedResponse.sse(
            openai_events(split_text(text, 12), usage=(40, len(text) // 4, 0))
        )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _plan(prompt: str, tools: set[str]) -> tuple[str, dict[str, Any]] | None:
    """The tool call the demo makes for ``prompt`` (None: answer in text)."""
    lowered = prompt.lower()
    read = re.search(r"\bread\s+(\S+)", prompt, re.I)
    if read and "read" in tools:
        return "read", {"path": read.group(1).strip("`'\".,")}
    search = re.search(r"\b(?:grep|find|search for)\s+(\S+)", prompt, re.I)
    if search and "grep" in tools:
        return "grep", {"pattern": search.group(1).strip("`'\".,")}
    if re.search(r"\b(list|ls|files|what is here)\b", lowered):
        if "ls" in tools:
            return "ls", {"path": "."}
        if "bash" in tools:
            return "bash", {"command": "ls"}
    return None


def _describe_result(messages: list[Any], result: dict[str, Any]) -> str:
    name = "the tool"
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            if call.get("id") == result.get("tool_call_id"):
                name = f"`{call.get('function', {}).get('name', 'the tool')}`"
    text = _text_of(result.get("content")).strip()
    lines = text.splitlines()
    shown = "\n".join(lines[:20]) + ("\n..." if len(lines) > 20 else "")
    return f"Here is what {name} returned ({len(lines)} lines):\n\n```\n{shown}\n```\n"


def serve(host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> ProtocolServer:
    """Start the demo server (in a background thread); ``stop()`` ends it."""
    server = ProtocolServer(host=host, port=port)
    server.set_handler(DemoModel())
    return server.start()


def main(argv: list[str] | None = None, prog: str = "python -m harnessc.testing") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: any free one)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        server = serve(args.host, args.port)
    except OSError as exc:
        print(f"{prog}: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
        return 2
    url = f"{server.url}/v1"
    print(f"demo model server at {url} (no API key needed; Ctrl-C stops it)", flush=True)
    print(f'  HARNESSC_BASE_URL={url} harnessc run NAME "list the files here"', flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0

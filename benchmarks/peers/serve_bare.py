"""The floor of benchmarks/serve_peers.py: the add agent's work served by bare aiohttp.

POST /agui takes an AG-UI RunAgentInput and does what a served agent must do at the
least: it calls the model (streamed chat completions, one shared ``aiohttp``
ClientSession with its defaults) until it answers without a tool call, runs each
``add`` call, and streams AG-UI-shaped SSE events (RUN_STARTED, TOOL_CALL_START / ARGS
/ END / RESULT, TEXT_MESSAGE_START / CONTENT / END, RUN_FINISHED). No sessions, no
validation beyond reading the prompt, no hooks: what is left is the HTTP stack, JSON
and asyncio, the cost any served agent pays on this machine.

Usage: python serve_bare.py --port PORT; BENCH_BASE_URL names the model server.
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from typing import Any

import aiohttp
from add_tools import add
from aiohttp import web

SYSTEM = "You add numbers with the add tool."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]
MAX_STEPS = 50


def _event(kind: str, **fields: Any) -> bytes:
    return (
        b"data: " + json.dumps({"type": kind, **fields}, separators=(",", ":")).encode() + b"\n\n"
    )


async def _model(
    client: aiohttp.ClientSession, url: str, messages: list[Any]
) -> tuple[str, dict[int, dict[str, str]]]:
    """One streamed chat completion: its text and its tool calls by index."""
    body = {"model": "bench-model", "messages": messages, "tools": TOOLS, "stream": True}
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    async with client.post(url, json=body, headers={"authorization": "Bearer x"}) as reply:
        reply.raise_for_status()
        async for raw in reply.content:
            line = raw.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices") or ():
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    text.append(delta["content"])
                for piece in delta.get("tool_calls") or ():
                    call = calls.setdefault(piece["index"], {"id": "", "name": "", "arguments": ""})
                    call["id"] = piece.get("id") or call["id"]
                    function = piece.get("function") or {}
                    call["name"] = function.get("name") or call["name"]
                    call["arguments"] += function.get("arguments") or ""
    return "".join(text), calls


async def agui(request: web.Request) -> web.StreamResponse:
    given = await request.json()
    thread, run = given.get("threadId", ""), given.get("runId", "")
    prompt = next(m["content"] for m in reversed(given["messages"]) if m.get("role") == "user")
    client: aiohttp.ClientSession = request.app["client"]
    url: str = request.app["url"]
    response = web.StreamResponse(
        headers={"content-type": "text/event-stream", "cache-control": "no-cache"}
    )
    await response.prepare(request)
    await response.write(_event("RUN_STARTED", threadId=thread, runId=run))
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": prompt},
    ]
    text = ""
    for _ in range(MAX_STEPS):
        text, calls = await _model(client, url, messages)
        if not calls:
            break
        ordered = [calls[i] for i in sorted(calls)]
        messages.append(
            {
                "role": "assistant",
                "content": text or None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in ordered
                ],
            }
        )
        for call in ordered:
            await response.write(
                _event("TOOL_CALL_START", toolCallId=call["id"], toolCallName=call["name"])
                + _event("TOOL_CALL_ARGS", toolCallId=call["id"], delta=call["arguments"])
                + _event("TOOL_CALL_END", toolCallId=call["id"])
            )
            result = str(add(**json.loads(call["arguments"])))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            await response.write(
                _event(
                    "TOOL_CALL_RESULT",
                    messageId=uuid.uuid4().hex,
                    toolCallId=call["id"],
                    content=result,
                    role="tool",
                )
            )
    message = uuid.uuid4().hex
    await response.write(
        _event("TEXT_MESSAGE_START", messageId=message, role="assistant")
        + _event("TEXT_MESSAGE_CONTENT", messageId=message, delta=text)
        + _event("TEXT_MESSAGE_END", messageId=message)
        + _event("RUN_FINISHED", threadId=thread, runId=run, result=text)
    )
    await response.write_eof()
    return response


async def _client(app: web.Application) -> Any:
    app["client"] = aiohttp.ClientSession()
    yield
    await app["client"].close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = web.Application()
    app["url"] = os.environ["BENCH_BASE_URL"].rstrip("/") + "/chat/completions"
    app.cleanup_ctx.append(_client)
    app.router.add_post("/agui", agui)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None, backlog=4096)


if __name__ == "__main__":
    main()

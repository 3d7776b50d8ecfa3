"""Cassettes: the model replies of one case, with the requests that got them.

A cassette is a JSON-lines file in the session format the replay provider reads (each
reply is a ``message`` entry holding an assistant message, so ``agent --replay FILE``
replays it too); before each reply, a ``harnessc.request`` entry holds what the agent
asked: system prompt, tools, messages (the case's workspace path written as
``$WORKSPACE``). A replayed request that differs from its recorded one makes the
cassette stale: the run stops there, naming the request and what changed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessc.runtime.core.messages import (
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
    message_from_dict,
)
from harnessc.runtime.providers.base import AssistantMessageEvent, Provider, ProviderRequest

__all__ = ["Cassette", "CassetteProvider", "RecordedExchange", "request_digest"]

VERSION = 1
_REQUEST = "harnessc.request"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.text if isinstance(c, TextContent) else "[image]" for c in content)


def request_digest(request: ProviderRequest, workspace: str) -> dict[str, Any]:
    """What a request asks, as plain JSON, without what changes from run to run."""
    messages: list[dict[str, Any]] = []
    for message in request.context.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "text": _text(message.content)})
        elif isinstance(message, AssistantMessage):
            calls = [[c.name, c.arguments] for c in message.tool_calls]
            messages.append({"role": "assistant", "text": message.text, "tool_calls": calls})
        elif isinstance(message, ToolResultMessage):
            messages.append(
                {
                    "role": "tool",
                    "tool": message.tool_name,
                    "text": _text(message.content),
                    "is_error": message.is_error,
                }
            )
        else:
            messages.append({"role": getattr(message, "role", "custom")})
    context = request.context
    digest: dict[str, Any] = {
        "system_prompt": context.system_prompt,
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in context.tools
        ],
        "messages": messages,
    }
    if context.tool_choice is not None:
        digest["tool_choice"] = context.tool_choice
    if context.response_schema is not None:
        digest["response_schema"] = context.response_schema.schema
    text = json.dumps(digest, ensure_ascii=False, sort_keys=True)
    if workspace:
        text = text.replace(json.dumps(workspace)[1:-1], "$WORKSPACE")
    result: dict[str, Any] = json.loads(text)
    return result


def first_difference(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """Which part of a request changed, in words."""
    if recorded.get("system_prompt") != now.get("system_prompt"):
        return "the system prompt changed"
    old_tools = {t.get("name"): t for t in recorded.get("tools", [])}
    new_tools = {t.get("name"): t for t in now.get("tools", [])}
    if old_tools != new_tools:
        added = sorted(set(new_tools) - set(old_tools))
        removed = sorted(set(old_tools) - set(new_tools))
        changed = sorted(n for n in set(old_tools) & set(new_tools) if old_tools[n] != new_tools[n])
        parts = [
            f"{label}: {', '.join(str(n) for n in names)}"
            for label, names in (("added", added), ("removed", removed), ("changed", changed))
            if names
        ]
        return "the tools changed (" + "; ".join(parts) + ")"
    old, new = recorded.get("messages", []), now.get("messages", [])
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return f"message #{index + 1} ({b.get('role')}) differs: {_short(b)}"
    if len(old) != len(new):
        return f"the request has {len(new)} messages, the recording {len(old)}"
    for key in ("tool_choice", "response_schema"):
        if recorded.get(key) != now.get(key):
            return f"the {key.replace('_', ' ')} changed"
    return "the request changed"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(slots=True)
class RecordedExchange:
    request: dict[str, Any]
    reply: AssistantMessage


@dataclass(slots=True)
class Cassette:
    """The exchanges of one case, in order."""

    exchanges: list[RecordedExchange] = field(default_factory=list)

    @staticmethod
    def read(path: Path) -> Cassette:
        """The cassette at ``path``; OSError when missing, ValueError when unreadable."""
        exchanges: list[RecordedExchange] = []
        request: dict[str, Any] | None = None
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    raise ValueError(f"{path}:{number}: not JSON") from None
                kind = entry.get("type") if isinstance(entry, dict) else None
                if kind == _REQUEST:
                    request = entry.get("request") or {}
                elif kind == "message":
                    raw = entry.get("message")
                    if not isinstance(raw, dict) or raw.get("role") != "assistant":
                        continue
                    message = message_from_dict(raw)
                    assert isinstance(message, AssistantMessage)
                    exchanges.append(RecordedExchange(request or {}, message))
                    request = None
        return Cassette(exchanges)

    def write(self, path: Path, *, agent: str, case: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [{"type": "harnessc.cassette", "version": VERSION, "agent": agent, "case": case}]
        for index, exchange in enumerate(self.exchanges, 1):
            lines.append({"type": _REQUEST, "index": index, "request": exchange.request})
            lines.append({"type": "message", "message": exchange.reply.to_dict()})
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


class CassetteProvider:
    """Replays a cassette (checking each request against its recording), or records
    the replies of ``live`` (a real provider per wire API) into a new one."""

    def __init__(
        self,
        cassette: Cassette,
        workspace: str,
        *,
        live: dict[str, Provider] | None = None,
        source: str = "the cassette",
    ) -> None:
        self.cassette = cassette
        self.workspace = workspace
        self.live = live
        self.source = source
        self.served = 0
        self.stale: str | None = None
        self.recorded = Cassette()

    def stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        return self._stream(request)

    async def _stream(self, request: ProviderRequest) -> AsyncIterator[AssistantMessageEvent]:
        digest = request_digest(request, self.workspace)
        number = self.served + 1
        if self.live is not None:
            provider = self.live[request.model.api]
            final: AssistantMessage | None = None
            async for event in provider.stream(request):
                if event.type in ("done", "error"):
                    final = event.partial
                yield event
            if final is not None:
                self.recorded.exchanges.append(RecordedExchange(digest, final))
            self.served = number
            return
        problem: str | None = None
        if self.served >= len(self.cassette.exchanges):
            problem = (
                f"request #{number} has no recorded reply ({self.source} holds "
                f"{len(self.cassette.exchanges)})"
            )
        else:
            recorded = self.cassette.exchanges[self.served].request
            if recorded and recorded != digest:
                problem = f"request #{number} differs: {first_difference(recorded, digest)}"
        if problem is not None:
            self.stale = problem
            failed = AssistantMessage(
                api="replay",
                provider="replay",
                model=request.model.id,
                stop_reason="error",
                error_message=f"stale cassette: {problem}",
            )
            yield AssistantMessageEvent("start", failed)
            yield AssistantMessageEvent("error", failed)
            return
        reply = message_from_dict(self.cassette.exchanges[self.served].reply.to_dict())
        assert isinstance(reply, AssistantMessage)
        self.served = number
        yield AssistantMessageEvent("start", reply)
        yield AssistantMessageEvent("error" if reply.stop_reason == "error" else "done", reply)

"""OpenAI-compatible chat completions: the agent runs on the conversation's last user
message (earlier messages are its history in a new session; ``X-Session-Id`` or a stored
session id in ``user`` continues that session instead), and the reply is its final text.

Streamed, each assistant message's text is sent as ``chat.completion.chunk`` deltas once
the model finished that message without calling a tool, so the content is exactly the
final text. A run that pauses (an external tool, an approval) answers with a note saying
where to continue it; the run id is in ``X-Run-Id`` either way.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harnessc.runtime.core.messages import AssistantMessage, Message, TextContent, UserMessage
from harnessc.runtime.serve.bodies import ApiError, optional, read_json, required
from harnessc.runtime.serve.errors import guarded, serve_state
from harnessc.runtime.serve.harnesses import UnknownSession
from harnessc.runtime.serve.native import check_prompt
from harnessc.runtime.serve.runs import PAUSED, Run, follow
from harnessc.runtime.serve.state import ServeState

__all__ = ["openai_routes"]


@guarded
async def models(request: Request) -> Response:
    name = serve_state(request).source.agent_name
    return JSONResponse(
        {
            "object": "list",
            "data": [{"id": name, "object": "model", "created": 0, "owned_by": "harnessc"}],
        }
    )


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise ApiError(
                        400,
                        f"{where}: a text part needs 'text' as a string",
                        param=f"{where}.content",
                        code="invalid_type",
                    )
                parts.append(text)
        return "".join(parts)
    raise ApiError(
        400,
        f"{where}: 'content' must be a string or a list of parts",
        param=f"{where}.content",
        code="invalid_type",
    )


def conversation(messages: list[Any]) -> tuple[str, list[Message]]:
    """The last user message's text, and the user / assistant messages before it."""
    if not messages:
        raise ApiError(400, "'messages' is empty", param="messages", code="empty_array")
    history: list[Message] = []
    last_user = -1
    for index, item in enumerate(messages):
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            raise ApiError(
                400,
                f"messages[{index}] must be an object with a 'role'",
                param=f"messages[{index}]",
                code="invalid_type",
            )
        if item["role"] == "user":
            last_user = index
    if last_user < 0:
        raise ApiError(
            400, "'messages' has no user message", param="messages", code="invalid_value"
        )
    for index, item in enumerate(messages[:last_user]):
        text = _text(item.get("content"), f"messages[{index}]")
        if item["role"] == "user":
            history.append(UserMessage(content=text))
        elif item["role"] == "assistant" and text:
            history.append(AssistantMessage(content=[TextContent(text)]))
    prompt = _text(messages[last_user].get("content"), f"messages[{last_user}]")
    return prompt, history


def _session(state: ServeState, request: Request, body: dict[str, Any]) -> str | None:
    header = request.headers.get("x-session-id")
    if header:
        return header
    user = optional(body, "user", str)
    if not state.runs.continues_sessions:
        return None  # the user field names the end user, not a session
    if user and (user in state.runs.by_session or _stored(state, user)):
        return user
    return None


def _stored(state: ServeState, session_id: str) -> bool:
    try:
        state.source.open_session(session_id).close()
    except Exception:
        return False
    return True


@guarded
async def chat_completions(request: Request) -> Response:
    state = serve_state(request)
    body = await read_json(request, state.config)
    model = required(body, "model", str)
    if model != state.source.agent_name:
        raise ApiError(
            404,
            f"no model {model!r}: this server serves {state.source.agent_name!r}",
            "model_not_found",
            param="model",
        )
    prompt, history = conversation(required(body, "messages", list))
    try:
        check_prompt(state, prompt)
    except ApiError as exc:  # the prompt is the last user message
        exc.param = exc.param or "messages"
        raise
    stream = optional(body, "stream", bool) or False
    session_id = _session(state, request, body)
    if (
        session_id is not None
        and (session_id not in state.runs.by_session)
        and not state.source.stored
    ):
        raise UnknownSession(session_id)
    run = await state.runs.start(prompt, session_id, context=history if session_id is None else ())
    headers = {"X-Run-Id": run.id}
    if run.session_id:  # a durable run has none until a worker begins it
        headers["X-Session-Id"] = run.session_id
    completion_id = f"chatcmpl-{run.id}"
    if stream:
        return StreamingResponse(
            _chunks(run, completion_id, model),
            media_type="text/event-stream",
            headers={**headers, "Cache-Control": "no-store"},
        )
    await run.finished()
    if run.session_id:
        headers["X-Session-Id"] = run.session_id
    if run.status == "error":
        raise ApiError(502, f"the agent failed: {run.reason}", "agent_error")
    return JSONResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": _reply(run)},
                    "finish_reason": "stop",
                }
            ],
        },
        headers=headers,
    )


def _reply(run: Run) -> str:
    if run.status in PAUSED:
        return f"[paused: {run.reason}; continue with POST /v1/runs/{run.id}/resume]"
    if run.status == "aborted":
        return run.text or f"[aborted: {run.reason}]"
    return run.text


def _chunk(completion_id: str, model: str, delta: dict[str, Any], finish: str | None) -> str:
    data = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _chunks(run: Run, completion_id: str, model: str) -> AsyncIterator[str]:
    yield _chunk(completion_id, model, {"role": "assistant", "content": ""}, None)
    held: list[str] = []  # the text of the message being written
    sent = ""
    async for item in follow(run):
        if item is None:
            yield ": keep-alive\n\n"
            continue
        event = json.loads(item[1])
        kind = event.get("type")
        if kind == "message_update" and event.get("delta_type") == "text_delta":
            held.append(event.get("delta") or "")
        elif kind == "message_end":
            message = event.get("message") or {}
            parts = message.get("content") or []
            if message.get("role") == "assistant" and not _calls_tools(parts):
                # a model call recorded whole (a durable run) streamed no deltas
                pieces = held or [t for t in [_message_text(parts)] if t]
                for piece in pieces:
                    yield _chunk(completion_id, model, {"content": piece}, None)
                    sent += piece
            held = []
    if run.status == "error":
        error = ApiError(502, f"the agent failed: {run.reason}", "agent_error")
        yield f"data: {json.dumps(error.body())}\n\n"
    else:
        tail = _reply(run)
        if tail != sent:  # a pause or an abort: say so after what was sent
            rest = tail[len(sent) :] if tail.startswith(sent) else f"\n{tail}"
            yield _chunk(completion_id, model, {"content": rest}, None)
        yield _chunk(completion_id, model, {}, "stop")
    yield "data: [DONE]\n\n"


def _calls_tools(parts: list[Any]) -> bool:
    return any(isinstance(p, dict) and p.get("type") == "toolCall" for p in parts)


def _message_text(parts: list[Any]) -> str:
    return "".join(
        str(p.get("text") or "") for p in parts if isinstance(p, dict) and p.get("type") == "text"
    )


def openai_routes() -> list[Route]:
    return [
        Route("/v1/models", models, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
    ]

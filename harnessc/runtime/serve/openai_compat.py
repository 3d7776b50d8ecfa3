"""OpenAI-compatible chat completions: the agent runs on the conversation's last user
message (earlier messages are its history in a new session; ``X-Session-Id`` or a stored
session id in ``user`` continues that session instead), and the reply is its result.

The reply's content is the run's final text, or for an agent with ``output:`` its typed
value as JSON text (what a ``response_format: json_schema`` client parses; the agent's
own schema applies, a request's ``response_format`` is not used). ``usage`` counts the
whole run (every model call: ``prompt_tokens`` with cached ones, ``completion_tokens``,
``prompt_tokens_details.cached_tokens`` / ``cache_write_tokens`` and ``cost`` in
dollars, as OpenRouter reports them). Streamed, the content comes once the run ends or
pauses (a message the model finished without a tool call may not be its last: a hook
can make it go on), in the pieces the model wrote it; with
``stream_options.include_usage`` a last chunk with no choices carries the usage. A run
that pauses (an external tool, an approval) answers with a note saying where to
continue it (for held calls, the approval body with each call's fingerprint: it answers
the calls as shown in the note); the run id is in ``X-Run-Id`` either way.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harnessc.runtime.core.messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    UserMessage,
)
from harnessc.runtime.runs.control import RunControl, RunRequest
from harnessc.runtime.runs.errors import UnknownSession
from harnessc.runtime.runs.run import Run
from harnessc.runtime.runs.usage import RunUsage
from harnessc.runtime.serve.bodies import ApiError, optional, read_json, required
from harnessc.runtime.serve.errors import guarded, serve_state
from harnessc.runtime.serve.images import MAX_IMAGES, data_url_image
from harnessc.runtime.serve.native import check_prompt
from harnessc.runtime.serve.state import ServeState
from harnessc.runtime.serve.streams import EventStream

__all__ = ["openai_routes", "openai_usage", "reply_text"]


@guarded
async def models(request: Request) -> Response:
    name = serve_state(request).source.agent_name
    return JSONResponse(
        {
            "object": "list",
            "data": [{"id": name, "object": "model", "created": 0, "owned_by": "harnessc"}],
        }
    )


def _text(content: Any, where: str, images: list[ImageContent] | None = None) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = []
        for index, part in enumerate(content):
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise ApiError(
                        400,
                        f"{where}: a text part needs 'text' as a string",
                        param=f"{where}.content",
                        code="invalid_type",
                    )
                parts.append(text)
            elif part.get("type") == "image_url" and images is not None:
                url = part.get("image_url")
                url = url.get("url") if isinstance(url, dict) else url
                if len(images) >= MAX_IMAGES:
                    raise ApiError(
                        400, f"{where}: more than {MAX_IMAGES} images", param=f"{where}.content"
                    )
                images.append(data_url_image(url, f"{where}.content[{index}]"))
        return "".join(parts)
    raise ApiError(
        400,
        f"{where}: 'content' must be a string or a list of parts",
        param=f"{where}.content",
        code="invalid_type",
    )


def conversation(messages: list[Any]) -> tuple[str, list[Message], list[ImageContent]]:
    """The last user message's text and images, and the user / assistant messages
    before it."""
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
    images: list[ImageContent] = []
    prompt = _text(messages[last_user].get("content"), f"messages[{last_user}]", images)
    return prompt, history, images


async def _session(state: ServeState, request: Request, body: dict[str, Any]) -> str | None:
    header = request.headers.get("x-session-id")
    if header:
        return header
    user = optional(body, "user", str)
    if not user or not state.runs.continues_sessions:
        return None  # the user field names the end user, not a session
    if state.runs.latest(user) is not None:
        return user
    import asyncio

    return user if await asyncio.to_thread(state.source.has_session, user) else None


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
    prompt, history, images = conversation(required(body, "messages", list))
    try:
        check_prompt(state, prompt)
    except ApiError as exc:  # the prompt is the last user message
        exc.param = exc.param or "messages"
        raise
    stream = optional(body, "stream", bool) or False
    options = optional(body, "stream_options", dict) or {}
    include_usage = options.get("include_usage") is True
    session_id = await _session(state, request, body)
    if session_id is not None and state.runs.latest(session_id) is None and not state.source.stored:
        raise UnknownSession(session_id)
    run = await state.runs.start(
        RunRequest(
            prompt,
            images=images,
            session=session_id,
            context=history if session_id is None else (),
        )
    )
    headers = {"X-Run-Id": run.id}
    if run.session_id:  # a durable run in memory has none until a worker begins it
        headers["X-Session-Id"] = run.session_id
    completion_id = f"chatcmpl-{run.id}"
    if stream:
        return EventStream(
            _chunks(state.runs, run, completion_id, model, include_usage),
            media_type="text/event-stream",
            headers={**headers, "Cache-Control": "no-store"},
        )
    await state.runs.settled(run)
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
                    "message": {"role": "assistant", "content": reply_text(run)},
                    "finish_reason": "stop",
                }
            ],
            "usage": openai_usage(run.usage),
        },
        headers=headers,
    )


def reply_text(run: Run) -> str:
    """The content of the reply: the typed value as JSON, the final text, or a note
    saying where a paused run goes on."""
    if run.paused:
        pause = run.pause
        held = pause.held if pause is not None and pause.kind == "approval" else []
        if not held:  # a login or a question is answered by its payload, not an approval
            return f"[paused: {run.reason}; continue with POST /v1/runs/{run.id}/resume]"
        # the approval that answers the calls as they are shown here, and only them
        approvals = {c.id: {"decision": "allow", "fingerprint": c.fingerprint} for c in held}
        body = json.dumps({"approvals": approvals})
        return f"[paused: {run.reason}; continue with POST /v1/runs/{run.id}/resume {body}]"
    if run.status == "aborted":
        return run.text or f"[aborted: {run.reason}]"
    if run.output is not None:
        return json.dumps(run.output, ensure_ascii=False)
    return run.text


def openai_usage(usage: RunUsage) -> dict[str, Any]:
    """A run's usage as OpenAI's ``usage`` object (with OpenRouter's ``cost`` and cache
    write count)."""
    prompt = usage.input + usage.cache_read + usage.cache_write
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output,
        "total_tokens": prompt + usage.output,
        "prompt_tokens_details": {
            "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_write,
        },
        "cost": round(usage.cost, 10),
    }


def _chunk(
    completion_id: str,
    model: str,
    delta: dict[str, Any] | None,
    finish: str | None,
    usage: dict[str, Any] | None = None,
    with_usage: bool = False,
) -> str:
    data: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if with_usage:  # OpenAI: every chunk has the field, null but on the last one
        data["usage"] = usage
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


async def _chunks(
    runs: RunControl, run: Run, completion_id: str, model: str, include_usage: bool
) -> AsyncIterator[str]:
    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> str:
        return _chunk(completion_id, model, delta, finish, None, include_usage)

    yield chunk({"role": "assistant", "content": ""})
    held: list[str] = []  # the text of the message being written
    final: list[str] = []  # the pieces of the latest message the model ended without a call
    async for item in runs.events(run):
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
                final = [p for p in held if p] or [t for t in [_message_text(parts)] if t]
            held = []
    if run.status == "error":
        error = ApiError(502, f"the agent failed: {run.reason}", "agent_error")
        yield f"data: {json.dumps(error.body())}\n\n"
    else:
        reply = reply_text(run)
        pieces = final if "".join(final) == reply else [reply]
        for piece in pieces:
            if piece:
                yield chunk({"content": piece})
        yield chunk({}, "stop")
        if include_usage:
            yield _chunk(completion_id, model, None, None, openai_usage(run.usage), True)
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

"""AG-UI: ``POST /agui`` takes a RunAgentInput and streams AG-UI events, encoded with
ag-ui-protocol's own encoder.

threadId names the session (a stored session id, or a thread this server started; with
sessions in memory too: the thread's harness is kept for its next input); the front
end's tools become external tools of the run. A call of one is a pending tool call even
under ``default: ask`` (the front end runs it, so its answer is its approval): the run
ends with RUN_FINISHED listing the pending call ids, and the next input on the thread
answers it with tool messages. Any other pause ends the run with an interrupt outcome:
a permission ask an interrupt per held call (id = the call id; a ``resume`` entry
``resolved`` runs it, ``{"always": true}`` as its payload allows the same call for the
rest of the session, ``cancelled`` refuses it; the interrupt's ``metadata`` holds the
call's arguments and ``fingerprint``, and a payload carrying that fingerprint answers the
call only while its arguments are still those); a budget pause or a hook's one interrupt
(id = the run id; ``resolved`` goes on, with ``{"budget": {"turns": 20}}`` as payload
raising limits; ``cancelled`` aborts the run); an MCP login or an MCP server's question
one interrupt (id = the call id, the URL or the question in its metadata): ``resolved``
with ``{"redirect": "..."}``, or with the form's fields (``{"action": "decline"}`` for
a no), ``cancelled`` cancels the question.

RUN_FINISHED's ``result`` is the run's typed value (an agent with ``output:``), else
its final text; its ``usage`` counts the whole run (``metadata.cost_usd``: its cost).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from harnessc.runtime.core.messages import AssistantMessage, ImageContent, TextContent, UserMessage
from harnessc.runtime.runs.answers import MCP_KINDS, Answer, Decision
from harnessc.runtime.runs.control import RunControl, RunRequest
from harnessc.runtime.runs.run import Run, event_type
from harnessc.runtime.serve.bodies import ApiError, read_json
from harnessc.runtime.serve.errors import guarded, serve_state
from harnessc.runtime.serve.images import MAX_IMAGES, image
from harnessc.runtime.serve.native import check_prompt
from harnessc.runtime.serve.state import ServeState
from harnessc.runtime.serve.streams import EventStream
from harnessc.runtime.tools.base import ExternalTool

__all__ = ["agui_routes"]


def agui_routes() -> list[Route]:
    return [Route("/agui", run_agent, methods=["POST"])]


@guarded
async def run_agent(request: Request) -> Response:
    from ag_ui.core import RunAgentInput
    from ag_ui.encoder import EventEncoder
    from pydantic import ValidationError

    state = serve_state(request)
    body = await read_json(request, state.config)
    try:
        given = RunAgentInput.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]
        )
        raise ApiError(400, f"not a RunAgentInput: {problems}") from None
    run, first = await _start(state, given)
    encoder = EventEncoder(accept=request.headers.get("accept", ""))
    return EventStream(
        _stream(state.runs, run, first, given, encoder), media_type=encoder.get_content_type()
    )


async def _start(state: ServeState, given: Any) -> tuple[Run, int]:
    """The run this input starts or answers, and the number of its first event."""
    runs = state.runs
    session_id: str | None = None
    latest: Run | None = None
    if runs.continues_sessions:
        session_id = state.threads.get(given.thread_id)
        if session_id is None and (
            runs.latest(given.thread_id) is not None
            or (
                state.source.stored  # sessions in memory: no store to look in
                and await asyncio.to_thread(state.source.has_session, given.thread_id)
            )
        ):
            session_id = given.thread_id
        latest = runs.latest(session_id) if session_id else None
        if session_id is not None and latest is None and not state.source.stored:
            session_id = None  # a thread in memory forgotten past kept_runs: it starts again
    elif given.thread_id in state.thread_runs:  # a durable run in memory: its latest run
        latest = await runs.get(state.thread_runs[given.thread_id])
    if latest is not None:  # as it stands now (a durable run's is in its database)
        latest = await runs.get(latest.id)
    if latest is not None and latest.paused:
        first = len(latest.events)
        await _answer(runs, latest, given)
        return latest, first
    prompt, history, images = _conversation(given)
    check_prompt(state, prompt)
    tools = [ExternalTool(t.name, t.description, dict(t.parameters or {})) for t in given.tools]
    run = await runs.start(
        RunRequest(
            prompt,
            images=images,
            session=session_id,
            context=history if session_id is None else (),
            tools=tools,
        )
    )
    if run.session_id:
        state.threads[given.thread_id] = run.session_id
    state.thread_runs[given.thread_id] = run.id
    return run, 0


def _mcp_interrupts(core: Any, run: Run) -> list[Any]:
    """The interrupt of an MCP login or question (id = the call id; its payload in the
    metadata, what the answer holds in ``response_schema``); none for other pauses."""
    pause = run.pause
    if pause is None or pause.kind not in MCP_KINDS:
        return []
    call_id = str(pause.payload.get("call_id") or "")
    if pause.kind == "mcp_login":
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {"redirect": {"type": "string"}},
            "required": ["redirect"],
        }
    else:
        content = pause.payload.get("schema") or {"type": "object"}
        schema = {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["accept", "decline", "cancel"]},
                "content": content,
            },
            "required": ["action"],
        }
    from harnessc.runtime.mcp.pausing_user import is_start_key

    return [
        core.Interrupt(
            id=call_id,
            reason=pause.kind,
            message=run.reason,
            tool_call_id=None if is_start_key(call_id) else call_id,  # a start: no call
            response_schema=schema,
            metadata=dict(pause.payload),
        )
    ]


def _mcp_answer(pause: Any, entry: Any) -> Answer:
    """A ``resume`` entry's answer to an MCP pause: ``resolved`` with the payload its
    interrupt's ``response_schema`` names; ``cancelled`` cancels a question (a login:
    the run pauses again)."""
    payload = entry.payload if isinstance(entry.payload, dict) else {}
    if entry.status != "resolved":
        return Answer(payload={"action": "cancel"} if pause.kind == "mcp_elicitation" else {})
    if pause.kind == "mcp_elicitation" and "action" not in payload:
        payload = {"action": "accept", "content": payload}  # the form's fields alone
    return Answer(payload={**payload, "call_id": entry.interrupt_id})


async def _answer(runs: RunControl, run: Run, given: Any) -> None:
    pause = run.pause
    assert pause is not None
    entries = {entry.interrupt_id: entry for entry in (given.resume or [])}
    if pause.kind in MCP_KINDS:
        entry = entries.get(str(pause.payload.get("call_id") or ""))
        if entry is None:
            raise ApiError(
                409,
                f"the thread's run is paused ({run.reason}): answer its interrupt with resume",
                "conflict",
            )
        await runs.answer(run, _mcp_answer(pause, entry))
        return
    if pause.awaiting_tool:
        pending = {c.id for c in pause.calls}
        results = {
            m.tool_call_id: (
                {"error": m.error} if getattr(m, "error", None) else _content(m.content)
            )
            for m in given.messages
            if m.role == "tool" and m.tool_call_id in pending
        }
        await runs.answer(run, Answer(results=results))
        return
    if pause.held:
        approvals: dict[str, Decision] = {}
        fingerprints: dict[str, str] = {}
        for call_id, entry in entries.items():
            shown = entry.payload.get("fingerprint") if isinstance(entry.payload, dict) else None
            if isinstance(shown, str):
                fingerprints[call_id] = shown
            if entry.status != "resolved":
                approvals[call_id] = "deny"
            elif isinstance(entry.payload, dict) and entry.payload.get("always") is True:
                approvals[call_id] = "always"
            else:
                approvals[call_id] = "allow"
        if not approvals:
            raise ApiError(
                409,
                f"the thread's run is paused ({run.reason}): answer its interrupts with resume",
                "conflict",
            )
        await runs.answer(run, Answer(approvals=approvals, fingerprints=fingerprints))
        return
    entry = entries.get(run.id)
    if entry is None:
        raise ApiError(
            409,
            f"the thread's run is paused ({run.reason}): answer its interrupt {run.id} with resume",
            "conflict",
        )
    if entry.status == "cancelled":
        await runs.abort(run, "cancelled over AG-UI")
        return
    payload = entry.payload if isinstance(entry.payload, dict) else {}
    budget = payload.get("budget") if isinstance(payload.get("budget"), dict) else {}
    await runs.answer(run, Answer(budget=dict(budget or {})))


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, default=str)


def _conversation(given: Any) -> tuple[str, list[Any], list[ImageContent]]:
    messages = list(given.messages)
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    if last_user < 0:
        raise ApiError(400, "the input has no user message")
    history: list[Any] = []
    for message in messages[:last_user]:
        text = _text(message.content)
        if message.role == "user":
            history.append(UserMessage(content=text))
        elif message.role == "assistant" and text:
            history.append(AssistantMessage(content=[TextContent(text)]))
    content = messages[last_user].content
    prompt = _text(content)
    images = _images(content)
    if given.context:
        lines = "\n".join(f"- {c.description}: {c.value}" for c in given.context)
        prompt = f"{prompt}\n\nContext from the application:\n{lines}"
    return prompt, history, images


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(getattr(p, "text", "") or "" for p in content)
    return ""


def _images(content: Any) -> list[ImageContent]:
    """The images of a user message's parts (``image`` with a ``data`` source)."""
    if not isinstance(content, list):
        return []
    out: list[ImageContent] = []
    for index, part in enumerate(content):
        if getattr(part, "type", None) != "image":
            continue
        source = getattr(part, "source", None)
        where = f"the user message's part {index}"
        if getattr(source, "type", None) != "data":
            raise ApiError(
                400, f"{where}: only data sources are taken (this server fetches no URL)"
            )
        if len(out) >= MAX_IMAGES:
            raise ApiError(400, f"the user message holds more than {MAX_IMAGES} images")
        out.append(image(getattr(source, "value", None), getattr(source, "mime_type", None), where))
    return out


async def _stream(
    runs: RunControl, run: Run, first: int, given: Any, encoder: Any
) -> AsyncIterator[str]:
    from ag_ui import core

    opening = _frame({"type": "RUN_STARTED", "threadId": given.thread_id, "runId": given.run_id})
    if given.state:
        opening += encoder.encode(core.StateSnapshotEvent(snapshot=given.state))
    yield opening
    translator = _Translator(run, core, encoder)
    # Events of this request only (a resumed run keeps its older ones). The events ready
    # together go out in one write: the AG-UI events of each are gathered until the last
    # event the run holds now (the next one is waited for), then sent; those of a run
    # that ended meanwhile go out with its last event (RUN_FINISHED or RUN_ERROR).
    ready: list[str] = []
    async for item in runs.events(run, first):
        if item is None:
            ready.append(": keep-alive\n\n")
        else:
            index, encoded = item
            translator.translate(encoded, index, ready)
            if index + 1 < len(run.events) or run.over:
                continue
        if ready:
            yield "".join(ready)
            ready.clear()
    translator.close(ready)
    ready.append(_last_event(core, run, given, encoder))
    yield "".join(ready)


# The AG-UI events a run sends most (its text, its tool calls, RUN_STARTED and a run's
# RUN_FINISHED) are written from dicts by msgspec, as ag-ui-protocol's own encoder
# writes its models: ``data: <compact JSON, camelCase keys, no null fields>``; the
# others (errors, interrupts, state, custom events) through its models and encoder.
_ENCODE = msgspec.json.Encoder().encode


def _frame(event: dict[str, Any]) -> str:
    """One AG-UI event as an SSE frame."""
    return f"data: {_ENCODE(event).decode()}\n\n"


def _last_event(core: Any, run: Run, given: Any, encoder: Any) -> str:
    """RUN_ERROR, or RUN_FINISHED with the run's result or its pause's interrupts."""
    if run.status == "error":
        return encoder.encode(core.RunErrorEvent(message=run.reason or "the run failed"))
    if run.status == "aborted":
        return encoder.encode(core.RunErrorEvent(message=run.reason or "aborted", code="aborted"))
    pause = run.pause if run.paused else None
    if pause is None:
        return _finished(run, given)
    usage = _usage(core, run)
    if not pause.awaiting_tool:
        interrupts = _mcp_interrupts(core, run) or [
            core.Interrupt(
                id=c.id,
                reason="permission",
                message=run.reason,
                tool_call_id=c.id,
                metadata={"tool": c.name, "arguments": c.arguments, "fingerprint": c.fingerprint},
            )
            for c in pause.held
        ]
        interrupts = interrupts or [
            core.Interrupt(id=run.id, reason=pause.kind, message=run.reason)
        ]
        return encoder.encode(
            core.RunFinishedEvent(
                thread_id=given.thread_id,
                run_id=given.run_id,
                outcome=core.RunFinishedInterruptOutcome(interrupts=interrupts),
                **usage,
            )
        )
    return encoder.encode(  # waiting for the front end's tool results
        core.RunFinishedEvent(
            thread_id=given.thread_id,
            run_id=given.run_id,
            outcome=core.RunFinishedSuccessOutcome(
                pending_tool_call_ids=[c.id for c in pause.calls]
            ),
            **usage,
        )
    )


def _finished(run: Run, given: Any) -> str:
    """RUN_FINISHED of a run that ended without a pause, as ``RunFinishedEvent`` with
    a success outcome writes it."""
    used = run.usage
    prompt = used.input + used.cache_read + used.cache_write
    event: dict[str, Any] = {
        "type": "RUN_FINISHED",
        "metadata": {"cost_usd": round(used.cost, 10)},
        "threadId": given.thread_id,
        "runId": given.run_id,
    }
    result = run.output if run.output is not None else run.text
    if run.status == "done" and result is not None:
        event["result"] = result
    event["outcome"] = {"type": "success"}
    event["usage"] = [
        {
            "inputTokens": prompt,
            "outputTokens": used.output,
            "totalTokens": prompt + used.output,
            "cachedInputTokens": used.cache_read,
            "cacheWriteInputTokens": used.cache_write,
        }
    ]
    return _frame(event)


def _usage(core: Any, run: Run) -> dict[str, Any]:
    """RUN_FINISHED's usage (the whole run: input counts cached tokens, as OpenAI's) and
    its cost in the metadata."""
    from ag_ui._generated.models import TokenUsage

    used = run.usage
    prompt = used.input + used.cache_read + used.cache_write
    return {
        "usage": [
            TokenUsage(
                input_tokens=prompt,
                output_tokens=used.output,
                total_tokens=prompt + used.output,
                cached_input_tokens=used.cache_read,
                cache_write_input_tokens=used.cache_write,
            )
        ],
        "metadata": {"cost_usd": round(used.cost, 10)},
    }


# The harness's events that become AG-UI events; the others (two in three of a tool
# step's events) are passed over without being decoded.
_TRANSLATED = frozenset(
    {"message_update", "message_end", "tool_execution_end", "handover_progress"}
)


class _Translator:
    """The harness's events (as ``--json`` encodes them) to AG-UI events, as SSE frames."""

    def __init__(self, run: Run, core: Any, encoder: Any) -> None:
        from msgspec.json import Decoder

        self.run = run
        self.core = core
        self.encoder = encoder
        self.open_text: str | None = None
        self.count = 0
        self.decode = Decoder().decode

    def _open(self, out: list[str]) -> str:
        self.count += 1
        message_id = self.open_text = f"{self.run.id}-m{self.count}"
        out.append(
            _frame({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"})
        )
        return message_id

    def translate(self, encoded: str, index: int, out: list[str]) -> None:
        """Append the AG-UI events of one encoded event to ``out``."""
        kind = event_type(encoded)
        if kind is not None and kind not in _TRANSLATED:
            return
        event = self.decode(encoded)
        kind = event.get("type")
        if kind == "message_update" and event.get("delta_type") == "text_delta":
            delta = event.get("delta") or ""
            if not delta:
                return
            message_id = self.open_text if self.open_text is not None else self._open(out)
            out.append(
                _frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta})
            )
        elif kind == "message_end" and (event.get("message") or {}).get("role") == "assistant":
            parts = event["message"].get("content", [])
            text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
            if self.open_text is None and text:  # recorded whole (a durable run): no deltas
                message_id = self._open(out)
                out.append(
                    _frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": text})
                )
            parent = self.open_text
            self.close(out)
            for part in parts:
                if part.get("type") != "toolCall":
                    continue
                call_id = part["id"]
                start: dict[str, Any] = {
                    "type": "TOOL_CALL_START",
                    "toolCallId": call_id,
                    "toolCallName": part["name"],
                }
                if parent is not None:
                    start["parentMessageId"] = parent
                out.append(_frame(start))
                arguments = json.dumps(part.get("arguments") or {})
                out.append(
                    _frame({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": arguments})
                )
                out.append(_frame({"type": "TOOL_CALL_END", "toolCallId": call_id}))
        elif kind == "tool_execution_end":
            result = event.get("result") or {}
            text = "".join(
                p.get("text", "") for p in result.get("content", []) if isinstance(p, dict)
            )
            out.append(
                _frame(
                    {
                        "type": "TOOL_CALL_RESULT",
                        "messageId": f"{self.run.id}-r{index}",
                        "toolCallId": str(event.get("tool_call_id", "")),
                        "content": text,
                        "role": "tool",
                    }
                )
            )
        elif kind == "handover_progress":  # a sub-agent's turn and tokens, as it works
            value = {k: v for k, v in event.items() if k not in ("type", "seq", "timestamp")}
            custom = self.core.CustomEvent(name="handover_progress", value=value)
            out.append(self.encoder.encode(custom))

    def close(self, out: list[str]) -> None:
        """Append the end of the open text message, if one is open, to ``out``."""
        if self.open_text is None:
            return
        message_id, self.open_text = self.open_text, None
        out.append(_frame({"type": "TEXT_MESSAGE_END", "messageId": message_id}))
